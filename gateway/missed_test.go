package gateway

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/wire"
)

// questionEngine runs one call that waits for its approval, which it
// lists as pending but announces with no event: the event was dropped
// (the stream says "missed" instead).
type questionEngine struct {
	engine   // not called
	events   chan api.Event
	callID   chan string
	answered chan answer
	release  chan struct{}
}

// answer is one Engine.Answer.
type answer struct {
	id      string
	approve bool
}

func (e *questionEngine) Events(ctx context.Context) (api.Stream, error) {
	return chanStream{ctx: ctx, ch: e.events}, nil
}

func (e *questionEngine) CallWith(ctx context.Context, id string, _ json.RawMessage, opts api.CallOptions) (api.CallResponse, error) {
	e.callID <- opts.ID
	select {
	case <-e.release:
	case <-ctx.Done():
		return api.CallResponse{}, ctx.Err()
	}
	return api.CallResponse{Tool: id, Result: wire.TextResult("done")}, nil
}

func (e *questionEngine) Approvals(context.Context) ([]api.Approval, error) {
	id := <-e.callID // the call in flight
	e.callID <- id
	return []api.Approval{{ID: "a1", CallID: id, Tool: "mcp__s__t", Args: json.RawMessage(`{}`)}}, nil
}

func (e *questionEngine) Elicitations(context.Context) ([]wire.Elicitation, error) { return nil, nil }

func (e *questionEngine) Answer(_ context.Context, id string, approve bool) error {
	e.answered <- answer{id, approve}
	return nil
}

// chanStream is a stream of the events sent on ch, until ctx ends.
type chanStream struct {
	ctx context.Context
	ch  chan api.Event
}

func (s chanStream) Next() (api.Event, error) {
	select {
	case ev := <-s.ch:
		return ev, nil
	case <-s.ctx.Done():
		return api.Event{}, io.EOF
	}
}
func (s chanStream) Close() error { return nil }

// An approval whose event was dropped is still put to the call's host:
// on "missed" the gateway reads the approvals waiting and asks those of
// its calls. (This host cannot be asked, so the call is refused.)
func TestMissedApprovalIsAskedAfterAll(t *testing.T) {
	e := &questionEngine{events: make(chan api.Event), callID: make(chan string, 1), answered: make(chan answer, 1), release: make(chan struct{})}
	g := newGateway(e, func() bool { return true }, Options{Logger: logr.Discard()})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watched := make(chan error, 1)
	go func() { watched <- g.watch(ctx, func() {}) }()
	ran := make(chan error, 1)
	go func() {
		_, err := g.run(ctx, "mcp__s__t", json.RawMessage(`{}`), nil)
		ran <- err
	}()
	// The call is in flight once the engine has its id.
	id := <-e.callID
	e.callID <- id
	e.events <- api.Event{Kind: wire.KindMissed, Data: `{"missed":1}`}
	select {
	case a := <-e.answered:
		require.Equal(t, answer{"a1", false}, a, "the missed approval was put to the host, which cannot be asked: refused")
	case <-time.After(waitFor):
		t.Fatal("the approval announced by no event was never asked")
	}
	close(e.release)
	require.NoError(t, <-ran)
	cancel()
	require.NoError(t, <-watched)
}
