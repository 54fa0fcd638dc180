package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// durationValue is a flag that takes a duration either as Go writes it
// ("5s", "1m30s", "500ms") or as a whole number of milliseconds ("5000"),
// the unit of the config file.
type durationValue struct{ d *time.Duration }

// durationVar defines such a flag.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

func (v durationValue) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms > int64(time.Duration(1<<63-1)/time.Millisecond) || ms < -int64(time.Duration(1<<63-1)/time.Millisecond) {
			return fmt.Errorf("%s milliseconds is too long", s)
		}
		*v.d = time.Duration(ms) * time.Millisecond
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 5s, 1m30s or 500ms, or a number of milliseconds")
	}
	*v.d = d
	return nil
}

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (durationValue) Type() string { return "duration" }

// wholeMillis returns d in milliseconds, or an error naming flag when d is
// not a whole number of them (the config holds milliseconds).
func wholeMillis(flag string, d time.Duration) (int64, error) {
	if d%time.Millisecond != 0 {
		return 0, usageError{fmt.Errorf("%s %s: give whole milliseconds (the config holds milliseconds)", flag, strings.TrimSpace(d.String()))}
	}
	return d.Milliseconds(), nil
}
