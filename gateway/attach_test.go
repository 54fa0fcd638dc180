package gateway

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
	"github.com/freecode/freecode/wire"
)

// startServe runs `freecode serve` (serve.Run) for home in the test
// process until the end of the test, and returns its API once server
// name is ready.
func startServe(t *testing.T, home, name string) servetest.API {
	t.Helper()
	return startServeIn(t, home, name, "ready")
}

// startServeIn is startServe waiting for server name to be in phase.
func startServeIn(t *testing.T, home, name, phase string) servetest.API {
	t.Helper()
	log := &servetest.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Home: home, Root: home,
			Sources: schema.Sources{User: filepath.Join(home, "config.json"), Trust: schema.TrustPath(home)},
			Logger:  logr.FromSlogHandler(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.Level(-1)}))})
	}()
	a := servetest.API{T: t}
	t.Cleanup(func() {
		if a.Client != nil {
			a.Client.Close()
		}
		cancel()
		assert.NoError(t, <-done)
		if t.Failed() {
			t.Logf("serve log:\n%s", log.String())
		}
	})
	a.Client = dialServe(t, home, log)
	a.WaitPhase(name, phase)
	return a
}

// dialServe waits until the serve of home answers and returns its client;
// log is serve's, for the failure.
func dialServe(t *testing.T, home string, log *servetest.SyncBuffer) *api.Client {
	t.Helper()
	var client *api.Client
	require.Eventually(t, func() bool {
		c, err := api.Dial(api.SocketPath(home))
		if err != nil {
			return false
		}
		if _, err := c.Status(t.Context()); err != nil {
			c.Close()
			return false
		}
		client = c
		return true
	}, waitFor, 10*time.Millisecond, "serve does not answer:\n%s", log.String())
	return client
}

// TestAttachGoesThroughServe: with freecode serve running for the home,
// the gateway lists serve's tools, calls them in serve's session (no
// server of its own), hears serve's changes, and puts serve's approvals to
// its host — refused, naming the rule, when the host cannot be asked.
func TestAttachGoesThroughServe(t *testing.T) {
	home := servetest.ShortHome(t)
	calls := filepath.Join(home, "calls.jsonl")
	writeConfig(t, home, servetest.Config(testServer("t", "--progress", "--call-log", calls)))
	s := startServe(t, home, "t")
	servePid, _ := servetest.Server(s.Status(), "t")

	h := startHost(t, home, hostOptions{env: []string{childAttach + "=1"}})
	tools := h.tools()
	require.Contains(t, tools, "t__echo")
	assert.Equal(t, map[string]any{"readOnlyHint": true}, tools["t__echo"]["annotations"])
	assert.Equal(t, "via serve", text(h.call("t__echo", map[string]any{"text": "via serve"}, false)))
	for _, p := range testutil.Descendants(h.cmd.Process.Pid) {
		assert.NotEqual(t, "mcp-testserver", testutil.Comm(p.PID), "an attached gateway runs no server of its own")
	}
	assert.Positive(t, servePid.PID)

	res := h.call("t__note", map[string]any{"text": "x"}, false)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, text(res), `add "mcp__t__note" to permission.allow`)

	// serve's call_progress events of the call reach the host (they come
	// on the event stream, apart from the answer: the steps are 100 ms
	// apart, and the answer 100 ms after the last).
	h.send(map[string]any{"op": "call", "name": "t__progress", "args": map[string]any{"steps": 2, "ms": 100}, "progress": true})
	assert.Equal(t, "step 1 of 2", h.event("progress")["message"])
	assert.Equal(t, "step 2 of 2", h.event("progress")["message"])
	assert.Equal(t, "done 2 steps", text(h.answer("call")["result"].(map[string]any)))
	// The host cancelling a call cancels it in serve, at the server.
	h.send(map[string]any{"op": "abortAfterProgress", "name": "t__progress", "args": map[string]any{"steps": 1, "hold": true}})
	h.event("progress")
	assert.Contains(t, h.answer("abortAfterProgress")["error"], "the host cancelled")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), `"phase":"end","tool":"progress"`) == 2
	}, waitFor, 10*time.Millisecond, "the server's call was not cancelled")

	writeConfig(t, home, servetest.Config(testServer("t"), testServer("u")))
	h.event("tools_changed")
	h.waitTools("u's tools", func(m map[string]map[string]any) bool { return m["u__echo"] != nil })
}

// TestAttachAskIsPutToTheHost: serve's approval of a call made through an
// attached gateway becomes an elicitation to a host that can show one, and
// so does the elicitation of the server the call waits for.
func TestAttachAskIsPutToTheHost(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t", "--ask")))
	startServe(t, home, "t")
	h := startHost(t, home, hostOptions{env: []string{childAttach + "=1", "ELICIT=accept", `ELICIT_CONTENT={"name":"Bo"}`}})
	require.Contains(t, h.tools(), "t__note")
	h.send(map[string]any{"op": "call", "name": "t__note", "args": map[string]any{"text": "approved"}})
	ev := h.event("elicitation")
	assert.Contains(t, ev["message"], `MCP server "t" wants to run note with {"text":"approved"}`)
	res := h.answer("call")["result"].(map[string]any)
	assert.Nil(t, res["isError"], "%v", res)

	h.send(map[string]any{"op": "call", "name": "t__ask", "args": map[string]any{"message": "Name?"}})
	ev = h.event("elicitation")
	assert.Equal(t, "t asks: Name?", ev["message"])
	res = h.answer("call")["result"].(map[string]any)
	assert.Contains(t, text(res), `"name":"Bo"`)

	// serve's audit log names the host that answered each, as it names
	// the host of the calls.
	var approvedBy, answeredBy string
	require.Eventually(t, func() bool {
		s, err := audit.Open(t.Context(), home, audit.Options{})
		if err != nil {
			return false
		}
		es, err := s.Read(t.Context())
		if err != nil {
			return false
		}
		for _, e := range es {
			switch {
			case e.Kind == audit.KindCall && e.Tool == "mcp__t__note":
				approvedBy = e.By
			case e.Kind == audit.KindElicitation:
				answeredBy = e.By
			}
		}
		return approvedBy != "" && answeredBy != ""
	}, 30*time.Second, 20*time.Millisecond)
	assert.True(t, strings.HasPrefix(answeredBy, "gateway ") && !strings.Contains(answeredBy, "unnamed"), "elicitation answered by %q", answeredBy)
	assert.Equal(t, approvedBy, answeredBy)
}

// TestAttachRestartWithSameToolsSendsNothing: a server of serve that
// crashes and comes back with the same tools changes nothing the attached
// gateway lists — while it is down its tools are still defined and keep
// their titles and annotations — so the host hears no list_changed: the
// first it hears is a later edit's, and the gateway logged one change for
// it alone.
func TestAttachRestartWithSameToolsSendsNothing(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(testServer("t"))
	cfg["permission"] = map[string]any{"allow": []string{"mcp__t__crash"}}
	writeConfig(t, home, cfg)
	s := startServe(t, home, "t")
	h := startHost(t, home, hostOptions{env: []string{childAttach + "=1"}})
	tools := h.tools()
	require.Contains(t, tools, "t__echo")
	assert.Equal(t, map[string]any{"readOnlyHint": true}, tools["t__echo"]["annotations"])
	changes := func() int { return strings.Count(h.stderr.String(), `msg="tools changed"`) }
	before := changes()

	assert.Equal(t, true, h.call("t__crash", nil, false)["isError"])
	s.WaitStatus("t restarted and ready", func(st wire.Status) bool {
		srv, ok := servetest.Server(st, "t")
		return ok && srv.Restarts >= 1 && srv.Phase == "ready" && srv.Tools > 0
	})
	// Events arrive in order: a list_changed of the crash or the restart
	// would come before the one of this edit.
	cfg["mcp"] = servetest.Config(testServer("t"), testServer("u"))["mcp"]
	writeConfig(t, home, cfg)
	h.event("tools_changed")
	tools = h.tools()
	assert.Contains(t, keys(tools), "u__echo", "the first list_changed after the restart is not the edit's")
	assert.Equal(t, map[string]any{"readOnlyHint": true}, tools["t__echo"]["annotations"])
	assert.Equal(t, before+1, changes(), "the gateway's list changed other than by the edit:\n%s", h.stderr.String())
}

// TestAttachElicitationLeftToServesOtherClients: the elicitation of a
// server a call through an attached gateway waits on, when the gateway's
// host declared no elicitation capability, is not declined by the gateway
// (serve cannot tell whose call it belongs to): another of serve's clients
// answers it, and the host's call gets that answer.
func TestAttachElicitationLeftToServesOtherClients(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t", "--ask")))
	s := startServe(t, home, "t")
	h := startHost(t, home, hostOptions{env: []string{childAttach + "=1"}})
	require.Contains(t, h.tools(), "t__ask")
	h.send(map[string]any{"op": "call", "name": "t__ask", "args": map[string]any{"message": "Name?"}})
	var id string
	require.Eventually(t, func() bool {
		es, err := s.Client.Elicitations(t.Context())
		if err != nil || len(es) == 0 {
			return false
		}
		id = es[0].ID
		return true
	}, waitFor, 10*time.Millisecond, "the elicitation does not wait in serve")
	h.waitLog("left an elicitation to serve's other clients")
	_, err := s.Client.AnswerElicitation(t.Context(), id, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ann"}})
	require.NoError(t, err, "the gateway did not take the answer first")
	res := h.answer("call")["result"].(map[string]any)
	assert.Contains(t, text(res), `"action":"accept"`)
	assert.Contains(t, text(res), `Ann`)
}
