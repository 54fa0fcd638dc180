package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tools filter is read, is not part of the spec, and hides by the
// server's own tool names: exclude wins over include, an empty include
// keeps everything.
func TestToolFilter(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	doc := []byte(`{"mcp": {"servers": [{"name": "fs", "type": "local", "command": ["x"],
		"tools": {"include": ["read_*", "list_?"], "exclude": ["read_secret*"]}}]}}`)
	cfg, err := v.Parse("c.json", doc, LoadOptions{LookupEnv: env(nil)})
	require.NoError(t, err)
	s := cfg.MCP.Servers[0]
	require.Equal(t, ToolFilter{Include: []string{"read_*", "list_?"}, Exclude: []string{"read_secret*"}}, s.Tools)

	plain := s
	plain.Tools = ToolFilter{}
	require.Equal(t, plain.SpecHash(), s.SpecHash(), "the filter is not part of the spec")
	require.Empty(t, plain.Tools.Key())
	require.NotEqual(t, s.Tools.Key(), ToolFilter{Include: s.Tools.Include}.Key())

	for name, want := range map[string]string{
		"read_file":        "",
		"list_a":           "",
		"list_ab":          "tools.include, no pattern matches",
		"write_file":       "tools.include, no pattern matches",
		"read_secret_file": `tools.exclude "read_secret*"`,
		"mcp__fs__list_a":  "tools.include, no pattern matches",
	} {
		reason, hidden := s.Tools.Hides(name)
		require.Equal(t, want != "", hidden, name)
		require.Equal(t, want, reason, name)
	}
	reason, hidden := ToolFilter{Exclude: []string{"delete"}}.Hides("deleted")
	require.False(t, hidden, "a pattern matches the whole name: %s", reason)
	_, hidden = ToolFilter{Exclude: []string{"delete"}}.Hides("delete")
	require.True(t, hidden)
}

func TestToolFilterErrors(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct{ name, tools, want string }{
		{"bad glob", `{"exclude": ["ok", "write_[a-"]}`, `c.json:2:31: mcp.servers[0].tools.exclude[1] (server "fs"): "write_[a-" is not a valid pattern (syntax error in pattern); patterns use Go's path.Match syntax`},
		{"not an object", `["a"]`, `mcp.servers[0].tools (server "fs"): tools must be an object`},
		{"empty pattern", `{"include": [""]}`, `mcp.servers[0].tools.include[0] (server "fs"): each pattern of tools.include must be a non-empty string (a glob in Go's path.Match syntax`},
		{"not a list", `{"exclude": "a*"}`, `mcp.servers[0].tools.exclude (server "fs"): tools must be an object`},
		{"a typo with a list", `{"exlude": ["a", "b"]}`, `mcp.servers[0].tools.exlude (server "fs"): unknown field "exlude" in tools (did you mean "exclude"?)`},
		{"typo", `{"exlude": ["a"]}`, `mcp.servers[0].tools.exlude (server "fs"): unknown field "exlude" in tools (did you mean "exclude"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "fs", "type": "local", "command": ["x"],
		"tools": `+tc.tools+`}]}}`), LoadOptions{LookupEnv: env(nil)})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one error: %v", err)
		})
	}
}
