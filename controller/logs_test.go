package controller

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// echoStderr makes the test server (--stderr-echo) of server name write
// text and a newline to its stderr, in one write.
func (h *harness) echoStderr(name, text string) {
	h.t.Helper()
	tool, ok := h.reg.Get(mcp.ToolID(name, "echo"))
	require.True(h.t, ok)
	args, err := json.Marshal(map[string]string{"text": text})
	require.NoError(h.t, err)
	_, err = tool.Call(h.t.Context(), args, nil)
	require.NoError(h.t, err)
}

// follow reads name's stderr after cur with WaitLogs until it holds n
// lines of one session, and returns them and the cursor after them.
func (h *harness) follow(name string, cur wire.LogCursor, n int) ([]string, wire.LogCursor) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		logs, err := h.c.WaitLogs(ctx, name, cur)
		require.NoError(h.t, err, "after %d of %d lines", len(got), n)
		require.Equal(h.t, cur.Session, logs.Session, "no restart happened")
		got = append(got, logs.Lines...)
		require.Greater(h.t, logs.Last, cur.Line, "the cursor moves on")
		cur = logs.Cursor()
	}
	return got, cur
}

// A server's stderr read by cursor: each line once, however often its text
// repeats and however far the ring (200 lines) wrapped meanwhile; after a
// restart the next session's lines, under its own generation, from its
// first.
func TestLogsByCursor(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("l", "--stderr-echo")}, time.Hour)
	s := h.waitPhase("l", wire.PhaseReady)
	logs, err := h.c.Logs("l", wire.LogCursor{})
	require.NoError(t, err)
	require.Equal(t, s.ObservedGeneration, logs.Session)
	require.Empty(t, logs.Lines)
	cur := logs.Cursor()

	burst := strings.TrimSuffix(strings.Repeat("same\n", 150), "\n")
	var got []string
	for range 2 {
		h.echoStderr("l", burst)
		var lines []string
		lines, cur = h.follow("l", cur, 150)
		got = append(got, lines...)
	}
	require.Equal(t, slices.Repeat([]string{"same"}, 300), got)
	require.Equal(t, int64(300), cur.Line)
	logs, err = h.c.Logs("l", cur)
	require.NoError(t, err)
	require.Empty(t, logs.Lines, "nothing after the last line")
	logs, err = h.c.Logs("l", wire.LogCursor{Session: cur.Session})
	require.NoError(t, err)
	require.Len(t, logs.Lines, 200, "from the start: what the ring keeps")

	// A restart: the waiter is woken by the new session, whose lines
	// start over.
	woken := make(chan wire.Logs, 1)
	go func() {
		l, err := h.c.WaitLogs(t.Context(), "l", cur)
		if err != nil {
			t.Error(err)
		}
		woken <- l
	}()
	require.NoError(t, h.c.Restart("l"))
	var next wire.Logs
	select {
	case next = <-woken:
	case <-time.After(30 * time.Second):
		t.Fatal("WaitLogs did not return after a restart")
	}
	s2 := h.waitPhase("l", wire.PhaseReady)
	require.Equal(t, s2.ObservedGeneration, next.Session)
	require.Greater(t, next.Session, cur.Session)
	require.Empty(t, next.Lines)
	h.echoStderr("l", "same\nsame\nsame")
	lines, cur2 := h.follow("l", next.Cursor(), 3)
	require.Equal(t, []string{"same", "same", "same"}, lines)
	require.Equal(t, wire.LogCursor{Session: next.Session, Line: 3}, cur2)
	// A cursor of the old session reads the new one from its start.
	logs, err = h.c.Logs("l", cur)
	require.NoError(t, err)
	require.Equal(t, next.Session, logs.Session)
	require.Equal(t, []string{"same", "same", "same"}, logs.Lines)

	// Removed: the server is forgotten, and so are its lines.
	h.c.SetDesired(nil, time.Hour)
	require.Eventually(t, func() bool { return !h.listed("l") }, 30*time.Second, 5*time.Millisecond)
	_, err = h.c.Logs("l", cur2)
	require.ErrorIs(t, err, ErrUnknownServer)
}

// A waiter ends with its context, and with an error once its server is
// forgotten; an ended session's lines are read under their own cursor.
func TestWaitLogsEnds(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := h.c.WaitLogs(ctx, "nope", wire.LogCursor{})
	require.ErrorIs(t, err, ErrUnknownServer)

	h.c.SetDesired([]schema.Server{testServer("w", "--stderr-echo")}, time.Hour)
	h.waitPhase("w", wire.PhaseReady)
	h.echoStderr("w", "one\ntwo")
	lines, cur := h.follow("w", wire.LogCursor{Session: h.server("w").ObservedGeneration}, 2)
	require.Equal(t, []string{"one", "two"}, lines)

	_, err = h.c.WaitLogs(ctx, "w", cur)
	require.ErrorIs(t, err, context.Canceled)

	// Disabled: the session ended, its lines are kept under its cursor.
	off := testServer("w", "--stderr-echo")
	off.Enabled = false
	h.c.SetDesired([]schema.Server{off}, time.Hour)
	h.waitPhase("w", wire.PhaseDisabled)
	logs, err := h.c.Logs("w", wire.LogCursor{Session: cur.Session, Line: 1})
	require.NoError(t, err)
	require.Equal(t, wire.Logs{Server: "w", Lines: []string{"two"}, Session: cur.Session, Last: 2}, logs)

	waiting := make(chan error, 1)
	go func() {
		_, err := h.c.WaitLogs(t.Context(), "w", cur)
		waiting <- err
	}()
	h.c.SetDesired(nil, time.Hour)
	select {
	case err := <-waiting:
		require.ErrorIs(t, err, ErrUnknownServer)
	case <-time.After(30 * time.Second):
		t.Fatal("a waiter on a forgotten server was not woken")
	}
}

// A server that turns from local into remote: the remote session has no
// lines of its own, during it and after it, and is never shown the local
// session's.
func TestLogsOfARemoteSessionAreItsOwn(t *testing.T) {
	srv, err := testserver.New(testserver.Config{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.ServeHTTP(ctx, ln, testserver.ModeStreamable) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, srv.Close())
	})

	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("m", "--stderr-echo")}, time.Hour)
	h.waitPhase("m", wire.PhaseReady)
	h.echoStderr("m", "local line")
	local, _ := h.follow("m", wire.LogCursor{Session: h.server("m").ObservedGeneration}, 1)
	require.Equal(t, []string{"local line"}, local)

	remote := schema.MCP{}.Resolve(schema.Server{Name: "m", Type: schema.Remote, URL: testserver.URL(ln.Addr(), testserver.ModeStreamable),
		Transport: schema.TransportStreamableHTTP, Enabled: true, Timeout: 10 * time.Second, Source: schema.SourceUser})
	h.c.SetDesired([]schema.Server{remote}, time.Hour)
	require.Eventually(t, func() bool {
		s := h.server("m")
		return s.Phase == wire.PhaseReady && s.SpecHash == remote.SpecHash()
	}, 30*time.Second, 5*time.Millisecond)
	gen := h.server("m").ObservedGeneration
	logs, err := h.c.Logs("m", wire.LogCursor{})
	require.NoError(t, err)
	require.Equal(t, wire.Logs{Server: "m", Lines: []string{}, Session: gen}, logs, "while it runs")

	off := remote
	off.Enabled = false
	h.c.SetDesired([]schema.Server{off}, time.Hour)
	h.waitPhase("m", wire.PhaseDisabled)
	logs, err = h.c.Logs("m", wire.LogCursor{})
	require.NoError(t, err)
	require.Equal(t, wire.Logs{Server: "m", Lines: []string{}, Session: gen}, logs, "once it ended")
	require.Empty(t, h.server("m").StderrTail)
}

// A server's log holds its log messages beside its stderr, while it runs
// and once it ended; the status' StderrTail (what errors quote) holds its
// stderr only.
func TestLogsHoldLogMessages(t *testing.T) {
	h := newHarness(t)
	srv := testServer("g", "--stderr-echo", "--logging")
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	gen := h.waitPhase("g", wire.PhaseReady).ObservedGeneration
	tool, ok := h.reg.Get(mcp.ToolID("g", "log"))
	require.True(t, ok)
	_, err := tool.Call(t.Context(), json.RawMessage(`{"level":"warning","logger":"db","text":"slow query"}`), nil)
	require.NoError(t, err)
	h.echoStderr("g", "on stderr")
	got, _ := h.follow("g", wire.LogCursor{Session: gen}, 2)
	require.ElementsMatch(t, []string{"[warning] db: slow query", "on stderr"}, got)

	off := srv
	off.Enabled = false
	h.c.SetDesired([]schema.Server{off}, time.Hour)
	h.waitPhase("g", wire.PhaseDisabled)
	logs, err := h.c.Logs("g", wire.LogCursor{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"[warning] db: slow query", "on stderr"}, logs.Lines, "once it ended")
	require.Equal(t, []string{"on stderr"}, h.server("g").StderrTail)
}
