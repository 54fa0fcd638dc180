package api

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/wire"
)

// The in-process event stream gives what the SSE stream gives: each
// event's JSON, and the events dropped for a slow reader as a "missed"
// event before the next one; Close and ctx end it.
func TestEventStream(t *testing.T) {
	bus := event.NewBus()
	s := NewEventStream(t.Context(), bus)
	const n = eventBuffer + 3
	for i := range n {
		bus.Publish(registry.ToolsChanged{Source: strconv.Itoa(i)})
	}
	var missed, tools int
	for tools < eventBuffer {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Kind == wire.KindMissed {
			var m struct{ Missed int }
			require.NoError(t, ev.Decode(&m))
			missed += m.Missed
			next, err := s.Next()
			require.NoError(t, err)
			require.Equal(t, wire.KindToolsChanged, next.Kind, "a missed event comes before the next event")
			ev = next
		}
		require.Equal(t, wire.KindToolsChanged, ev.Kind)
		tools++
		if tools == eventBuffer {
			assert.Equal(t, `{"source":"`+strconv.Itoa(n-1)+`"}`, ev.Data, "the newest are kept")
		}
	}
	assert.Equal(t, n-eventBuffer, missed, "every dropped event is counted")
	require.NoError(t, s.Close())
	for {
		if _, err := s.Next(); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	assert.Equal(t, 0, bus.Subscribers())

	ctx, cancel := context.WithCancel(t.Context())
	s = NewEventStream(ctx, bus)
	defer s.Close()
	require.Equal(t, 1, bus.Subscribers(), "subscribed once it returned")
	cancel()
	_, err := s.Next()
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 0, bus.Subscribers())
}

// The in-process log stream announces each session before its lines,
// keeps a line one line, ends with an "error" event when the wait fails,
// and with io.EOF when closed during a wait.
func TestLogStream(t *testing.T) {
	waits := 0
	s := NewLogStream(t.Context(), wire.Logs{Lines: []string{"a\r\nb"}, Session: 1, Last: 1},
		func(ctx context.Context, after wire.LogCursor) (wire.Logs, error) {
			waits++
			switch waits {
			case 1:
				assert.Equal(t, wire.LogCursor{Session: 1, Line: 1}, after)
				return wire.Logs{Lines: []string{"c"}, Session: 1, Last: 2}, nil
			case 2:
				return wire.Logs{Lines: []string{"d"}, Session: 2, Last: 1}, nil
			}
			return wire.Logs{}, errors.New("gone\nfor good")
		})
	var got []Event
	for {
		ev, err := s.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, ev)
	}
	assert.Equal(t, []Event{{wire.KindLogSession, `{"session":1}`}, {wire.KindLogLine, "a b"}, {wire.KindLogLine, "c"},
		{wire.KindLogSession, `{"session":2}`}, {wire.KindLogLine, "d"}, {wire.KindLogError, "gone for good"}}, got)

	started := make(chan struct{})
	s = NewLogStream(t.Context(), wire.Logs{}, func(ctx context.Context, _ wire.LogCursor) (wire.Logs, error) {
		close(started)
		<-ctx.Done()
		return wire.Logs{}, ctx.Err()
	})
	_, err := s.Next() // the session
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	<-started
	require.NoError(t, s.Close())
	require.ErrorIs(t, <-done, io.EOF)
}
