package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLimitsDefaultsAndOverrides(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	data := []byte(`{"mcp": {
		"limits": {"maxMessageBytes": 33554432, "maxListPages": 50},
		"servers": [
			{"name": "plain", "type": "local", "command": ["x"]},
			{"name": "own", "type": "remote", "url": "https://h/mcp", "limits": {"maxListItems": 7, "maxListPages": 2}}
		]}}`)
	cfg, err := v.Parse("c.json", data, LoadOptions{})
	require.NoError(t, err)
	plain, own := cfg.MCP.Servers[0], cfg.MCP.Servers[1]
	require.Equal(t, Limits{MaxMessageBytes: 32 << 20, MaxListItems: DefaultMaxListItems, MaxListPages: 50, MaxListBytes: DefaultMaxListBytes}, plain.Limits)
	require.Equal(t, Limits{MaxMessageBytes: 32 << 20, MaxListItems: 7, MaxListPages: 2, MaxListBytes: DefaultMaxListBytes}, own.Limits)
	// The file's own limits, without any server's: what a host of the
	// gateway may send.
	require.Equal(t, Limits{MaxMessageBytes: 32 << 20, MaxListItems: DefaultMaxListItems, MaxListPages: 50, MaxListBytes: DefaultMaxListBytes}, cfg.MCP.Limits)

	cfg, err = v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "d", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, Limits{}.WithDefaults(), cfg.MCP.Servers[0].Limits)
	require.Equal(t, Limits{}.WithDefaults(), cfg.MCP.Limits)
	require.Equal(t, Limits{DefaultMaxMessageBytes, DefaultMaxListItems, DefaultMaxListPages, DefaultMaxListBytes}, cfg.MCP.Servers[0].Limits)
	cfg, err = v.Parse("c.json", []byte(`{}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, Limits{}.WithDefaults(), cfg.MCP.Limits)
}

func TestLimitsAreInSpecHash(t *testing.T) {
	a := Server{Name: "a", Type: Local, Command: []string{"x"}}
	b := a
	b.Limits.MaxListItems = 5
	require.NotEqual(t, a.SpecHash(), b.SpecHash(), "a changed limit restarts the server")
	c := a
	c.Limits = Limits{}.WithDefaults()
	require.Equal(t, MCP{}.Resolve(a).SpecHash(), MCP{}.Resolve(c).SpecHash(), "unset limits resolve to the defaults")
}

// TestLimitsBounds checks that config.cue's bounds are the Go constants and
// that a bad value gets a message naming the field and the range.
func TestLimitsBounds(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	doc := func(where, field string, value any) []byte {
		lim := fmt.Sprintf(`{%q: %v}`, field, value)
		if where == "mcp" {
			return fmt.Appendf(nil, `{"mcp": {"limits": %s, "servers": [{"name": "s", "type": "local", "command": ["x"]}]}}`, lim)
		}
		return fmt.Appendf(nil, `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x"], "limits": %s}]}}`, lim)
	}
	for _, tc := range []struct {
		field    string
		min, max int64
		want     string
	}{
		{"maxMessageBytes", MinMaxMessageBytes, MaxMaxMessageBytes, "maxMessageBytes must be a whole number of bytes from 65536 (64 KiB) to 1073741824 (1 GiB)"},
		{"maxListItems", 1, MaxMaxListItems, "maxListItems must be a whole number from 1 to 1000000"},
		{"maxListPages", 1, MaxMaxListPages, "maxListPages must be a whole number from 1 to 100000"},
		{"maxListBytes", MinMaxListBytes, MaxMaxListBytes, "maxListBytes must be a whole number of bytes from 65536 (64 KiB) to 4294967296 (4 GiB)"},
	} {
		for _, where := range []string{"mcp", "server"} {
			t.Run(tc.field+"/"+where, func(t *testing.T) {
				for _, ok := range []int64{tc.min, tc.max} {
					_, err := v.Parse("c.json", doc(where, tc.field, ok), LoadOptions{})
					require.NoError(t, err, "%s = %d", tc.field, ok)
				}
				for _, bad := range []any{tc.min - 1, tc.max + 1, `"8"`, 1.5, "[1]"} {
					_, err := v.Parse("c.json", doc(where, tc.field, bad), LoadOptions{})
					var errs Errors
					require.ErrorAs(t, err, &errs, "%s = %v", tc.field, bad)
					require.Len(t, errs, 1, "%v", errs)
					require.Equal(t, tc.want, errs[0].Msg)
					if where == "mcp" {
						require.Equal(t, []string{"mcp", "limits", tc.field}, errs[0].Path)
					} else {
						require.Equal(t, []string{"mcp", "servers", "0", "limits", tc.field}, errs[0].Path)
						require.Equal(t, "s", errs[0].Server)
					}
					require.NotZero(t, errs[0].Line)
				}
			})
		}
	}
}

func TestLimitsTypos(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, data string
		path       []string
		want       string
	}{
		{"field in mcp.limits", `{"mcp": {"limits": {"maxMesageBytes": 100000}}}`,
			[]string{"mcp", "limits", "maxMesageBytes"}, `unknown field "maxMesageBytes" in limits (did you mean "maxMessageBytes"?)`},
		{"field in a server's limits", `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x"], "limits": {"maxListPage": 3}}]}}`,
			[]string{"mcp", "servers", "0", "limits", "maxListPage"}, `unknown field "maxListPage" in limits (did you mean "maxListPages"?)`},
		{"limits misspelt", `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x"], "limit": {}}]}}`,
			[]string{"mcp", "servers", "0", "limit"}, `unknown field "limit" (did you mean "limits"?)`},
		{"not an object", `{"mcp": {"limits": 5}}`,
			[]string{"mcp", "limits"}, `limits must be an object with any of "maxMessageBytes", "maxListItems", "maxListPages" and "maxListBytes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Parse("c.json", []byte(tc.data), LoadOptions{})
			var errs Errors
			require.ErrorAs(t, err, &errs)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			require.Len(t, errs, 1, strings.Join(msgs, "\n"))
			require.Equal(t, tc.path, errs[0].Path)
			require.Equal(t, tc.want, errs[0].Msg)
		})
	}
}
