package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// fixture is an API server over testEngine: a real registry, orchestrator
// and approvals with a fake backend (fakeBackend) for status, restart and
// logs.
type fixture struct {
	reg    *registry.Registry
	bus    *event.Bus
	client *Client
	socket string
	logs   *fakeBackend
	elicit *Elicitations
}

// testEngine is an Engine composed as serve.Core composes its parts, with
// this package's helpers for Engines (RunCall, ToolsOf, NewEventStream,
// NewLogStream), and fakeBackend in place of the controller. It offers no
// resources or prompts.
type testEngine struct {
	servers   *fakeBackend
	bus       *event.Bus
	defs      *defs.DefsCache
	orch      *orchestrator.Orchestrator
	approvals *Approvals
	elicit    *Elicitations
	calls     atomic.Uint64
}

var _ Engine = (*testEngine)(nil)

// newTestEngine is a testEngine over reg with rules, whose approvals time
// out after approvalTimeout.
func newTestEngine(bus *event.Bus, reg *registry.Registry, rules orchestrator.Rules, approvalTimeout time.Duration) *testEngine {
	e := &testEngine{servers: &fakeBackend{}, bus: bus, defs: defs.NewDefsCache(reg, defs.Options{}),
		approvals: NewApprovals(bus, approvalTimeout), elicit: NewElicitations(bus, 0)}
	e.orch = orchestrator.New(orchestrator.Options{Registry: reg, Rules: func() orchestrator.Rules { return rules }, Approver: e.approvals})
	return e
}

func (e *testEngine) Status(context.Context) (wire.Status, error) { return e.servers.Status(), nil }
func (e *testEngine) Tools(_ context.Context, d string) (Tools, error) {
	return ToolsOf(e.defs, d, false)
}
func (e *testEngine) ToolsSummary(_ context.Context, d string) (Tools, error) {
	return ToolsOf(e.defs, d, true)
}
func (e *testEngine) ServerTools(_ context.Context, name string) (wire.ServerTools, error) {
	st, err := e.servers.Tools(name)
	st.Hidden = nil
	return st, err
}
func (e *testEngine) AllServerTools(_ context.Context, name string) (wire.ServerTools, error) {
	return e.servers.Tools(name)
}
func (e *testEngine) Lists(context.Context) (wire.Lists, error) {
	st, err := e.servers.Tools("one")
	st.Hidden = nil
	return wire.Lists{Tools: []wire.ServerTools{st}, Resources: wire.Resources{Servers: []wire.ServerResources{}},
		Prompts: wire.Prompts{Servers: []wire.ServerPrompts{}}}, err
}
func (e *testEngine) ClearLoaded(context.Context) error { e.defs.ResetLoaded(); return nil }
func (e *testEngine) CallWith(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (CallResponse, error) {
	if opts.ID == "" {
		opts.ID = fmt.Sprintf("api-%d", e.calls.Add(1))
	}
	return RunCall(ctx, e.orch, e.bus, tool, args, opts)
}
func (e *testEngine) Approvals(context.Context) ([]Approval, error) {
	return e.approvals.Pending(), nil
}
func (e *testEngine) Answer(_ context.Context, id string, approve bool) error {
	return e.approvals.Answer(id, approve)
}
func (e *testEngine) Elicitations(context.Context) ([]wire.Elicitation, error) {
	return e.elicit.Pending(), nil
}
func (e *testEngine) AnswerElicitation(_ context.Context, id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error) {
	return e.elicit.Answer(id, a)
}
func (e *testEngine) Restart(_ context.Context, name string) error { return e.servers.Restart(name) }
func (e *testEngine) Logs(_ context.Context, name string) (wire.Logs, error) {
	logs, err := e.servers.Logs(name, wire.LogCursor{})
	logs.Server = name
	return logs, err
}
func (e *testEngine) FollowLogs(ctx context.Context, name string) (Stream, error) {
	logs, err := e.servers.Logs(name, wire.LogCursor{})
	if err != nil {
		return nil, err
	}
	return NewLogStream(ctx, logs, func(ctx context.Context, after wire.LogCursor) (wire.Logs, error) {
		return e.servers.WaitLogs(ctx, name, after)
	}), nil
}
func (e *testEngine) Events(ctx context.Context) (Stream, error) {
	return NewEventStream(ctx, e.bus), nil
}

// errNoFeatures answers the resources and prompts of testEngine.
var errNoFeatures = WithKind(errors.New("this serve offers no resources or prompts"), ErrNotFound)

func (e *testEngine) Resources(context.Context, string) (wire.Resources, error) {
	return wire.Resources{}, errNoFeatures
}
func (e *testEngine) Prompts(context.Context, string) (wire.Prompts, error) {
	return wire.Prompts{}, errNoFeatures
}
func (e *testEngine) ReadResource(context.Context, string, string) (wire.ResourceRead, error) {
	return wire.ResourceRead{}, errNoFeatures
}
func (e *testEngine) GetPrompt(context.Context, string, string, map[string]string) (wire.PromptResult, error) {
	return wire.PromptResult{}, errNoFeatures
}
func (e *testEngine) Subscribe(context.Context, string, string, bool) error { return errNoFeatures }
func (e *testEngine) Complete(context.Context, string, wire.CompletionRequest) (wire.Completion, error) {
	return wire.Completion{}, errNoFeatures
}

// fakeBackend serves one server, "one", whose stderr is what write and
// newSession say, numbered as a session numbers its lines.
type fakeBackend struct {
	mu      sync.Mutex    // guards lines, session and wake
	lines   []string      // the current session's, line n at n-1
	session int64         // the current session
	wake    chan struct{} // closed by the next write or session
}

// write adds lines to the current session's stderr.
func (b *fakeBackend) write(lines ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, lines...)
	b.wakeLocked()
}

// newSession starts the next session, which writes lines.
func (b *fakeBackend) newSession(lines ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = slices.Clone(lines)
	b.session++
	b.wakeLocked()
}

func (b *fakeBackend) wakeLocked() {
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

func (b *fakeBackend) Status() wire.Status {
	return wire.Status{Servers: []wire.ServerStatus{{Name: "one", Desired: wire.Desired{Enabled: true}, Phase: "ready", Tools: 1}}}
}

func (b *fakeBackend) Restart(name string) error {
	switch name {
	case "one":
		return nil
	case "off":
		return fmt.Errorf("restart %q: server is disabled: %w", name, ErrConflict)
	case "broken":
		return errors.New("restart: the backend broke")
	}
	return fmt.Errorf("restart %q: %w", name, ErrNotFound)
}

func (b *fakeBackend) Tools(name string) (wire.ServerTools, error) {
	if name != "one" {
		return wire.ServerTools{}, fmt.Errorf("server %q: %w", name, ErrNotFound)
	}
	return wire.ServerTools{Server: "one", Phase: wire.PhaseReady, Tools: []wire.Tool{{ID: "mcp__one__t", Name: "t", ReadOnly: true,
		Annotations: json.RawMessage(`{"readOnlyHint":true}`), InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Hidden: []wire.HiddenTool{{Name: "secret", Reason: `tools.exclude "s*"`}}}, nil
}

func (b *fakeBackend) Logs(name string, after wire.LogCursor) (wire.Logs, error) {
	logs, _, err := b.read(name, after)
	return logs, err
}

func (b *fakeBackend) WaitLogs(ctx context.Context, name string, after wire.LogCursor) (wire.Logs, error) {
	for {
		logs, wake, err := b.read(name, after)
		if err != nil || logs.Session != after.Session || len(logs.Lines) > 0 {
			return logs, err
		}
		select {
		case <-ctx.Done():
			return wire.Logs{}, ctx.Err()
		case <-wake:
		}
	}
}

func (b *fakeBackend) read(name string, after wire.LogCursor) (wire.Logs, <-chan struct{}, error) {
	if name != "one" {
		return wire.Logs{}, nil, fmt.Errorf("logs of %q: %w", name, ErrNotFound)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake == nil {
		b.wake = make(chan struct{})
	}
	n := after.Line
	if after.Session != b.session {
		n = 0
	}
	n = min(n, int64(len(b.lines)))
	return wire.Logs{Lines: slices.Clone(b.lines[n:]), Session: b.session, Last: int64(len(b.lines))}, b.wake, nil
}

func newFixture(t *testing.T, rules orchestrator.Rules, approvalTimeout time.Duration) *fixture {
	t.Helper()
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	require.NoError(t, registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: t.TempDir()}))
	e := newTestEngine(bus, reg, rules, approvalTimeout)
	f := &fixture{reg: reg, bus: bus, logs: e.servers, elicit: e.elicit}
	srv := NewServer(e, ServerOptions{})
	dir, err := os.MkdirTemp("", "fcapi")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	f.socket = filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", f.socket)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	f.client, err = Dial(f.socket)
	require.NoError(t, err)
	t.Cleanup(func() {
		f.client.Close()
		cancel()
		require.NoError(t, <-done)
	})
	return f
}

// nextEvent returns the next event of kind, skipping others.
func nextEvent(t *testing.T, s Stream, kind string) Event {
	t.Helper()
	for {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Kind == kind {
			return ev
		}
	}
}

func TestDialNotRunning(t *testing.T) {
	_, err := Dial(filepath.Join(t.TempDir(), "none.sock"))
	require.ErrorIs(t, err, ErrNotRunning)
}

func TestStatusToolsRestartLogs(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	ctx := t.Context()
	st, err := f.client.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Servers, 1)
	assert.Equal(t, wire.PhaseReady, st.Servers[0].Phase)

	for _, d := range []string{"", "jsonschema", "openai", "gemini"} {
		tools, err := f.client.Tools(ctx, d)
		require.NoError(t, err, d)
		assert.Len(t, tools.Tools, 2, d)
		assert.Equal(t, 2, tools.Count, d)
		assert.Len(t, tools.Version, 64, d)
		sum, err := f.client.ToolsSummary(ctx, d)
		require.NoError(t, err, d)
		assert.Empty(t, sum.Tools, "a summary holds no definitions")
		assert.Equal(t, 2, sum.Count, d)
		assert.Equal(t, tools.Version, sum.Version, d)
		assert.Equal(t, tools.EstimatedTokens, sum.EstimatedTokens, d)
		assert.Positive(t, sum.EstimatedTokens, d)
	}
	_, err = f.client.Tools(ctx, "cobol")
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Contains(t, apiErr.Message, `unknown dialect "cobol"`)

	require.NoError(t, f.client.Restart(ctx, "one"))
	err = f.client.Restart(ctx, "two")
	require.ErrorIs(t, err, ErrNotFound)
	assert.EqualError(t, err, `restart "two": not found`)

	f.logs.write("a", "b")
	lines, err := f.client.Logs(ctx, "one")
	require.NoError(t, err)
	assert.Equal(t, wire.Logs{Server: "one", Lines: []string{"a", "b"}}, lines)
	_, err = f.client.Logs(ctx, "two")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestFollowLogs(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	f.logs.write("a", "b")
	s, err := f.client.FollowLogs(t.Context(), "one")
	require.NoError(t, err)
	defer s.Close()
	next := func() string {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Kind == wire.KindLogSession {
			return "session " + ev.Data
		}
		require.Equal(t, wire.KindLogLine, ev.Kind)
		return ev.Data
	}
	assert.Equal(t, `session {"session":0}`, next())
	assert.Equal(t, "a", next())
	assert.Equal(t, "b", next())
	f.logs.write("c", "d")
	assert.Equal(t, "c", next())
	assert.Equal(t, "d", next())
	f.logs.write("fresh")
	assert.Equal(t, "fresh", next())
	// The same text again is new lines, each sent once.
	f.logs.write("d", "d")
	assert.Equal(t, "d", next())
	assert.Equal(t, "d", next())
	f.logs.write("end")
	assert.Equal(t, "end", next())
	f.logs.newSession("b", "c", "d") // a restart printing the same lines again
	assert.Equal(t, `session {"session":1}`, next())
	assert.Equal(t, "b", next())
	assert.Equal(t, "c", next())
	assert.Equal(t, "d", next())

	_, err = f.client.FollowLogs(t.Context(), "two")
	require.ErrorIs(t, err, ErrNotFound)
}

// Every error reaches the client with the status code errorStatus gives
// it and its own message.
func TestErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		kind string
	}{
		{fmt.Errorf("restart %q: %w", "x", ErrNotFound), http.StatusNotFound, ""},
		{fmt.Errorf("restart %q: %w", "x", ErrConflict), http.StatusConflict, ""},
		{fmt.Errorf("prompt: %w", ErrBadRequest), http.StatusBadRequest, ""},
		{fmt.Errorf("read: %w", ErrTimeout), http.StatusGatewayTimeout, KindTimeout},
		{fmt.Errorf("call: %w", orchestrator.ErrUnknownTool), http.StatusNotFound, KindUnknownTool},
		{orchestrator.ErrDenied, http.StatusForbidden, KindDenied},
		{orchestrator.ErrNotApproved, http.StatusForbidden, KindNotApproved},
		{orchestrator.ErrInvalidArgs, http.StatusBadRequest, KindInvalidArgs},
		{orchestrator.ErrCallTimeout, http.StatusGatewayTimeout, KindTimeout},
		{registry.ErrTransport, http.StatusBadGateway, KindTransport},
		{orchestrator.ErrToolPanicked, http.StatusInternalServerError, KindPanicked},
		{context.Canceled, http.StatusServiceUnavailable, KindCanceled},
		{errors.New("anything else"), http.StatusInternalServerError, KindFailed},
	} {
		code, kind := errorStatus(tc.err)
		assert.Equal(t, tc.code, code, tc.err.Error())
		assert.Equal(t, tc.kind, kind, tc.err.Error())
	}

	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	for name, want := range map[string]struct {
		code int
		msg  string
	}{
		"off":    {http.StatusConflict, `restart "off": server is disabled: conflict`},
		"nope":   {http.StatusNotFound, `restart "nope": not found`},
		"broken": {http.StatusInternalServerError, "restart: the backend broke"},
	} {
		err := f.client.Restart(t.Context(), name)
		var apiErr *Error
		require.ErrorAs(t, err, &apiErr, name)
		assert.Equal(t, want.code, apiErr.Status, name)
		assert.Equal(t, want.msg, apiErr.Message, name)
		assert.Equal(t, want.code == http.StatusConflict, errors.Is(err, ErrConflict), name)
		assert.Equal(t, want.code == http.StatusNotFound, errors.Is(err, ErrNotFound), name)
	}

	// An Engine's errors reach the client as what they mean.
	_, err := f.client.Resources(t.Context(), "")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "this serve offers no resources or prompts")
	_, err = f.client.GetPrompt(t.Context(), "a", "b", nil)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.True(t, errors.Is(&Error{Status: http.StatusBadRequest}, ErrBadRequest))
	assert.True(t, errors.Is(&Error{Status: http.StatusGatewayTimeout}, ErrTimeout))
}

// Each event goes out as its own JSON: the wire form docs/api.md documents.
func TestEventsWire(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	events, err := f.client.Events(t.Context())
	require.NoError(t, err)
	defer events.Close()
	at := time.Date(2026, 11, 30, 7, 35, 15, 0, time.UTC)
	approval := Approval{ID: "a1", CallID: "api-2", Tool: "mcp__n__note", Args: json.RawMessage(`{"text":"x"}`), Reason: "why", Created: at}
	for _, tc := range []struct {
		ev   event.Event
		kind string
		data string
	}{
		{registry.ToolsChanged{Source: "second"}, "tools_changed", `{"source":"second"}`},
		{wire.PhaseChanged{Server: "flaky", Phase: wire.PhaseStarting}, "phase_changed", `{"server":"flaky","phase":"starting"}`},
		{wire.PhaseChanged{Server: "flaky", Phase: wire.PhaseBackoff, Err: "exited", NextRetry: at}, "phase_changed",
			`{"server":"flaky","phase":"backoff","err":"exited","nextRetry":"2026-11-30T07:35:15Z"}`},
		{wire.ConfigErrorChanged{Err: "config.json:1:2: bad"}, "config_error", `{"err":"config.json:1:2: bad"}`},
		{wire.ConfigErrorChanged{}, "config_error", `{}`},
		{ApprovalRequested{approval}, "approval_requested",
			`{"id":"a1","callId":"api-2","tool":"mcp__n__note","args":{"text":"x"},"readOnly":false,"reason":"why","created":"2026-11-30T07:35:15Z"}`},
		{ApprovalAnswered{ID: "a1", Reason: "timeout"}, "approval_answered", `{"id":"a1","approved":false,"reason":"timeout"}`},
	} {
		f.bus.Publish(tc.ev)
		ev := nextEvent(t, events, tc.kind)
		assert.Equal(t, tc.data, ev.Data, tc.kind)
	}
}

func TestCallErrors(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{Deny: []string{"write"}}, time.Minute)
	ctx := t.Context()

	_, err := f.client.Call(ctx, "nope", nil)
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.Status)
	assert.Equal(t, KindUnknownTool, apiErr.Call.Kind)
	assert.True(t, apiErr.Call.Result.IsError)
	assert.Contains(t, apiErr.Call.Result.Text(), `tool "nope" is not available`)

	resp, err := f.client.Call(ctx, "write", json.RawMessage(`{"path":"x","content":"y"}`))
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusForbidden, apiErr.Status)
	assert.Equal(t, KindDenied, resp.Kind)
	assert.Contains(t, resp.Result.Text(), `denied by rule "write" in permission.deny`)

	resp, err = f.client.Call(ctx, "read", json.RawMessage(`{"offset":1}`))
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Equal(t, KindInvalidArgs, resp.Kind)

	resp, err = f.client.Call(ctx, "read", json.RawMessage(`{"path":"missing.txt"}`))
	require.NoError(t, err, "a tool-level failure is a completed call")
	assert.True(t, resp.Result.IsError)
}

func TestApprovalFlow(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	ctx := t.Context()
	events, err := f.client.Events(ctx)
	require.NoError(t, err)
	defer events.Close()

	type result struct {
		resp CallResponse
		err  error
	}
	call := func(content string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			r, err := f.client.Call(ctx, "write", json.RawMessage(`{"path":"out.txt","content":"`+content+`"}`))
			ch <- result{r, err}
		}()
		return ch
	}

	// Approved: the call proceeds.
	done := call("yes")
	var req Approval
	require.NoError(t, nextEvent(t, events, wire.KindApprovalRequested).Decode(&req))
	assert.Equal(t, "write", req.Tool)
	assert.Contains(t, req.Reason, "approval required")
	assert.JSONEq(t, `{"path":"out.txt","content":"yes"}`, string(req.Args))
	pending, err := f.client.Approvals(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, req.ID, pending[0].ID)
	require.NoError(t, f.client.Answer(ctx, req.ID, true))
	r := <-done
	require.NoError(t, r.err)
	assert.False(t, r.resp.Result.IsError, r.resp.Result.Text())
	var answered ApprovalAnswered
	require.NoError(t, nextEvent(t, events, wire.KindApprovalAnswered).Decode(&answered))
	assert.Equal(t, ApprovalAnswered{ID: req.ID, Approved: true}, answered)

	// Answering twice is a 404.
	require.ErrorIs(t, f.client.Answer(ctx, req.ID, true), ErrNotFound)

	// Denied: a model-readable refusal.
	done = call("no")
	require.NoError(t, nextEvent(t, events, wire.KindApprovalRequested).Decode(&req))
	require.NoError(t, f.client.Answer(ctx, req.ID, false))
	r = <-done
	var apiErr *Error
	require.ErrorAs(t, r.err, &apiErr)
	assert.Equal(t, http.StatusForbidden, apiErr.Status)
	assert.Equal(t, KindNotApproved, r.resp.Kind)
	assert.True(t, r.resp.Result.IsError)
	assert.Equal(t, `the call to "write" was not approved`, r.resp.Result.Text())
	pending, err = f.client.Approvals(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// GET /v1/servers/{name}/tools answers one server's tools in the wire's
// terms; an unknown server is a 404.
func TestServerTools(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	st, err := f.client.ServerTools(t.Context(), "one")
	require.NoError(t, err)
	assert.Equal(t, "one", st.Server)
	assert.Equal(t, wire.PhaseReady, st.Phase)
	require.Len(t, st.Tools, 1)
	assert.Equal(t, wire.Tool{ID: "mcp__one__t", Name: "t", ReadOnly: true, Annotations: json.RawMessage(`{"readOnlyHint":true}`),
		InputSchema: json.RawMessage(`{"type":"object"}`)}, st.Tools[0])
	assert.Empty(t, st.Hidden, "tools hidden by the filter are only listed when asked for")
	_, err = f.client.ServerTools(t.Context(), "two")
	require.ErrorIs(t, err, ErrNotFound)

	all, err := f.client.AllServerTools(t.Context(), "one")
	require.NoError(t, err)
	assert.Equal(t, st.Tools, all.Tools)
	assert.Equal(t, []wire.HiddenTool{{Name: "secret", Reason: `tools.exclude "s*"`}}, all.Hidden)
}

// GET /v1/lists answers every server's tools, resources and prompts in
// one answer, as ServerTools answers each server's.
func TestLists(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	ls, err := f.client.Lists(t.Context())
	require.NoError(t, err)
	one, err := f.client.ServerTools(t.Context(), "one")
	require.NoError(t, err)
	assert.Equal(t, []wire.ServerTools{one}, ls.Tools)
	assert.Empty(t, ls.Resources.Servers)
	assert.Empty(t, ls.Prompts.Servers)
}

// A caller names its call, and its approval carries that name; a caller's
// timeout replaces the configured one.
func TestCallOptions(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	ctx := t.Context()
	events, err := f.client.Events(ctx)
	require.NoError(t, err)
	defer events.Close()
	done := make(chan error, 1)
	go func() {
		_, err := f.client.CallWith(ctx, "write", json.RawMessage(`{"path":"o.txt","content":"x"}`), CallOptions{ID: "cli-42-ab"})
		done <- err
	}()
	var req Approval
	require.NoError(t, nextEvent(t, events, wire.KindApprovalRequested).Decode(&req))
	assert.Equal(t, "cli-42-ab", req.CallID)
	require.NoError(t, f.client.Answer(ctx, req.ID, true))
	require.NoError(t, <-done)

	_, err = f.client.CallWith(ctx, "read", nil, CallOptions{ID: "no spaces"})
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Contains(t, apiErr.Message, "callId must be")

	_, err = f.reg.ReplaceSource("slow", []registry.Tool{{ID: "mcp__slow__wait", ReadOnly: true,
		Call: func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
			<-ctx.Done()
			return wire.CallResult{}, ctx.Err()
		}}})
	require.NoError(t, err)
	resp, err := f.client.CallWith(ctx, "mcp__slow__wait", nil, CallOptions{Timeout: 50 * time.Millisecond})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusGatewayTimeout, apiErr.Status)
	assert.Equal(t, KindTimeout, resp.Kind)
	assert.Contains(t, resp.Error, "did not finish within 50ms")

	for _, q := range []string{"timeout=0", "timeout=5s", "timeout=86400001"} {
		r, err := f.client.do(ctx, http.MethodPost, "/v1/tools/read/call?"+q, json.RawMessage(`{}`))
		require.NoError(t, err)
		r.Body.Close()
		assert.Equal(t, http.StatusBadRequest, r.StatusCode, q)
	}
}

func TestApprovalTimeout(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, 50*time.Millisecond)
	resp, err := f.client.Call(t.Context(), "write", json.RawMessage(`{"path":"x","content":"y"}`))
	require.Error(t, err)
	assert.Equal(t, KindNotApproved, resp.Kind)
	assert.Contains(t, resp.Result.Text(), "nobody answered the approval request in time")
}

func TestApprovalCallerGone(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	events, err := f.client.Events(t.Context())
	require.NoError(t, err)
	defer events.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := f.client.Call(ctx, "write", json.RawMessage(`{"path":"x","content":"y"}`))
		done <- err
	}()
	nextEvent(t, events, wire.KindApprovalRequested)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	var answered ApprovalAnswered
	require.NoError(t, nextEvent(t, events, wire.KindApprovalAnswered).Decode(&answered))
	assert.Equal(t, "canceled", answered.Reason)
	pending, err := f.client.Approvals(t.Context())
	require.NoError(t, err)
	assert.Empty(t, pending)
}

func TestEventsToolsChanged(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	events, err := f.client.Events(t.Context())
	require.NoError(t, err)
	defer events.Close()
	tool := registry.Tool{ID: "mcp__x__t", Description: "t", Call: func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		return wire.TextResult("ok"), nil
	}}
	changed, err := f.reg.ReplaceSource("x", []registry.Tool{tool})
	require.NoError(t, err)
	require.True(t, changed)
	ev, err := events.Next()
	require.NoError(t, err)
	assert.Equal(t, wire.KindToolsChanged, ev.Kind)
	assert.JSONEq(t, `{"source":"x"}`, ev.Data)
}

func TestStreamsEndWhenServerStops(t *testing.T) {
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	srv := NewServer(newTestEngine(bus, reg, orchestrator.Rules{}, 0), ServerOptions{})
	dir, err := os.MkdirTemp("", "fcapi")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c, err := Dial(filepath.Join(dir, "s.sock"))
	require.NoError(t, err)
	defer c.Close()
	events, err := c.Events(t.Context())
	require.NoError(t, err)
	defer events.Close()
	cancel()
	require.NoError(t, <-done)
	_, err = events.Next()
	require.Error(t, err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
	require.Equal(t, 0, bus.Subscribers())
}

// A connection that never sent a request (a client's spare dial) does not
// hold the shutdown: net/http would count it as busy for 5 s, the whole
// grace, and Serve would end with an error.
func TestShutdownClosesConnectionsWithoutARequest(t *testing.T) {
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	srv := NewServer(newTestEngine(bus, reg, orchestrator.Rules{}, 0), ServerOptions{})
	dir, err := os.MkdirTemp("", "fcapi")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	idle, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer idle.Close()
	// Connections are accepted in order, each marked new before the next
	// is accepted: once a later one is answered, idle is the server's.
	c, err := Dial(sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Status(t.Context())
	require.NoError(t, err)
	cancel()
	require.NoError(t, <-done)
	_, err = idle.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")
}

// specEvents reads n events from an event stream the way the HTML
// standard's parser does: a line ends at CRLF, a lone CR or a lone LF.
func specEvents(t *testing.T, r io.Reader, n int) []Event {
	t.Helper()
	br := bufio.NewReader(r)
	var events []Event
	var line []byte
	kind, data, hasData := "", "", false
	dispatch := func() {
		if hasData {
			if kind == "" {
				kind = "message"
			}
			events = append(events, Event{Kind: kind, Data: strings.TrimSuffix(data, "\n")})
		}
		kind, data, hasData = "", "", false
	}
	field := func(l string) {
		name, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			kind = value
		case "data":
			data += value + "\n"
			hasData = true
		}
	}
	for len(events) < n {
		b, err := br.ReadByte()
		require.NoError(t, err)
		if b != '\r' && b != '\n' {
			line = append(line, b)
			continue
		}
		if b == '\r' {
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
		}
		if len(line) == 0 {
			dispatch()
		} else if line[0] != ':' {
			field(string(line))
		}
		line = line[:0]
	}
	return events
}

// A server's stderr line is one line event whatever line breaks it holds:
// a CR must not end the data line and start forged fields.
func TestFollowLogsLineBreaksStayInData(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	f.logs.write("x\revent: approval_requested\rdata: {}", "two\r\nlines\nthree", "after")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://freecode/v1/servers/one/logs?follow=1", nil)
	require.NoError(t, err)
	resp, err := f.client.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := specEvents(t, resp.Body, 4)
	kinds := make([]string, len(events))
	for i, ev := range events {
		kinds[i] = ev.Kind
	}
	require.Equal(t, []string{wire.KindLogSession, wire.KindLogLine, wire.KindLogLine, wire.KindLogLine}, kinds)
	require.NotContains(t, events[1].Data, "\n")
	require.Contains(t, events[1].Data, "approval_requested", "the line's text is kept")
	require.Equal(t, "after", events[3].Data)
}

// A tool's progress during a call through the API is published as
// call_progress events naming the call and the tool, in order.
func TestCallProgressEvents(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{Allow: []string{"mcp__p"}}, time.Minute)
	_, err := f.reg.ReplaceSource("p", []registry.Tool{{
		ID: "mcp__p__steps", Source: "p", Name: "steps", ReadOnly: true,
		Call: func(_ context.Context, _ json.RawMessage, fn func(wire.Progress)) (wire.CallResult, error) {
			if fn == nil {
				return wire.CallResult{}, errors.New("no progress asked for")
			}
			fn(wire.Progress{Progress: 1, Total: 2, Message: "half"})
			fn(wire.Progress{Progress: 2, Total: 2})
			return wire.CallResult{Content: []wire.Content{{Type: "text", Text: "done"}}}, nil
		},
	}})
	require.NoError(t, err)
	events, err := f.client.Events(t.Context())
	require.NoError(t, err)
	defer events.Close()
	res, err := f.client.CallWith(t.Context(), "mcp__p__steps", nil, CallOptions{ID: "c7"})
	require.NoError(t, err)
	require.Empty(t, res.Error)
	require.Equal(t, `{"callId":"c7","tool":"mcp__p__steps","progress":1,"total":2,"message":"half"}`, nextEvent(t, events, wire.KindCallProgress).Data)
	require.Equal(t, `{"callId":"c7","tool":"mcp__p__steps","progress":2,"total":2}`, nextEvent(t, events, wire.KindCallProgress).Data)
	require.Equal(t, 2, res.Progress, "the answer counts the events published before it")

	// progress=0: nobody follows it, so the tool is asked for none.
	res, err = f.client.CallWith(t.Context(), "mcp__p__steps", nil, CallOptions{ID: "c8", NoProgress: true})
	require.Error(t, err)
	require.Contains(t, res.Error, "no progress asked for")
	require.Zero(t, res.Progress)
}
