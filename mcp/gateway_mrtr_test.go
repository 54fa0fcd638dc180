package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asker is a request that asks its host one question and returns the
// answer (or why there is none).
func asker(ctx context.Context) (any, error) {
	x := exchangeOf(ctx)
	raw, err := x.ask(ctx, "q", mcpgo.NewElicitationInputRequest(mcpgo.ElicitationParams{Message: "ok?"}))
	if err != nil {
		return nil, err
	}
	return string(raw), nil
}

func firstRound(t *testing.T, xs *exchanges, host [sha256.Size]byte) (*exchange, string) {
	t.Helper()
	x, err := xs.start(t.Context(), host, "tools/call", "t", asker)
	require.NoError(t, err)
	res, a, state, err := xs.await(t.Context(), x)
	require.NoError(t, err)
	require.Nil(t, res)
	require.NotNil(t, a)
	assert.Equal(t, "q", a.key)
	return x, state
}

func accept() mcpgo.InputResponses {
	var r mcpgo.InputResponse
	_ = json.Unmarshal([]byte(`{"action":"accept","content":{}}`), &r)
	return mcpgo.InputResponses{"q": r}
}

// TestExchangeStateIsSealed: a requestState that was altered, made by
// another gateway, or sent back by another host or for another tool is
// refused with ErrInvalidRequestState; the state as it came finishes the
// request, and is refused once used.
func TestExchangeStateIsSealed(t *testing.T) {
	host := sha256.Sum256([]byte("host"))
	xs := newExchanges([]byte("key-1"), time.Minute)
	defer xs.close()
	x, state := firstRound(t, xs, host)

	other := newExchanges([]byte("key-2"), time.Minute)
	defer other.close()
	for name, try := range map[string]func() error{
		"tampered": func() error {
			_, _, _, err := xs.resume(host, "tools/call", "t", state+"-TAMPERED", accept())
			return err
		},
		"foreign": func() error { _, _, _, err := other.resume(host, "tools/call", "t", state, accept()); return err },
		"other host": func() error {
			_, _, _, err := xs.resume(sha256.Sum256([]byte("b")), "tools/call", "t", state, accept())
			return err
		},
		"other tool": func() error { _, _, _, err := xs.resume(host, "tools/call", "u", state, accept()); return err },
		"oversized": func() error {
			_, _, _, err := xs.resume(host, "tools/call", "t", string(make([]byte, 4096)), accept())
			return err
		},
		"not one of us": func() error { _, _, _, err := xs.resume(host, "tools/call", "t", "abc", accept()); return err },
	} {
		assert.ErrorIs(t, try(), ErrInvalidRequestState, name)
	}

	// No answer under the key: the question again, under a new state.
	_, reask, state2, err := xs.resume(host, "tools/call", "t", state, nil)
	require.NoError(t, err)
	require.NotNil(t, reask)
	x2, _, _, err := xs.resume(host, "tools/call", "t", state2, accept())
	require.NoError(t, err)
	require.Same(t, x, x2)
	res, a, _, err := xs.await(t.Context(), x)
	require.NoError(t, err)
	require.Nil(t, a)
	assert.JSONEq(t, `{"action":"accept","content":{}}`, res.(string))

	_, _, _, err = xs.resume(host, "tools/call", "t", state2, accept())
	assert.ErrorIs(t, err, ErrInvalidRequestState, "a used state")
}

// TestAbandonedExchangeEnds: a host that never sends the request again
// has it cancelled after the TTL: its question is answered
// ErrExchangeEnded, the request returns and is forgotten.
func TestAbandonedExchangeEnds(t *testing.T) {
	xs := newExchanges([]byte("k"), 20*time.Millisecond)
	defer xs.close()
	x, _ := firstRound(t, xs, sha256.Sum256([]byte("host")))
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned request did not end")
	}
	assert.ErrorIs(t, x.err, ErrExchangeEnded)
	assert.True(t, errors.Is(context.Cause(x.ctx), ErrExchangeEnded) || errors.Is(context.Cause(x.ctx), errRequestReturned))
	xs.mu.Lock()
	assert.Empty(t, xs.byID)
	xs.mu.Unlock()
}

// TestExchangesPerHostAreBounded: a host with MaxExchangesPerHost
// requests waiting on it has the next question refused.
func TestExchangesPerHostAreBounded(t *testing.T) {
	host := sha256.Sum256([]byte("host"))
	xs := newExchanges([]byte("k"), time.Minute)
	defer xs.close()
	for range MaxExchangesPerHost {
		firstRound(t, xs, host)
	}
	x, err := xs.start(t.Context(), host, "tools/call", "t", asker)
	require.NoError(t, err)
	res, a, _, err := xs.await(t.Context(), x)
	assert.Nil(t, a)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, ErrTooManyExchanges)

	// A server's elicitation then is declined at once, not left waiting.
	x, err = xs.start(t.Context(), host, "tools/call", "t", func(ctx context.Context) (any, error) {
		return elicitExchange(ctx, exchangeOf(ctx), "q", mcpgo.ElicitationParams{Message: "ok?"}, logr.Discard())
	})
	require.NoError(t, err)
	res, a, _, err = xs.await(t.Context(), x)
	require.NoError(t, err)
	assert.Nil(t, a, "the host is asked nothing")
	assert.Equal(t, ElicitResult{Action: ElicitDecline}, res)

	// Another host is not held back by this one.
	firstRound(t, xs, sha256.Sum256([]byte("other")))
}
