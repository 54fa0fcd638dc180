package main

import (
	"fmt"
	"time"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/wire"
)

// printCallNumbers writes, under the status table, each server's calls
// through serve and the audit log's state (status -v).
func (a *app) printCallNumbers(st wire.Status) {
	fmt.Fprintln(a.stdout)
	shown := false
	for _, s := range st.Servers {
		c := s.Calls
		if c == nil {
			continue
		}
		shown = true
		window := time.Duration(c.WindowSeconds) * time.Second
		fmt.Fprintf(a.stdout, "%s: %d calls, %d errors in the last %s (p50 %d ms, p95 %d ms); %d calls, %d errors since serve started\n",
			termtext.Neutralize(s.Name), c.Calls, c.Errors, window, c.P50MS, c.P95MS, c.Total, c.TotalErrors)
	}
	if !shown {
		fmt.Fprintln(a.stdout, "No calls through serve yet.")
	}
	if au := st.Audit; au != nil {
		switch {
		case au.Error != "":
			fmt.Fprintf(a.stdout, "Audit log %s: FAILING (%d records lost): %s\n", au.Path, au.Lost, termtext.Neutralize(au.Error))
		case au.Lost > 0:
			fmt.Fprintf(a.stdout, "Audit log %s: %d records written, %d lost (see `freecode mcp audit`)\n", au.Path, au.Written, au.Lost)
		default:
			fmt.Fprintf(a.stdout, "Audit log %s: %d records written by this serve\n", au.Path, au.Written)
		}
	}
}
