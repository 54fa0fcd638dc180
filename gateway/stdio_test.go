package gateway

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
)

// TestStdioHostListsCallsAndHearsOnlyRealChanges: the SDK's client starts
// the gateway over stdio; it lists the server's tools as <server>__<tool>
// with schema and annotations, calls one, hears tools/list_changed when a
// config edit adds a server, and hears nothing when a server's restart
// brings the same tools back.
func TestStdioHostListsCallsAndHearsOnlyRealChanges(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(testServer("t"))
	cfg["permission"] = map[string]any{"allow": []string{"mcp__t__crash"}}
	writeConfig(t, home, cfg)
	h := startHost(t, home, hostOptions{})

	// The gateway answers once the servers started: the first list holds
	// their tools.
	tools := h.tools()
	require.Contains(t, tools, "t__echo")
	echo := tools["t__echo"]
	assert.Equal(t, map[string]any{"readOnlyHint": true}, echo["annotations"])
	assert.Equal(t, "object", echo["inputSchema"].(map[string]any)["type"])
	assert.NotContains(t, tools, "read", "built-ins are listed only with --builtins")
	for name := range tools {
		assert.False(t, strings.HasPrefix(name, "mcp__"), "%s keeps the mcp__ prefix", name)
	}

	res := h.call("t__echo", map[string]any{"text": "through the gateway"}, false)
	assert.Equal(t, "through the gateway", text(res))
	assert.Nil(t, res["isError"])

	// A crash and its restart bring the same tools back: no list_changed.
	pid := serverPid(t, h)
	res = h.call("t__crash", nil, false)
	assert.Equal(t, true, res["isError"], "a crash fails the call: %v", res)
	h.waitLog("generation=2")
	h.waitLog(`msg="server ready" server=t generation=2`)
	assert.NotEqual(t, pid, serverPid(t, h))
	// Events arrive in order: a list_changed of the restart would come
	// before the one of this edit.
	cfg["mcp"] = servetest.Config(testServer("t"), testServer("u"))["mcp"]
	writeConfig(t, home, cfg)
	h.event("tools_changed")
	tools = h.tools()
	assert.Contains(t, tools, "u__echo", "the first list_changed after the restart is not the edit's")
	assert.Contains(t, tools, "t__echo")
	assert.Equal(t, "still here", text(h.call("t__echo", map[string]any{"text": "still here"}, false)))
	h.noEvents()
}

// serverPid is the pid of the test server under the gateway of h.
func serverPid(t *testing.T, h *host) int {
	t.Helper()
	for _, p := range testutil.Descendants(h.cmd.Process.Pid) {
		if testutil.Comm(p.PID) == "mcp-testserver" {
			return p.PID
		}
	}
	require.Fail(t, "no test server runs under the gateway")
	return 0
}

// TestEachCallHasItsOwnID: the calls of a host run under ids of their
// own, as the orchestrator's log (and its approvals) name them.
func TestEachCallHasItsOwnID(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	h := startHost(t, home, hostOptions{})
	require.Contains(t, h.tools(), "t__echo")
	h.call("t__echo", map[string]any{"text": "one"}, false)
	h.call("t__echo", map[string]any{"text": "two"}, false)
	done := regexp.MustCompile(`msg="tool call done" (?:\S+ )*?call=(\S+) tool=mcp__t__echo`)
	var ids []string
	require.Eventually(t, func() bool {
		ids = ids[:0]
		for _, m := range done.FindAllStringSubmatch(h.stderr.String(), -1) {
			ids = append(ids, m[1])
		}
		return len(ids) == 2
	}, waitFor, 10*time.Millisecond, "two calls logged:\n%s", h.stderr.String())
	assert.NotEqual(t, ids[0], ids[1], "two calls under one id")
}
