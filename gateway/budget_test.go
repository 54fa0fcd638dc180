package gateway

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// Over mcp.toolBudget the host is shown tool_search and the always-loaded
// tools; a search names the matches by the host's names, loads them, and
// the host hears one tools/list_changed after which it lists them too.
func TestHostLoadsDeferredToolsWithToolSearch(t *testing.T) {
	home := servetest.ShortHome(t)
	keep := testServer("keep")
	keep["alwaysLoad"] = true
	cfg := servetest.Config(testServer("t", "--tools", "40"), keep)
	cfg["mcp"].(map[string]any)["toolBudget"] = 1000
	writeConfig(t, home, cfg)
	h := startHost(t, home, hostOptions{})

	tools := h.tools()
	require.Contains(t, tools, ToolSearch, "deferring: tool_search is listed without --builtins")
	require.Contains(t, tools, "keep__echo", "an alwaysLoad server's tools are listed")
	require.NotContains(t, tools, "t__tool_007", "deferred")
	require.NotContains(t, tools, "read", "built-ins only with --builtins")

	res := h.call(ToolSearch, map[string]any{"query": "tool_007", "limit": 1}, false)
	assert.Contains(t, text(res), "1. t__tool_007: ", "the match is named as the host knows it")
	assert.NotContains(t, text(res), "mcp__t__")
	assert.Equal(t, "t__tool_007", res["structuredContent"].(map[string]any)["tools"].([]any)[0].(map[string]any)["name"])
	h.event("tools_changed")
	tools = h.tools()
	require.Contains(t, tools, "t__tool_007", "loaded")
	require.NotContains(t, tools, "t__tool_008")

	// Budget 0: everything is listed, tool_search is not.
	cfg["mcp"].(map[string]any)["toolBudget"] = 0
	writeConfig(t, home, cfg)
	tools = h.waitTools("the full list", func(m map[string]map[string]any) bool {
		_, all := m["t__tool_008"]
		_, search := m[ToolSearch]
		return all && !search
	})
	assert.Contains(t, tools, "t__tool_039")
}

// A gateway fronting one server (--server) lists all that server's tools,
// over the budget too: it offers no tool_search to load deferred ones.
func TestFrontOneServerListsItsDeferredTools(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(testServer("t", "--tools", "40"), testServer("u", "--tools", "40"))
	cfg["mcp"].(map[string]any)["toolBudget"] = 1000
	cfg["permission"] = map[string]any{"allow": []string{"mcp__t"}}
	writeConfig(t, home, cfg)
	h := startHost(t, home, hostOptions{env: []string{childServer + "=t"}})
	tools := h.tools()
	assert.NotContains(t, tools, ToolSearch)
	for i := range 40 {
		assert.Contains(t, tools, fmt.Sprintf("tool_%03d", i), "deferred over the budget, listed all the same")
	}
	assert.NotContains(t, tools, "u__tool_000")
	res := h.call("tool_039", map[string]any{"query": "x"}, false)
	assert.NotEqual(t, true, res["isError"], "%v", res)
}
