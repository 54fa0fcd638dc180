package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

// A real server whose tools' schemas hold references no client follows
// (remote, file, a pointer to nothing): the tools are kept and callable,
// those parts accept anything, the rest is still checked, and each warning
// is logged once per session, also across re-lists.
func TestToolsWithRefsNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(args, "input schema reference not followed") {
			logged = append(logged, args)
		}
	}, funcr.Options{})
	s, err := Connect(context.Background(), localServer("ext", "--tools", "2", "--schemas", "external"), Options{Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		requireGroupGone(t, s.PID())
	})

	require.Empty(t, s.ConvertErrors())
	tool, ok := findTool(s.Tools(), "mcp__ext__tool_000")
	require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
	_, ok = findTool(s.Tools(), "mcp__ext__tool_001")
	require.True(t, ok)

	var got []string
	for _, w := range s.Warnings() {
		got = append(got, w.String())
	}
	want := []string{}
	for _, name := range []string{"tool_000", "tool_001"} {
		want = append(want,
			`server "ext": tool "`+name+`": inputSchema: $ref "https://schemas.example.com/config.json" at #/properties/config is not fetched; that value accepts anything`,
			`server "ext": tool "`+name+`": inputSchema: $ref "other.json#/definitions/extra" at #/properties/extra is not fetched; that value accepts anything`,
			`server "ext": tool "`+name+`": inputSchema: $ref "#/$defs/missing" at #/properties/local: no "$defs" at "#": reference target not found; that value accepts anything`,
		)
	}
	require.Equal(t, want, got)

	require.NoError(t, tool.Validator.Validate(json.RawMessage(`{"name":"a","config":{"any":[1,"x"]},"extra":{},"local":null}`)))
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{"config":1}`)), `missing property "name"`)
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{"name":"a","extra":1}`)), "/extra: got number, want object")

	args := json.RawMessage(`{"name":"a","config":{"mode":"fast"}}`)
	res, err := s.CallTool(context.Background(), "tool_000", args, nil)
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, textOf(t, res), "tool_000 ok:")

	// A re-list (tools/list_changed) brings the same warnings back: none is
	// logged again.
	_, err = s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"extra_tool"}`), nil)
	require.NoError(t, err)
	waitClosed(t, s.ToolsChanged(), "ToolsChanged after add_tool")
	_, ok = findTool(s.Tools(), "mcp__ext__extra_tool")
	require.True(t, ok)
	require.Len(t, s.Warnings(), len(want))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, logged, len(want), "each warning logged once: %v", logged)
	for i, w := range want {
		require.Contains(t, logged[i], strings.ReplaceAll(w, `"`, `\"`))
	}
}
