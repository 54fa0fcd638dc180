package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/wire"
)

// DefaultElicitationTimeout bounds how long a server's elicitation waits
// for an answer; then the server is sent "cancel". (The server waits for
// the answer inside one of its tool calls, whose own timeout may be
// shorter.)
const DefaultElicitationTimeout = 5 * time.Minute

// ErrInvalidAnswer is wrapped by Elicitations.Answer's error when the
// answer is malformed or does not fit the server's form; the server answers
// it with 400, and the elicitation goes on waiting.
var ErrInvalidAnswer = errors.New("invalid answer")

// The answers an elicitation can get (wire.ElicitationAnswer.Action).
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Reasons of an ElicitationAnswered without a client's answer.
const (
	ReasonTimeout  = "timeout"
	ReasonCanceled = "canceled"
	// ReasonNobodyListening: declined at once, as no client listened for
	// the elicitation_requested event that would have asked someone.
	ReasonNobodyListening = "nobody to answer: no client is listening to serve's events"
)

// Elicitations holds the servers' elicitations that wait for an answer
// through the API: each one Ask gets becomes a pending Elicitation,
// announced with ElicitationRequested on the bus, until Answer, the
// timeout (then "cancel") or the asker's ctx ends it. Nothing is answered
// on the user's behalf but that "cancel", and "decline" when no client
// listens. It is safe for concurrent use.
type Elicitations struct {
	bus     *event.Bus
	timeout time.Duration

	mu      sync.Mutex // guards pending and next
	pending map[string]*pendingElicitation
	next    uint64
}

type pendingElicitation struct {
	wire.Elicitation
	check  func(map[string]any) (map[string]any, error)
	answer chan answerBy // buffered(1); sent once, by AnswerBy, which deletes the entry first
}

// answerBy is an answer and the client that gave it.
type answerBy struct {
	wire.ElicitationAnswer
	by string
}

// NewElicitations returns an Elicitations publishing on bus (nil: no
// events, and so nobody to answer); timeout <= 0 means
// DefaultElicitationTimeout.
func NewElicitations(bus *event.Bus, timeout time.Duration) *Elicitations {
	if timeout <= 0 {
		timeout = DefaultElicitationTimeout
	}
	return &Elicitations{bus: bus, timeout: timeout, pending: map[string]*pendingElicitation{}}
}

// Timeout is how long an elicitation waits for an answer.
func (p *Elicitations) Timeout() time.Duration { return p.timeout }

// Ask makes e pending (its ID, Created and Expires are set here) and
// blocks until it is answered, the timeout passes (the answer is then
// "cancel") or ctx ends (ctx's cause; nothing is to be sent). It returns
// how the elicitation ended, as announced (Reason says why when no client
// answered), with the content to send. When nobody can answer, because
// no client listens to the bus's events (in serve: nothing is subscribed
// to GET /v1/events), it does not wait: the answer is "decline", with
// ReasonNobodyListening. check is applied to the content of an "accept" of
// a form: it returns the content to send (defaults filled in) or why it
// does not fit, which Answer then reports to the answerer while e goes on
// waiting.
func (p *Elicitations) Ask(ctx context.Context, e wire.Elicitation, check func(map[string]any) (map[string]any, error)) (wire.ElicitationAnswered, error) {
	now := time.Now()
	p.mu.Lock()
	p.next++
	e.ID = "e" + strconv.FormatUint(p.next, 10)
	e.Created, e.Expires = now, now.Add(p.timeout)
	if p.bus == nil || p.bus.Subscribers() == 0 {
		p.mu.Unlock()
		return p.ended(wire.ElicitationAnswered{ID: e.ID, Server: e.Server, Action: ActionDecline, Reason: ReasonNobodyListening}), nil
	}
	pe := &pendingElicitation{Elicitation: e, check: check, answer: make(chan answerBy, 1)}
	p.pending[e.ID] = pe
	p.mu.Unlock()
	p.bus.Publish(wire.ElicitationRequested{Elicitation: e})

	answered := func(a answerBy) wire.ElicitationAnswered {
		return p.ended(wire.ElicitationAnswered{ID: e.ID, Server: e.Server, Action: a.Action, Content: a.Content, By: a.by})
	}
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	select {
	case a := <-pe.answer:
		return answered(a), nil
	case <-timer.C:
		if p.drop(e.ID) {
			return p.ended(wire.ElicitationAnswered{ID: e.ID, Server: e.Server, Action: ActionCancel, Reason: ReasonTimeout}), nil
		}
	case <-ctx.Done():
		if p.drop(e.ID) {
			reason := ReasonCanceled
			if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
				reason = cause.Error()
			}
			return p.ended(wire.ElicitationAnswered{ID: e.ID, Server: e.Server, Reason: reason}), context.Cause(ctx)
		}
	}
	// Answer removed the entry first, so its answer is in the channel.
	return answered(<-pe.answer), nil
}

// ended announces how an elicitation ended, without its content, and
// returns a.
func (p *Elicitations) ended(a wire.ElicitationAnswered) wire.ElicitationAnswered {
	ev := a
	ev.Content = nil
	p.bus.Publish(ev)
	return a
}

// drop removes a pending elicitation; false means Answer got there first.
func (p *Elicitations) drop(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[id]; !ok {
		return false
	}
	delete(p.pending, id)
	return true
}

// Answer answers the pending elicitation id and returns what is sent (the
// content of an accepted form with its defaults filled in). Its error
// wraps ErrNotFound when there is no such pending elicitation, and
// ErrInvalidAnswer when the answer is malformed or does not fit the form;
// then the elicitation goes on waiting.
func (p *Elicitations) Answer(id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error) {
	return p.AnswerBy(id, a, "")
}

// AnswerBy is Answer by the client by (its name, as api.ClientOf has it),
// which the elicitation's end then names (wire.ElicitationAnswered.By).
func (p *Elicitations) AnswerBy(id string, a wire.ElicitationAnswer, by string) (wire.ElicitationAnswered, error) {
	switch a.Action {
	case ActionAccept, ActionDecline, ActionCancel:
	default:
		return wire.ElicitationAnswered{}, fmt.Errorf(`%w: action %q: want "accept", "decline" or "cancel"`, ErrInvalidAnswer, a.Action)
	}
	if a.Action != ActionAccept && len(a.Content) > 0 {
		return wire.ElicitationAnswered{}, fmt.Errorf("%w: content goes only with accept, not %s", ErrInvalidAnswer, a.Action)
	}
	p.mu.Lock()
	pe, ok := p.pending[id]
	p.mu.Unlock()
	if !ok {
		return wire.ElicitationAnswered{}, fmt.Errorf("elicitation %q: %w (it may have been answered, cancelled or timed out)", id, ErrNotFound)
	}
	if a.Action == ActionAccept {
		switch {
		case pe.Mode == "url" && len(a.Content) > 0:
			return wire.ElicitationAnswered{}, fmt.Errorf("%w: a URL-mode elicitation is accepted without content", ErrInvalidAnswer)
		case pe.Mode != "url":
			content, err := pe.check(a.Content)
			if err != nil {
				return wire.ElicitationAnswered{}, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
			}
			a.Content = content
		}
	}
	if !p.drop(id) {
		return wire.ElicitationAnswered{}, fmt.Errorf("elicitation %q: %w (it was answered, cancelled or timed out meanwhile)", id, ErrNotFound)
	}
	pe.answer <- answerBy{a, by}
	return wire.ElicitationAnswered{ID: id, Server: pe.Server, Action: a.Action, Content: a.Content, By: by}, nil
}

// Pending lists the elicitations waiting for an answer, oldest first.
func (p *Elicitations) Pending() []wire.Elicitation {
	p.mu.Lock()
	out := make([]wire.Elicitation, 0, len(p.pending))
	for _, pe := range p.pending {
		out = append(out, pe.Elicitation)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(x, y wire.Elicitation) int {
		if c := len(x.ID) - len(y.ID); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}
