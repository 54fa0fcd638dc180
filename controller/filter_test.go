package controller

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// A tools filter keeps the tools it hides out of the registry, so out of
// the provider-facing definitions and out of reach of a call, and the
// status counts them; changing the filter re-registers the running
// session's tools without a restart, and an edit that hides nothing new
// publishes nothing.
func TestToolFilterHidesAndChangesWithoutRestart(t *testing.T) {
	h := newHarness(t)
	cache := defs.NewDefsCache(h.reg, defs.Options{})
	orch := orchestrator.New(orchestrator.Options{Registry: h.reg, Rules: func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"mcp"}} }})
	srv := testServer("s", "--tools", "1")
	srv.Tools = schema.ToolFilter{Exclude: []string{"no*"}}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	ready := h.waitPhase("s", wire.PhaseReady)
	require.Equal(t, 7, ready.Tools)
	require.Equal(t, 8, ready.ToolsTotal)
	require.NotContains(t, h.toolIDs("s"), "mcp__s__note")
	require.Contains(t, h.toolIDs("s"), "mcp__s__echo")
	names := func() []string {
		var out []string
		for _, d := range cache.Defs(defs.DialectJSONSchema).Tools {
			out = append(out, d.Name)
		}
		return out
	}
	require.NotContains(t, names(), "mcp__s__note")
	require.Contains(t, names(), "mcp__s__echo")
	call := func(id string) error {
		return orch.Run(context.Background(), []orchestrator.Call{{ID: "1", Tool: id, Args: json.RawMessage(`{"text":"x"}`)}})[0].Err
	}
	require.ErrorIs(t, call("mcp__s__note"), orchestrator.ErrUnknownTool)
	require.NoError(t, call("mcp__s__echo"))
	st, err := h.c.Snapshot().Tools("s")
	require.NoError(t, err)
	require.Len(t, st.Tools, 7)
	require.Len(t, st.Hidden, 1)
	require.Equal(t, "note", st.Hidden[0].Name)
	require.Equal(t, `tools.exclude "no*"`, st.Hidden[0].Reason)
	before := h.toolsChanged("s")

	// Only echo, now: the same process, one ToolsChanged.
	srv.Tools = schema.ToolFilter{Include: []string{"echo", "note"}, Exclude: []string{"note"}}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	// The registry takes the new set before the status counts it; the
	// tools_changed event follows both, so it is what to wait on.
	require.Eventually(t, func() bool { return h.toolsChanged("s") == before+1 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"mcp__s__echo"}, h.toolIDs("s"))
	require.Equal(t, []string{"mcp__s__echo"}, names())
	now := h.waitPhase("s", wire.PhaseReady)
	require.Equal(t, ready.PID, now.PID, "the server was restarted")
	require.Equal(t, ready.Generation, now.Generation)
	require.Equal(t, 1, now.Tools)
	require.Equal(t, 8, now.ToolsTotal)

	// Another filter that keeps the same tools: re-registered, no event.
	srv.Tools = schema.ToolFilter{Include: []string{"ech?"}, Exclude: []string{"nothing-*"}}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	require.Eventually(t, func() bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.servers["s"].filterKey == srv.Tools.Key()
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, before+1, h.toolsChanged("s"))
	require.Equal(t, ready.PID, h.server("s").PID)

	// No filter: every tool again, and the status counts no hidden ones.
	srv.Tools = schema.ToolFilter{}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	require.Eventually(t, func() bool { return h.toolsChanged("s") == before+2 }, 30*time.Second, 5*time.Millisecond)
	require.Len(t, h.toolIDs("s"), 8)
	require.Zero(t, h.server("s").ToolsTotal)
	require.Equal(t, ready.PID, h.server("s").PID)
	require.NoError(t, call("mcp__s__note"))
}

// Tools kept while a server has no ready session — here through the
// backoff after a crash — follow a filter change at once: what it hides
// leaves the registry without waiting for the next session.
func TestToolFilterNarrowsKeptTools(t *testing.T) {
	var conn *fakeConn
	dial := func(ctx context.Context, srv schema.Server) (Conn, error) {
		if conn != nil {
			return nil, errors.New("down")
		}
		conn = newFakeConn(t, srv.Name, 0, "keep", "drop")
		return conn, nil
	}
	h := newHarness(t, func(o *Options) {
		o.Dial = dial
		o.Backoff = Backoff{Initial: time.Hour, Max: time.Hour, Factor: 2, StableAfter: time.Hour}
	})
	srv := schema.Server{Name: "s", Type: schema.Local, Command: []string{"x"}, Enabled: true, Timeout: time.Second}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	h.waitPhase("s", wire.PhaseReady)
	require.Equal(t, []string{"mcp__s__drop", "mcp__s__keep"}, h.toolIDs("s"))
	conn.crash(errors.New("crashed"))
	h.waitPhase("s", wire.PhaseBackoff)
	require.Equal(t, []string{"mcp__s__drop", "mcp__s__keep"}, h.toolIDs("s"), "kept for the restart")

	srv.Tools = schema.ToolFilter{Exclude: []string{"drop"}}
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	require.Eventually(t, func() bool { return len(h.toolIDs("s")) == 1 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"mcp__s__keep"}, h.toolIDs("s"))
	require.Equal(t, wire.PhaseBackoff, h.server("s").Phase)
}
