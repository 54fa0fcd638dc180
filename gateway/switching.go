package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/wire"
)

// switching is the engine of a gateway attached to a running serve that,
// once that serve is gone, goes on with servers of its own (start), for
// the rest of the gateway's life: most hosts do not start a server again
// that went away, so a serve stopped or restarted must not cut its hosts
// off. Every method goes to the current engine. Calls in flight to the old
// serve fail; the event stream (Events) goes on with the new engine's
// events after a "missed" event, so that the host's next list is the new
// engine's, with one list_changed if it differs.
type switching struct {
	// start runs the servers in this process until ctx ends (the
	// gateway's) and returns that engine; gone reports whether no serve
	// runs for the home any more. Set before use, then only read.
	start func(ctx context.Context) (api.Engine, error)
	gone  func() bool
	log   logr.Logger

	mu  sync.Mutex // guards cur and own
	cur api.Engine
	own bool // cur is start's: there is nothing left to fall back to
}

var _ api.Engine = (*switching)(nil)

// get is the current engine.
func (s *switching) get() api.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// owned reports whether the current engine is start's, run by this
// process for this gateway alone.
func (s *switching) owned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own
}

// Settled waits for the first starts of the current engine's servers,
// if it starts any (see settler).
func (s *switching) Settled(ctx context.Context) bool {
	if st, ok := s.get().(settler); ok {
		return st.Settled(ctx)
	}
	return true
}

func (s *switching) Status(ctx context.Context) (wire.Status, error) { return s.get().Status(ctx) }

func (s *switching) Tools(ctx context.Context, dialect string) (api.Tools, error) {
	return s.get().Tools(ctx, dialect)
}

func (s *switching) ToolsSummary(ctx context.Context, dialect string) (api.Tools, error) {
	return s.get().ToolsSummary(ctx, dialect)
}

func (s *switching) Lists(ctx context.Context) (wire.Lists, error) { return s.get().Lists(ctx) }

func (s *switching) ServerTools(ctx context.Context, name string) (wire.ServerTools, error) {
	return s.get().ServerTools(ctx, name)
}

func (s *switching) AllServerTools(ctx context.Context, name string) (wire.ServerTools, error) {
	return s.get().AllServerTools(ctx, name)
}

func (s *switching) ClearLoaded(ctx context.Context) error { return s.get().ClearLoaded(ctx) }

func (s *switching) CallWith(ctx context.Context, toolID string, args json.RawMessage, opts api.CallOptions) (api.CallResponse, error) {
	return s.get().CallWith(ctx, toolID, args, opts)
}

func (s *switching) Resources(ctx context.Context, server string) (wire.Resources, error) {
	return s.get().Resources(ctx, server)
}

func (s *switching) Prompts(ctx context.Context, server string) (wire.Prompts, error) {
	return s.get().Prompts(ctx, server)
}

func (s *switching) ReadResource(ctx context.Context, server, uri string) (wire.ResourceRead, error) {
	return s.get().ReadResource(ctx, server, uri)
}

func (s *switching) Complete(ctx context.Context, server string, req wire.CompletionRequest) (wire.Completion, error) {
	return s.get().Complete(ctx, server, req)
}

func (s *switching) GetPrompt(ctx context.Context, server, prompt string, args map[string]string) (wire.PromptResult, error) {
	return s.get().GetPrompt(ctx, server, prompt, args)
}

func (s *switching) Subscribe(ctx context.Context, server, uri string, on bool) error {
	return s.get().Subscribe(ctx, server, uri, on)
}

func (s *switching) Approvals(ctx context.Context) ([]api.Approval, error) {
	return s.get().Approvals(ctx)
}

func (s *switching) Answer(ctx context.Context, id string, approve bool) error {
	return s.get().Answer(ctx, id, approve)
}

func (s *switching) Elicitations(ctx context.Context) ([]wire.Elicitation, error) {
	return s.get().Elicitations(ctx)
}

func (s *switching) AnswerElicitation(ctx context.Context, id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error) {
	return s.get().AnswerElicitation(ctx, id, a)
}

func (s *switching) Logs(ctx context.Context, name string) (wire.Logs, error) {
	return s.get().Logs(ctx, name)
}

func (s *switching) FollowLogs(ctx context.Context, name string) (api.Stream, error) {
	return s.get().FollowLogs(ctx, name)
}

func (s *switching) Restart(ctx context.Context, name string) error {
	return s.get().Restart(ctx, name)
}

// Resubscribing to a serve that still runs: first after
// fallbackRetry, doubling up to maxFallbackRetry.
const (
	fallbackRetry    = 100 * time.Millisecond
	maxFallbackRetry = 5 * time.Second
)

// Events subscribes to the current engine's events. The stream outlives
// the engine (switchingStream.Next): when serve's event stream ends and
// serve still runs (it restarted, or its connections were full), it
// subscribes again, after a growing delay; when no serve runs any more it
// starts the servers here, waits for their first starts (StartupWait at
// most), subscribes to their events and only then makes them the
// current engine: a list read meanwhile is never that of servers not yet
// started, and no call to them misses its approval. Either way its next
// event is "missed", for what changed meanwhile to be read again.
func (s *switching) Events(ctx context.Context) (api.Stream, error) {
	st, err := s.get().Events(ctx)
	if err != nil {
		return nil, err
	}
	return &switchingStream{s: s, ctx: ctx, cur: st, delay: fallbackRetry}, nil
}

// switchingStream is switching's event stream (see Events). Next is
// called by the stream's owner alone; Close may come from any goroutine.
type switchingStream struct {
	s   *switching
	ctx context.Context
	// delay is the wait before the next resubscription; Next's own.
	delay time.Duration

	mu     sync.Mutex // guards cur and closed
	cur    api.Stream
	closed bool
}

func (w *switchingStream) stream() api.Stream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// replace makes st the stream read from, unless the stream was closed
// meanwhile (then st is closed, and false returned).
func (w *switchingStream) replace(st api.Stream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		_ = st.Close()
		return false
	}
	old := w.cur
	w.cur = st
	_ = old.Close()
	return true
}

func (w *switchingStream) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.cur.Close()
}

func (w *switchingStream) Next() (api.Event, error) {
	for {
		ev, err := w.stream().Next()
		if err == nil {
			return ev, nil
		}
		if w.ctx.Err() != nil || w.s.owned() {
			return api.Event{}, err
		}
		if !w.s.gone() {
			w.s.log.V(1).Info("freecode serve's event stream ended; subscribing again", "reason", err.Error(), "in", w.delay)
			t := time.NewTimer(w.delay)
			select {
			case <-w.ctx.Done():
				t.Stop()
				return api.Event{}, err
			case <-t.C:
			}
			w.delay = min(2*w.delay, maxFallbackRetry)
			st, serr := w.s.get().Events(w.ctx)
			if serr != nil {
				// Tried again after the next delay, or started here
				// once serve is gone.
				st = failedStream{serr}
			}
			if !w.replace(st) {
				return api.Event{}, err
			}
			if serr == nil {
				w.delay = fallbackRetry // a later drop starts over
				return api.Event{Kind: wire.KindMissed, Data: missedData}, nil
			}
			continue
		}
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if closed {
			return api.Event{}, err // nobody follows: start nothing
		}
		w.s.log.Info("freecode serve went away; running the servers in this process", "reason", err.Error())
		ne, serr := w.s.start(w.ctx)
		if serr != nil {
			return api.Event{}, fmt.Errorf("%w; and the servers could not be started here: %w", err, serr)
		}
		sctx, cancel := context.WithTimeout(w.ctx, StartupWait)
		settle(sctx, ne)
		cancel()
		st, serr := ne.Events(w.ctx)
		if serr != nil {
			return api.Event{}, fmt.Errorf("%w; and the events of the servers started here cannot be followed: %w", err, serr)
		}
		if !w.replace(st) {
			return api.Event{}, err
		}
		w.s.mu.Lock()
		w.s.cur, w.s.own = ne, true
		w.s.mu.Unlock()
		return api.Event{Kind: wire.KindMissed, Data: missedData}, nil
	}
}

// missedData is the data of the missed event a switch sends, as the
// streams write it (with no count: how many is unknown).
const missedData = `{"missed":0}`

// failedStream is a subscription that failed with err: Next returns it.
type failedStream struct{ err error }

func (f failedStream) Next() (api.Event, error) { return api.Event{}, f.err }
func (f failedStream) Close() error             { return nil }
