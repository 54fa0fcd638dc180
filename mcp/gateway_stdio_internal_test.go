package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Only a string or a number is a request's id: a host sending objects or
// arrays as ids gets no slot it could never give back (mcp-go answers those
// with a null id).
func TestPeekIDs(t *testing.T) {
	for line, want := range map[string]peeked{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:          {request: true, id: "n1"},
		`{"jsonrpc":"2.0","id":"a","method":"ping"}`:        {request: true, id: "sa"},
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`:    {},
		`{"jsonrpc":"2.0","id":[1],"method":"ping"}`:        {},
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`:       {},
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`:       {},
		`{"jsonrpc":"2.0","id":1.0,"result":{}}`:            {answer: true, id: "n1"},
		`{"jsonrpc":"2.0","method":"notifications/x"}`:      {},
		`{"jsonrpc":"2.0","id":{"x":1},"error":{"code":1}}`: {},
	} {
		got := peek([]byte(line))
		require.Equal(t, want.request, got.request, line)
		require.Equal(t, want.answer, got.answer, line)
		if want.request || want.answer {
			require.Equal(t, want.id, got.id, line)
		}
	}
}

// A call's answer waits for the notices of its watched token, and a token
// nobody watches leaves nothing counted.
func TestProgressWrites(t *testing.T) {
	var p progressWrites
	p.tracking.Store(true)
	p.wrote("late") // unwatched: not counted
	require.Empty(t, p.written)

	p.watch("n7")
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.wait(context.Background(), "n7", 2)
	}()
	p.wrote("n7")
	select {
	case <-done:
		t.Fatal("the answer went before the second notice was written")
	case <-time.After(50 * time.Millisecond):
	}
	p.wrote("n7")
	<-done
	require.Empty(t, p.written, "the token is forgotten once answered")
}
