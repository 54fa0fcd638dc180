package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitID is how permission rules read an id: the server is what lies
// between "mcp__" and the next "__".
func splitID(t *testing.T, id string) (server, tool string) {
	t.Helper()
	rest, ok := strings.CutPrefix(id, "mcp__")
	require.True(t, ok, id)
	server, tool, ok = strings.Cut(rest, "__")
	require.True(t, ok, id)
	return server, tool
}

// Tool ids split into (server, tool) one way only, whatever the server's
// tool names: a tool cannot pass for another server's.
func TestToolIDUnambiguous(t *testing.T) {
	// Server "x" with tool "_y" used to get the id of server "x_" with
	// tool "y".
	require.Equal(t, "mcp__x__y", ToolID("x", "_y"))
	require.NotEqual(t, ToolID("x", "_y"), ToolID("x_", "y"))

	long48 := "s" + strings.Repeat("e", 47) // the longest name the config allows
	for _, server := range []string{"x", "fs-", "a_b", long48} {
		for _, tool := range []string{"_y", "y_", "__y__", "a__b", "a___b", "__", "_", "", ".x.", "日本",
			"a/b", strings.Repeat("x", 100), strings.Repeat("_", 100), "_" + strings.Repeat("x", 100),
			strings.Repeat("x", 53) + "_" + strings.Repeat("y", 20), strings.Repeat("a_", 60)} {
			id := ToolID(server, tool)
			require.LessOrEqual(t, len(id), MaxToolIDLen, "%q %q: %s", server, tool, id)
			require.NotContains(t, id, "___", "%q %q", server, tool)
			s, part := splitID(t, id)
			require.Equal(t, server, s, "%q %q: %s", server, tool, id)
			require.NotEmpty(t, part)
			require.NotContains(t, part, "__")
			require.False(t, strings.HasPrefix(part, "_") || strings.HasSuffix(part, "_"), "%q %q: %s", server, tool, id)
			require.Regexp(t, `^[A-Za-z0-9_-]+$`, id)
			require.Equal(t, id, ToolID(server, tool), "stable")
		}
	}
	// Names with nothing left after sanitising get distinct, stable ids.
	require.Regexp(t, `^mcp__s__tool_[0-9a-f]{8}$`, ToolID("s", "__"))
	require.NotEqual(t, ToolID("s", "__"), ToolID("s", "!!"))
	// A shortened id keeps the whole server name.
	id := ToolID(long48, strings.Repeat("x", 30))
	require.Equal(t, "mcp__"+long48+"__", id[:len(long48)+7])
	require.Regexp(t, `__[0-9a-f]{8}$`, id, "no room for the name: the hash alone")
}

// Names that sanitise to one id are reported, none of them kept.
func TestConvertToolsReportsSanitisedCollisions(t *testing.T) {
	raws := []json.RawMessage{
		json.RawMessage(`{"name":"_y"}`),
		json.RawMessage(`{"name":"y"}`),
		json.RawMessage(`{"name":"a__b"}`),
		json.RawMessage(`{"name":"a_b"}`),
		json.RawMessage(`{"name":"ok"}`),
	}
	tools, errs := ConvertTools("x", raws)
	require.Len(t, tools, 1)
	require.Equal(t, "mcp__x__ok", tools[0].ID)
	require.Len(t, errs, 4)
	require.ErrorContains(t, errs[0], `tool "_y": id "mcp__x__y" is also the id of tool "y" (#1); none of them is kept`)
	require.ErrorContains(t, errs[2], `tool "a__b": id "mcp__x__a_b" is also the id of tool "a_b" (#3)`)
}
