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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
)

// fixture is an API server over a real registry, orchestrator and approvals
// with a fake backend for status, restart and logs.
type fixture struct {
	reg    *registry.Registry
	client *Client
	socket string

	mu      sync.Mutex // guards logs and session
	logs    []string
	session int64
}

func (f *fixture) setLogs(lines ...string) {
	f.mu.Lock()
	f.logs = slices.Clone(lines)
	f.mu.Unlock()
}

func (f *fixture) newSession(lines ...string) {
	f.mu.Lock()
	f.logs = slices.Clone(lines)
	f.session++
	f.mu.Unlock()
}

func newFixture(t *testing.T, rules orchestrator.Rules, approvalTimeout time.Duration) *fixture {
	t.Helper()
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	require.NoError(t, registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: t.TempDir()}))
	f := &fixture{reg: reg}
	approvals := NewApprovals(bus, approvalTimeout)
	srv := NewServer(Options{
		Status: func() Status {
			return Status{Servers: []ServerStatus{{Name: "one", Desired: Desired{Enabled: true}, Phase: "ready", Tools: 1}}}
		},
		Restart: func(name string) error {
			if name != "one" {
				return fmt.Errorf("restart %q: %w", name, ErrNotFound)
			}
			return nil
		},
		Logs: func(name string) (Logs, error) {
			if name != "one" {
				return Logs{}, WithStatus(fmt.Errorf("logs of %q: unknown server", name), http.StatusNotFound)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return Logs{Lines: slices.Clone(f.logs), Session: f.session}, nil
		},
		Bus:       bus,
		Defs:      defs.NewDefsCache(reg),
		Runner:    orchestrator.New(orchestrator.Options{Registry: reg, Rules: func() orchestrator.Rules { return rules }, Approver: approvals}),
		Approvals: approvals,
		LogPoll:   10 * time.Millisecond,
	})
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
func nextEvent(t *testing.T, s *Stream, kind string) Event {
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
	assert.Equal(t, "ready", st.Servers[0].Phase)

	for _, d := range []string{"", "jsonschema", "openai", "gemini"} {
		tools, err := f.client.Tools(ctx, d)
		require.NoError(t, err, d)
		assert.Len(t, tools.Tools, 2, d)
		assert.Len(t, tools.Version, 64, d)
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

	f.setLogs("a", "b")
	lines, err := f.client.Logs(ctx, "one")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, lines)
	_, err = f.client.Logs(ctx, "two")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestFollowLogs(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	f.setLogs("a", "b")
	s, err := f.client.FollowLogs(t.Context(), "one")
	require.NoError(t, err)
	defer s.Close()
	next := func() string {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Kind == "session" {
			return "session " + ev.Data
		}
		require.Equal(t, "line", ev.Kind)
		return ev.Data
	}
	assert.Equal(t, `session {"session":0}`, next())
	assert.Equal(t, "a", next())
	assert.Equal(t, "b", next())
	f.setLogs("b", "c", "d") // the ring dropped "a" and gained two lines
	assert.Equal(t, "c", next())
	assert.Equal(t, "d", next())
	f.setLogs("b", "c", "d", "fresh")
	assert.Equal(t, "fresh", next())
	f.newSession("b", "c", "d") // a restart printing the same lines again
	assert.Equal(t, `session {"session":1}`, next())
	assert.Equal(t, "b", next())
	assert.Equal(t, "c", next())
	assert.Equal(t, "d", next())

	_, err = f.client.FollowLogs(t.Context(), "two")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestNewLines(t *testing.T) {
	for _, tc := range []struct {
		name            string
		prev, cur, want []string
	}{
		{"nothing new", []string{"a", "b"}, []string{"a", "b"}, []string{}},
		{"appended", []string{"a"}, []string{"a", "b"}, []string{"b"}},
		{"ring shifted", []string{"a", "b", "c"}, []string{"b", "c", "d"}, []string{"d"}},
		{"from empty", nil, []string{"a"}, []string{"a"}},
		{"new ring", []string{"a", "b"}, []string{"x"}, []string{"x"}},
		{"emptied", []string{"a"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := newLines(tc.prev, tc.cur)
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
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
	require.NoError(t, nextEvent(t, events, "approval_requested").Decode(&req))
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
	require.NoError(t, nextEvent(t, events, "approval_answered").Decode(&answered))
	assert.Equal(t, ApprovalAnswered{ID: req.ID, Approved: true}, answered)

	// Answering twice is a 404.
	require.ErrorIs(t, f.client.Answer(ctx, req.ID, true), ErrNotFound)

	// Denied: a model-readable refusal.
	done = call("no")
	require.NoError(t, nextEvent(t, events, "approval_requested").Decode(&req))
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
	nextEvent(t, events, "approval_requested")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	var answered ApprovalAnswered
	require.NoError(t, nextEvent(t, events, "approval_answered").Decode(&answered))
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
	tool := registry.Tool{ID: "mcp__x__t", Description: "t", Call: func(context.Context, json.RawMessage) (registry.Result, error) {
		return registry.TextResult("ok"), nil
	}}
	changed, err := f.reg.ReplaceSource("x", []registry.Tool{tool})
	require.NoError(t, err)
	require.True(t, changed)
	ev, err := events.Next()
	require.NoError(t, err)
	assert.Equal(t, "tools_changed", ev.Kind)
	assert.JSONEq(t, `{"source":"x"}`, ev.Data)
}

func TestStreamsEndWhenServerStops(t *testing.T) {
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	approvals := NewApprovals(bus, 0)
	srv := NewServer(Options{
		Status: func() Status { return Status{} }, Bus: bus, Defs: defs.NewDefsCache(reg),
		Runner: orchestrator.New(orchestrator.Options{Registry: reg}), Approvals: approvals,
	})
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
	f.setLogs("x\revent: approval_requested\rdata: {}", "two\r\nlines\nthree", "after")
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
	require.Equal(t, []string{"session", "line", "line", "line"}, kinds)
	require.NotContains(t, events[1].Data, "\n")
	require.Contains(t, events[1].Data, "approval_requested", "the line's text is kept")
	require.Equal(t, "after", events[3].Data)
}
