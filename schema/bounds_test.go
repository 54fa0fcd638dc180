package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationBounds(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	server := func(timeout string) string {
		return "{\"mcp\": {\"servers\": [\n  {\"name\": \"s\", \"type\": \"local\", \"command\": [\"x\"], \"timeout\": " + timeout + "}\n]}}"
	}
	poll := func(ms string) string { return "{\"mcp\": {\n  \"pollInterval\": " + ms + "}}" }
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"timeout at the bound", server(ms(MaxTimeout)), true},
		{"timeout past the bound", server(ms(MaxTimeout + time.Millisecond)), false},
		{"timeout that wraps nanoseconds", server("18446744073710"), false},
		{"timeout past int64", server("99999999999999999999"), false},
		{"timeout negative past int64", server("-99999999999999999999"), false},
		{"timeout with exponent", server("1e3"), false},
		{"timeout zero", server("0"), false},
		{"pollInterval at the lower bound", poll(ms(MinPollInterval)), true},
		{"pollInterval under the lower bound", poll(ms(MinPollInterval - time.Millisecond)), false},
		{"pollInterval at the upper bound", poll(ms(MaxPollInterval)), true},
		{"pollInterval past the upper bound", poll(ms(MaxPollInterval + time.Millisecond)), false},
		{"pollInterval past int64", poll("99999999999999999999"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := v.Parse("c.json", []byte(tc.doc), LoadOptions{})
			if tc.ok {
				require.NoError(t, err)
				if strings.Contains(tc.doc, "timeout") {
					require.Equal(t, MaxTimeout, cfg.MCP.Servers[0].Timeout)
				}
				return
			}
			var errs Errors
			require.ErrorAs(t, err, &errs)
			require.Len(t, errs, 1, "%v", errs)
			e := errs[0]
			key := `"pollInterval"`
			if strings.Contains(tc.doc, "timeout") {
				key = `"timeout"`
			}
			line2 := strings.Split(tc.doc, "\n")[1]
			require.Equal(t, 2, e.Line, "positioned at the field")
			require.Equal(t, strings.Index(line2, key)+1, e.Col)
			if strings.Contains(tc.doc, "timeout") {
				require.Equal(t, []string{"mcp", "servers", "0", "timeout"}, e.Path)
				require.Equal(t, "s", e.Server)
				require.Equal(t, "timeout must be a whole number of milliseconds from 1 to 3600000 (1 hour)", e.Msg)
			} else {
				require.Equal(t, []string{"mcp", "pollInterval"}, e.Path)
				require.Equal(t, "pollInterval must be a whole number of milliseconds from 100 to 86400000 (24 hours)", e.Msg)
			}
			for _, leak := range []string{"int64", "Go ", "unmarshal", "float"} {
				require.NotContains(t, e.Error(), leak)
			}
		})
	}
}

func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Millisecond, true},
		{"3600000", time.Hour, true},
		{"3600001", 0, false},
		{"0", 0, false},
		{"99999999999999999999", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
	} {
		d, ok := millis(json.Number(tc.in), time.Millisecond, MaxTimeout)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, d, tc.in)
	}
}

// foreignDoc is a valid config with a key of another tool holding n objects.
func foreignDoc(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"other\": [")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"k": %d, "v": "x"}`, i)
	}
	b.WriteString("],\n  \"mcp\": {\"servers\": [{\"name\": \"a\", \"type\": \"local\", \"command\": [\"x\"], \"comand\": 1}]}\n}\n")
	return []byte(b.String())
}

// A large key of another tool costs validation what it costs to parse it,
// no more: CUE never sees it. (Before, CUE's share grew with the square of
// its size: 26 s for the 80,000 objects of BenchmarkValidateForeignKey.)
func TestForeignKeyCostsOnlyParsing(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	small, large := foreignDoc(1000), foreignDoc(8000)
	_, errs := v.check("c.json", large)
	require.Len(t, errs, 1, "only the typo in mcp is an error")
	require.Equal(t, `unknown field "comand" (did you mean "command"?)`, errs[0].Msg)
	require.Equal(t, 3, errs[0].Line, "positions are those of the whole file")

	allocs := func(f func([]byte)) float64 {
		return testing.AllocsPerRun(3, func() { f(large) }) - testing.AllocsPerRun(3, func() { f(small) })
	}
	parse := allocs(func(d []byte) { _, _ = parseTree(d) })
	check := allocs(func(d []byte) { _, _ = v.check("c.json", d) })
	require.Less(t, check, 2*parse, "allocations for 7000 more foreign objects: parse %v, check %v", parse, check)
}

func BenchmarkValidateForeignKey(b *testing.B) {
	v, err := NewValidator()
	require.NoError(b, err)
	data := foreignDoc(80000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, errs := v.check("c.json", data); len(errs) != 1 {
			b.Fatal(errs)
		}
	}
}

// What CUE is given is bounded, so a hostile file inside our own keys
// stays cheap too.
func TestCheckedValuesBounded(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	args := strings.Repeat(`"x", `, MaxCheckedValues)
	doc := "{\"model\": 1,\n \"mcp\": {\"servers\": [{\"name\": \"a\", \"type\": \"local\", \"command\": [" + args + "\"x\"]}]}}"
	_, errs := v.check("c.json", []byte(doc))
	require.Len(t, errs, 1)
	require.Equal(t, []string{"mcp"}, errs[0].Path)
	require.Equal(t, 2, errs[0].Line)
	require.Contains(t, errs[0].Msg, fmt.Sprintf("more than %d values", MaxCheckedValues))

	// A real config is far below the bound.
	doc = "{\"mcp\": {\"servers\": [{\"name\": \"a\", \"type\": \"local\", \"command\": [" + strings.Repeat(`"x", `, 500) + "\"x\"]}]}}"
	_, errs = v.check("c.json", []byte(doc))
	require.Empty(t, errs)
}

// A decoding failure that validation should have prevented is still a
// positioned error in plain words.
func TestDecodeErrorIsPositioned(t *testing.T) {
	data := []byte("{\"mcp\": {\"servers\": [\n  {\"name\": \"s\", \"enabled\": \"yes\"}\n]}}")
	root, err := parseTree(data)
	require.NoError(t, err)
	n := root.member("mcp")
	var into struct {
		Servers []struct {
			Enabled bool `json:"enabled"`
		} `json:"servers"`
	}
	err = json.Unmarshal(data[n.start:n.end], &into)
	require.Error(t, err)
	e := decodeError("c.json", newLineIndex(data), root, n.start, err)
	require.Equal(t, `c.json:2:17: mcp.servers[0].enabled (server "s"): unexpected string here`, e.Error())
}
