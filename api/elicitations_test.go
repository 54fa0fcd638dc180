package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// needName is a form check that wants a name and fills in a count.
func needName(c map[string]any) (map[string]any, error) {
	if _, ok := c["name"].(string); !ok {
		return nil, errors.New("name: required, and not answered")
	}
	out := map[string]any{"count": 3.0}
	for k, v := range c {
		out[k] = v
	}
	return out, nil
}

type asked struct {
	ans wire.ElicitationAnswered
	err error
}

func ask(p *Elicitations, ctx context.Context, e wire.Elicitation) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		a, err := p.Ask(ctx, e, needName)
		ch <- asked{a, err}
	}()
	return ch
}

// An elicitation waits in the API until a client answers it: a bad answer
// is refused with the reason and the elicitation goes on waiting; the
// answer sent has the check's defaults, and is announced without content.
func TestElicitationFlow(t *testing.T) {
	f := newFixture(t, orchestrator.Rules{}, time.Minute)
	ctx := t.Context()
	events, err := f.client.Events(ctx)
	require.NoError(t, err)
	defer events.Close()

	done := ask(f.elicit, ctx, wire.Elicitation{Server: "ts", Mode: "form", Message: "Who?", RequestedSchema: []byte(`{"type":"object"}`)})
	var req wire.Elicitation
	require.NoError(t, nextEvent(t, events, wire.KindElicitationRequested).Decode(&req))
	assert.Equal(t, "e1", req.ID)
	assert.Equal(t, "ts", req.Server)
	assert.Equal(t, "Who?", req.Message)
	assert.JSONEq(t, `{"type":"object"}`, string(req.RequestedSchema))
	assert.Equal(t, DefaultElicitationTimeout, req.Expires.Sub(req.Created))
	pending, err := f.client.Elicitations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, req.ID, pending[0].ID)

	for body, want := range map[string]string{
		`{"action":"accept","content":{"x":1}}`:   "invalid answer: name: required, and not answered",
		`{"action":"maybe"}`:                      `invalid answer: action "maybe": want "accept", "decline" or "cancel"`,
		`{"action":"decline","content":{"x":1}}`:  "invalid answer: content goes only with accept, not decline",
		`{"approve":true}`:                        `the body must be {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}`,
		`{"action":"accept","content":"not obj"}`: `the body must be`,
	} {
		resp, err := f.client.do(ctx, http.MethodPost, "/v1/elicitations/e1", rawJSON(body))
		require.NoError(t, err)
		data := readAll(t, resp)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Contains(t, decodeError(resp.StatusCode, data).Error(), want, body)
	}
	_, err = f.client.AnswerElicitation(ctx, "e1", wire.ElicitationAnswer{Action: "accept"})
	assert.ErrorIs(t, err, ErrInvalidAnswer)
	pending, _ = f.client.Elicitations(ctx)
	require.Len(t, pending, 1, "a refused answer leaves it waiting")

	sent, err := f.client.AnswerElicitation(ctx, "e1", wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada"}})
	require.NoError(t, err)
	assert.Equal(t, wire.ElicitationAnswered{ID: "e1", Server: "ts", Action: "accept", Content: map[string]any{"name": "Ada", "count": 3.0}}, sent)
	got := <-done
	require.NoError(t, got.err)
	assert.Equal(t, sent, got.ans)
	var answered wire.ElicitationAnswered
	ev := nextEvent(t, events, wire.KindElicitationAnswered)
	require.NoError(t, ev.Decode(&answered))
	assert.Equal(t, wire.ElicitationAnswered{ID: "e1", Server: "ts", Action: "accept"}, answered)
	assert.NotContains(t, ev.Data, "Ada", "the event carries no content")

	_, err = f.client.AnswerElicitation(ctx, "e1", wire.ElicitationAnswer{Action: "decline"})
	assert.ErrorIs(t, err, ErrNotFound)

	// A URL-mode elicitation is accepted without content.
	done = ask(f.elicit, ctx, wire.Elicitation{Server: "ts", Mode: "url", Message: "Sign in", URL: "https://example.com/x", Host: "example.com"})
	require.NoError(t, nextEvent(t, events, wire.KindElicitationRequested).Decode(&req))
	_, err = f.client.AnswerElicitation(ctx, req.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"a": 1}})
	assert.ErrorContains(t, err, "a URL-mode elicitation is accepted without content")
	_, err = f.client.AnswerElicitation(ctx, req.ID, wire.ElicitationAnswer{Action: "accept"})
	require.NoError(t, err)
	assert.Equal(t, wire.ElicitationAnswered{ID: req.ID, Server: "ts", Action: "accept"}, (<-done).ans)

	// Decline and cancel carry no content.
	for _, action := range []string{"decline", "cancel"} {
		done = ask(f.elicit, ctx, wire.Elicitation{Server: "ts", Mode: "form", Message: "Who?"})
		require.NoError(t, nextEvent(t, events, wire.KindElicitationRequested).Decode(&req))
		_, err = f.client.AnswerElicitation(ctx, req.ID, wire.ElicitationAnswer{Action: action})
		require.NoError(t, err)
		assert.Equal(t, wire.ElicitationAnswered{ID: req.ID, Server: "ts", Action: action}, (<-done).ans)
	}
}

// Nobody answers: after the timeout the server is sent "cancel", never an
// answer of serve's own.
func TestElicitationTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := event.NewBus()
		msgs, stop := bus.Subscribe(8)
		defer stop()
		p := NewElicitations(bus, time.Minute)
		done := ask(p, context.Background(), wire.Elicitation{Server: "ts", Mode: "form"})
		synctest.Wait()
		require.Len(t, p.Pending(), 1)
		time.Sleep(time.Minute)
		got := <-done
		require.NoError(t, got.err)
		want := wire.ElicitationAnswered{ID: "e1", Server: "ts", Action: "cancel", Reason: ReasonTimeout}
		assert.Equal(t, want, got.ans)
		assert.Empty(t, p.Pending())
		<-msgs // requested
		m := <-msgs
		assert.Equal(t, want, m.Event)
	})
}

// The asker goes away (the server cancelled, the session ended): the
// elicitation ends with the reason, and nothing is to be sent.
func TestElicitationAskerGone(t *testing.T) {
	bus := event.NewBus()
	msgs, stop := bus.Subscribe(8)
	defer stop()
	p := NewElicitations(bus, time.Minute)
	serverCanceled := errors.New("the server cancelled its request")
	for cause, reason := range map[error]string{serverCanceled: "the server cancelled its request", context.Canceled: ReasonCanceled} {
		ctx, cancel := context.WithCancelCause(context.Background())
		done := ask(p, ctx, wire.Elicitation{Server: "ts"})
		<-msgs // requested: it is pending
		cancel(cause)
		got := <-done
		assert.ErrorIs(t, got.err, cause)
		m := <-msgs
		answered := m.Event.(wire.ElicitationAnswered)
		assert.Equal(t, reason, answered.Reason)
		assert.Empty(t, answered.Action)
		assert.Empty(t, p.Pending())
		_, err := p.Answer(answered.ID, wire.ElicitationAnswer{Action: "decline"})
		assert.ErrorIs(t, err, ErrNotFound)
	}
}

// With no client listening to the events nobody can learn of an
// elicitation: it is declined at once, saying why, never accepted and
// never left waiting for the timeout.
func TestElicitationNobodyListening(t *testing.T) {
	for name, bus := range map[string]*event.Bus{"no subscriber": event.NewBus(), "no bus": nil} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := NewElicitations(bus, time.Minute)
				start := time.Now()
				got := <-ask(p, context.Background(), wire.Elicitation{Server: "ts", Mode: "form"})
				require.NoError(t, got.err)
				assert.Equal(t, wire.ElicitationAnswered{ID: "e1", Server: "ts", Action: "decline", Reason: ReasonNobodyListening}, got.ans)
				assert.Zero(t, time.Since(start), "no wait")
				assert.Empty(t, p.Pending())
			})
		})
	}

	// A listener that came and went: nobody again.
	bus := event.NewBus()
	_, stop := bus.Subscribe(8)
	stop()
	got := <-ask(NewElicitations(bus, time.Minute), context.Background(), wire.Elicitation{Server: "ts", Mode: "form"})
	assert.Equal(t, ReasonNobodyListening, got.ans.Reason)
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return data
}
