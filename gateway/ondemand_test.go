package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
)

// onDemandConfig is home's config: servers a and b on demand (each
// logging its starts to <home>/<name>.starts) with a short idle timeout,
// and extra beside them; every mcp tool allowed.
func onDemandConfig(home string, extra ...map[string]any) map[string]any {
	var servers []map[string]any
	for _, n := range []string{"a", "b"} {
		servers = append(servers, testServer(n, "--start-log", filepath.Join(home, n+".starts")))
	}
	conf := servetest.Config(append(servers, extra...)...)
	m := conf["mcp"].(map[string]any)
	m["lifecycle"], m["idleTimeout"] = "on-demand", 300
	conf["permission"] = map[string]any{"allow": []string{"mcp"}}
	return conf
}

// startCount is how many times the server logging to path started.
func startCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return len(strings.Fields(string(b)))
}

// The "the gateway's host sees the same tool list throughout": a
// plain mcp-go host on a gateway attached to a serve whose servers are on
// demand lists their tools while they sleep, wakes one by a call, lists
// while it runs and again once it sleeps — the same tools every time, and
// no notifications/tools/list_changed until a real change of the config
// (the last, which proves the earlier ones would have arrived: the stdio
// stream is ordered).
func TestAttachedHostSeesOnDemandToolsThroughout(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, onDemandConfig(home))
	s := startServeIn(t, home, "a", "idle")
	s.WaitPhase("b", "idle")
	aStarts, bStarts := filepath.Join(home, "a.starts"), filepath.Join(home, "b.starts")
	require.Equal(t, 1, startCount(t, aStarts), "learned once")

	c, err := client.NewStdioMCPClientWithOptions(os.Args[0],
		append(os.Environ(), childEnv+"=1", childHome+"="+home, childAttach+"=1"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	var changed atomic.Int32
	sentinel := make(chan struct{}, 16)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationToolsListChanged) {
			changed.Add(1)
			sentinel <- struct{}{}
		}
	})
	require.NoError(t, c.Start(t.Context())) // installs the notification handler
	_, err = c.Initialize(t.Context(), mcpgo.InitializeRequest{})
	require.NoError(t, err)
	list := func() []mcpgo.Tool {
		t.Helper()
		res, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		require.NoError(t, err)
		return res.Tools
	}
	names := func(ts []mcpgo.Tool) []string {
		var out []string
		for _, tool := range ts {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	asleep := list()
	require.Contains(t, names(asleep), "a__echo")
	require.Contains(t, names(asleep), "b__echo")
	require.Equal(t, 1, startCount(t, aStarts), "listing starts nothing")

	for cycle := range 2 {
		res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "wake"}}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		assert.Equal(t, "wake", res.Content[0].(mcpgo.TextContent).Text)
		require.Equal(t, 2+cycle, startCount(t, aStarts), "the call woke a once")
		assert.Equal(t, asleep, list(), "while a runs")
		s.WaitPhase("a", "idle")
		assert.Equal(t, asleep, list(), "after a slept again")
	}
	require.Equal(t, 1, startCount(t, bStarts), "b was never woken")
	for _, p := range testutil.Descendants(os.Getpid()) {
		if testutil.Comm(p.PID) == "mcp-testserver" {
			assert.Failf(t, "a server runs", "pid %d, with every server idle", p.PID)
		}
	}

	// A real change is announced, once; nothing came before it.
	writeConfig(t, home, onDemandConfig(home, testServer("u")))
	select {
	case <-sentinel:
	case <-time.After(waitFor):
		require.Fail(t, "no list_changed after a server was added")
	}
	assert.EqualValues(t, 1, changed.Load(), "list_changed before the config change")
	assert.Contains(t, names(list()), "u__echo")
}
