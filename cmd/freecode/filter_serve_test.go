package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/wire"
)

// A server's tools filter hides tools from every surface of serve: the
// definitions of GET /v1/tools, the server's tools, calls, `mcp status`
// and `mcp tools`. A change of the filter re-registers the tools of the
// same process, with one tools_changed event; an edit that hides nothing
// new publishes none.
func TestServeToolFilter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	c := config{t, filepath.Join(home, "config.json")}
	filtered := func(exclude ...string) map[string]any {
		a := local("a", ts)
		a["tools"] = map[string]any{"exclude": exclude}
		return a
	}
	// A deny rule, unlike the filter, leaves its tool advertised.
	withDeny := func(servers ...map[string]any) map[string]any {
		v := cfg(servers...)
		v["permission"] = map[string]any{"allow": []string{"mcp__a"}, "deny": []string{"mcp__a__fail"}}
		return v
	}
	c.write(withDeny(filtered("note", "cr*")), true)
	p := startServe(t, home)
	ready := p.waitPhase("a", "ready")
	assert.Equal(t, 5, ready.Tools)
	assert.Equal(t, 7, ready.ToolsTotal)
	ctx := t.Context()

	defs, err := p.client.Tools(ctx, "")
	require.NoError(t, err)
	assert.True(t, servetest.HasTool(defs, "mcp__a__echo"))
	assert.False(t, servetest.HasTool(defs, "mcp__a__note"))
	assert.False(t, servetest.HasTool(defs, "mcp__a__crash"))
	st, err := p.client.ServerTools(ctx, "a")
	require.NoError(t, err)
	assert.Len(t, st.Tools, 5)
	assert.Empty(t, st.Hidden)
	for _, tool := range st.Tools {
		assert.NotEqual(t, "note", tool.Name)
	}
	_, err = p.client.Call(ctx, "mcp__a__note", json.RawMessage(`{"text":"x"}`))
	var apiErr *api.Error
	require.ErrorAs(t, err, &apiErr)
	require.NotNil(t, apiErr.Call)
	assert.Equal(t, api.KindUnknownTool, apiErr.Call.Kind)
	assert.True(t, servetest.HasTool(defs, "mcp__a__fail"), "a denied tool is still advertised")
	_, err = p.client.Call(ctx, "mcp__a__fail", nil)
	require.ErrorAs(t, err, &apiErr)
	require.NotNil(t, apiErr.Call)
	assert.Equal(t, api.KindDenied, apiErr.Call.Kind)

	fc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("freecode", args...)
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.Regexp(t, `(?m)^a +user +yes +ready +\d+ +5 of 7 +- `, fc("mcp", "status"))
	out := fc("mcp", "tools", "a", "--all")
	assert.Contains(t, out, "5 of 7 tools: 2 hidden by the tools filter of \"a\".\n")
	assert.Contains(t, out, "\ncrash  (hidden by tools.exclude \"cr*\")\nnote  (hidden by tools.exclude \"note\")\n")
	assert.NotContains(t, out, "mcp__a__note")
	call := exec.Command("freecode", "mcp", "call", "mcp__a__note", `{"text": "x"}`)
	call.Env = append(os.Environ(), "FREECODE_HOME="+home)
	cout, err := call.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, "Error: tool \"mcp__a__note\" is not available: it is hidden by the tools filter of \"a\" (tools.exclude \"note\"); see the hidden tools with `freecode mcp tools a --all`\n", string(cout))

	events := p.events()
	c.write(withDeny(filtered("note")), true)
	until(t, events, "tools_changed of a", func(ev api.Event) bool { return ev.Kind == wire.KindToolsChanged })
	now := p.waitStatus("a with 6 tools", func(s wire.Status) bool {
		a, _ := server(s, "a")
		return a.Tools == 6
	})
	a, _ := server(now, "a")
	assert.Equal(t, ready.PID, a.PID, "the server was restarted")
	assert.Equal(t, ready.Generation, a.Generation)
	assert.Equal(t, 7, a.ToolsTotal)
	defs, err = p.client.Tools(ctx, "")
	require.NoError(t, err)
	assert.True(t, servetest.HasTool(defs, "mcp__a__crash"))
	assert.False(t, servetest.HasTool(defs, "mcp__a__note"))

	// A filter that keeps the same tools: registered again, nothing
	// published; the next real change is the only event after it.
	const refiltered = "tools filter changed; registering the tools again"
	require.Equal(t, 1, strings.Count(p.stderr.String(), refiltered), "%s", p.stderr)
	c.write(withDeny(filtered("note", "nothing-*")), true)
	require.Eventually(t, func() bool { return strings.Count(p.stderr.String(), refiltered) == 2 }, waitFor, 10*time.Millisecond)
	c.write(cfg(local("a", ts)), true)
	seen := until(t, events, "tools_changed of a", func(ev api.Event) bool { return ev.Kind == wire.KindToolsChanged })
	for _, ev := range seen[:len(seen)-1] {
		assert.NotEqual(t, wire.KindToolsChanged, ev.Kind, "an edit that changed nothing published %v", ev)
	}
	now = p.waitStatus("a with 7 tools", func(s wire.Status) bool {
		a, _ := server(s, "a")
		return a.Tools == 7
	})
	a, _ = server(now, "a")
	assert.Equal(t, ready.PID, a.PID)
	assert.Zero(t, a.ToolsTotal)
	cctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	_, err = p.client.Call(cctx, "mcp__a__note", json.RawMessage(`{"text":"x"}`))
	require.NoError(t, err)
}
