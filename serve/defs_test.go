package serve

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

func toolNames(t api.Tools) []string {
	out := make([]string, len(t.Tools))
	for i, d := range t.Tools {
		out[i] = d.Name
	}
	return out
}

// Over mcp.toolBudget serve advertises the built-ins, the alwaysLoad
// server's tools and tool_search; a search through the API loads its
// matches (announced as tools_loaded), a deferred tool can be called all
// along, and a config edit to budget 0 brings the full list back without
// a restart.
func TestRunDefersOverTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	keep := servetest.Local("keep", testServerBin)
	keep["alwaysLoad"] = true
	conf := servetest.Config(servetest.Local("ts", testServerBin, "--tools", "40"), keep)
	conf["mcp"].(map[string]any)["toolBudget"] = 1000
	cfg := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
	cfg.Write(conf, true)
	d := start(t, options(home))
	d.WaitPhase("ts", "ready")
	d.WaitPhase("keep", "ready")
	ctx := t.Context()
	events := d.Events()

	// Both servers are ready: their tools are registered.
	list, err := d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.NotNil(t, list.Deferral)
	require.Contains(t, list.Deferral.Deferred, "mcp__ts__echo")
	require.True(t, servetest.HasTool(list, "mcp__keep__echo"))
	for _, name := range toolNames(list) {
		require.True(t, strings.HasPrefix(name, "mcp__keep__") || slices.Contains([]string{"read", "write", defs.SearchToolID}, name), name)
	}
	require.Equal(t, 1000, list.Deferral.Budget)
	require.Greater(t, list.Deferral.FullTokens, 1000)
	require.Less(t, list.EstimatedTokens, list.Deferral.FullTokens)

	// Deferred is not hidden: the tool can be called.
	resp, err := d.Client.Call(ctx, "mcp__ts__echo", json.RawMessage(`{"text":"still here"}`))
	require.NoError(t, err)
	require.Equal(t, "still here", resp.Result.Text())

	resp, err = d.Client.Call(ctx, defs.SearchToolID, json.RawMessage(`{"query":"tool_007","limit":1}`))
	require.NoError(t, err)
	require.Contains(t, resp.Result.Text(), "1. mcp__ts__tool_007:")
	servetest.Until(t, events, "tools_loaded", func(ev api.Event) bool {
		var tl defs.ToolsLoaded
		return ev.Kind == wire.KindToolsLoaded && ev.Decode(&tl) == nil && slices.Equal(tl.IDs, []string{"mcp__ts__tool_007"})
	})
	loaded, err := d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.NotEqual(t, list.Version, loaded.Version)
	require.Equal(t, append(toolNames(list), "mcp__ts__tool_007"), toolNames(loaded), "loaded tools are appended")
	require.Equal(t, []string{"mcp__ts__tool_007"}, loaded.Deferral.Loaded)

	require.NoError(t, d.Client.ClearLoaded(ctx))
	cleared, err := d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.Equal(t, list.Version, cleared.Version, "cleared: the list as it was before any search")

	// A deny rule for tool_search turns deferral off (nothing deferred
	// could be loaded), and the change is announced.
	policyChanged := func(budget int) {
		servetest.Until(t, events, "defs_policy_changed", func(ev api.Event) bool {
			var pc defs.PolicyChanged
			return ev.Kind == wire.KindDefsPolicyChanged && ev.Decode(&pc) == nil && pc.Budget == budget
		})
	}
	conf["permission"] = map[string]any{"deny": []string{defs.SearchToolID}}
	cfg.Write(conf, true)
	policyChanged(0)
	full, err := d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.Nil(t, full.Deferral)
	require.True(t, servetest.HasTool(full, "mcp__ts__echo"))
	require.False(t, servetest.HasTool(full, defs.SearchToolID))

	delete(conf, "permission")
	cfg.Write(conf, true)
	policyChanged(1000)
	again, err := d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.NotNil(t, again.Deferral)

	conf["mcp"].(map[string]any)["toolBudget"] = 0
	cfg.Write(conf, true)
	policyChanged(0)
	full, err = d.Client.Tools(ctx, "openai")
	require.NoError(t, err)
	require.Nil(t, full.Deferral)
	require.True(t, servetest.HasTool(full, "mcp__ts__echo"))
}
