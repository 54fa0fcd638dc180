package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// This file holds what an Engine that runs in process (serve.Core)
// computes with the parts it owns, so that it answers exactly what Client
// gets from the API over it: the same values, the same errors, the same
// events.

// WithKind returns err, its message unchanged, that also wraps kind (one of
// this package's sentinels): errors.Is(err, kind) holds, and so does
// errors.Is for whatever err wraps.
func WithKind(err, kind error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: kind}
}

type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// badRequest is an error with message msg that wraps ErrBadRequest.
func badRequest(msg string) error { return WithKind(errors.New(msg), ErrBadRequest) }

// maxCallTimeout bounds CallOptions.Timeout: a day, as config.cue bounds
// callTimeout.
const maxCallTimeout = 24 * time.Hour

// checkCallOptions checks a call's options; its errors wrap ErrBadRequest.
func checkCallOptions(opts CallOptions) error {
	if id := opts.ID; len(id) < 1 || len(id) > 64 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "" {
		return badRequest("callId must be 1 to 64 letters, digits, '_', '-' or '.'")
	}
	if opts.Timeout > maxCallTimeout {
		return badRequest(fmt.Sprintf("timeout must be from 1 to %d milliseconds, not %d", maxCallTimeout.Milliseconds(), opts.Timeout.Milliseconds()))
	}
	return nil
}

// RunCall runs one call of toolID with args through o, as CallWith does:
// opts.ID (required) names it, and its progress goes out on bus as
// wire.CallProgress events. A call that did not complete answers the
// response, whose Result is what a model would see and whose Kind names
// the failure, and an *Error with that response as Call and the status
// the API answers it with. Wrong options are an error wrapping
// ErrBadRequest; when ctx ends before the call completed the error wraps
// ctx's cause and the response is empty, as for a Client whose request
// was cut.
func RunCall(ctx context.Context, o *orchestrator.Orchestrator, bus *event.Bus, toolID string, args json.RawMessage, opts CallOptions) (CallResponse, error) {
	if err := checkCallOptions(opts); err != nil {
		return CallResponse{}, err
	}
	// The bus never blocks a publisher: the notices cannot hold up the
	// call or anything else.
	var published atomic.Int64
	var progress func(wire.Progress) // nil: the server is not asked for any
	if !opts.NoProgress {
		progress = func(p wire.Progress) {
			published.Add(1)
			bus.Publish(wire.CallProgress{CallID: opts.ID, Tool: toolID, Progress: p})
		}
	}
	out := o.Run(ctx, []orchestrator.Call{{ID: opts.ID, Tool: toolID, Args: args, Timeout: max(opts.Timeout, 0), Progress: progress}})
	if len(out) != 1 {
		return CallResponse{}, fmt.Errorf("call %s: the orchestrator returned %d outcomes for one call", toolID, len(out))
	}
	oc := out[0]
	if oc.Err != nil && ctx.Err() != nil {
		return CallResponse{}, fmt.Errorf("call %s: %w", toolID, context.Cause(ctx))
	}
	resp := CallResponse{Tool: toolID, Result: oc.Result, Attempts: oc.Attempts, DurationMS: oc.Duration.Milliseconds(),
		Progress: int(published.Load())}
	if resp.Result.Content == nil {
		resp.Result.Content = []wire.Content{}
	}
	if oc.Err == nil {
		return resp, nil
	}
	var code int
	resp.Error = oc.Err.Error()
	code, resp.Kind = errorStatus(oc.Err)
	call := resp
	return resp, &Error{Status: code, Message: resp.Error, Call: &call}
}

// ToolsOf answers Tools (summary false) or ToolsSummary from dc. An
// unknown dialect is an error wrapping ErrBadRequest.
func ToolsOf(dc *defs.DefsCache, dialect string, summary bool) (Tools, error) {
	d := defs.Dialect(dialect)
	if d == "" {
		d = defs.DialectJSONSchema
	}
	if !slices.Contains(defs.Dialects(), d) {
		names := make([]string, 0, 3)
		for _, x := range defs.Dialects() {
			names = append(names, string(x))
		}
		return Tools{}, badRequest(fmt.Sprintf("unknown dialect %q (want one of %s)", d, strings.Join(names, ", ")))
	}
	list := dc.Defs(d)
	tools := list.Tools
	if tools == nil || summary {
		// A summary: everything but the definitions themselves.
		tools = []defs.Def{}
	}
	return Tools{Dialect: string(d), Version: list.Version, Tools: tools, Count: len(list.Tools),
		Problems: list.Problems, EstimatedTokens: list.EstimatedTokens, Deferral: list.Deferral}, nil
}

// eventBuffer is how many events a subscriber's stream holds before the
// oldest are dropped (and counted in a "missed" event).
const eventBuffer = 64

// NewEventStream subscribes to bus and returns the stream of its events as
// Client.Events gives them: each event's Kind and its JSON as Data, and a
// "missed" event {"missed": N} before an event when N were dropped
// because the stream was read too slowly. The subscription is in place
// when it returns; it ends with Close or ctx.
func NewEventStream(ctx context.Context, bus *event.Bus) Stream {
	msgs, cancel := bus.Subscribe(eventBuffer)
	s := &eventStream{msgs: msgs, cancel: cancel}
	s.stop = context.AfterFunc(ctx, cancel)
	return s
}

// eventStream is a Stream of a bus subscription. Next is called by its
// owner only; Close may be called from any goroutine, also during Next
// (it closes msgs, which Next waits on).
type eventStream struct {
	msgs   <-chan event.Message
	cancel func() // idempotent: unsubscribes and closes msgs
	stop   func() bool
	next   *Event // the event after a "missed" one Next returned
}

func (s *eventStream) Next() (Event, error) {
	if ev := s.next; ev != nil {
		s.next = nil
		return *ev, nil
	}
	m, ok := <-s.msgs
	if !ok {
		return Event{}, io.EOF
	}
	ev, err := jsonEvent(m.Event.Kind(), m.Event)
	if err != nil {
		return Event{}, err
	}
	if m.Missed > 0 {
		s.next = &ev
		return jsonEvent(wire.KindMissed, map[string]uint64{"missed": m.Missed})
	}
	return ev, nil
}

func (s *eventStream) Close() error {
	s.stop()
	s.cancel()
	return nil
}

// jsonEvent is an event whose data is v's JSON.
func jsonEvent(kind string, v any) (Event, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s event: %w", kind, err)
	}
	return Event{Kind: kind, Data: string(b)}, nil
}

// lineBreaks are what ends a line of an event stream: CRLF, CR or LF.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// LogWaiter is a server's WaitLogs: its lines after the cursor once there
// is something after it (a line, or another session), or ctx's error when
// ctx ends first.
type LogWaiter func(ctx context.Context, after wire.LogCursor) (wire.Logs, error)

// NewLogStream returns the stream FollowLogs answers, as Client.FollowLogs
// gives it: a "session" event {"session": N}, first's lines as "line"
// events, then each new line from wait, a "session" event before the
// lines of each new session. A line's data is its text with its line
// breaks (CRLF, CR, LF) made spaces, as over the API, where a line must
// stay one data line. An error of wait is an "error" event (its message),
// after which the stream ends. It ends with Close or ctx.
func NewLogStream(ctx context.Context, first wire.Logs, wait LogWaiter) Stream {
	ctx, cancel := context.WithCancel(ctx)
	return &logStream{ctx: ctx, cancel: cancel, wait: wait, logs: first, cur: wire.LogCursor{Session: -1}}
}

// logStream is a Stream of a server's stderr, read by cursor: every read
// asks for the lines after the last one returned, so each line goes out
// once, under the session that wrote it. Next is called by its owner
// only; Close may be called from any goroutine (it cancels ctx, which
// ends a wait).
type logStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	wait   LogWaiter
	logs   wire.Logs      // read, not all returned yet
	cur    wire.LogCursor // where the returned events stand (Session -1: none announced)
	ended  bool           // an error event was returned
}

func (s *logStream) Next() (Event, error) {
	for {
		if s.ended || s.ctx.Err() != nil {
			return Event{}, io.EOF
		}
		if s.logs.Session != s.cur.Session {
			s.cur = wire.LogCursor{Session: s.logs.Session}
			return jsonEvent(wire.KindLogSession, map[string]int64{"session": s.logs.Session})
		}
		if len(s.logs.Lines) > 0 {
			line := s.logs.Lines[0]
			s.logs.Lines = s.logs.Lines[1:]
			return Event{Kind: wire.KindLogLine, Data: lineBreaks.Replace(line)}, nil
		}
		s.cur = s.logs.Cursor()
		logs, err := s.wait(s.ctx, s.cur)
		if s.ctx.Err() != nil {
			return Event{}, io.EOF
		}
		if err != nil {
			s.ended = true
			return Event{Kind: wire.KindLogError, Data: lineBreaks.Replace(err.Error())}, nil
		}
		s.logs = logs
	}
}

func (s *logStream) Close() error {
	s.cancel()
	return nil
}
