package event_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
)

type testEvent struct{ N int }

func (testEvent) Kind() string { return "test" }

func TestBusDelivery(t *testing.T) {
	b := event.NewBus()
	ch1, cancel1 := b.Subscribe(4)
	ch2, cancel2 := b.Subscribe(4)
	defer cancel2()
	b.Publish(registry.ToolsChanged{Source: "s"})
	require.Equal(t, event.Message{Event: registry.ToolsChanged{Source: "s"}}, <-ch1)
	require.Equal(t, event.Message{Event: registry.ToolsChanged{Source: "s"}}, <-ch2)
	require.Equal(t, "tools_changed", registry.ToolsChanged{}.Kind())

	cancel1()
	cancel1() // idempotent
	_, open := <-ch1
	require.False(t, open, "cancel closes the channel")
	require.Equal(t, 1, b.Subscribers())
	b.Publish(testEvent{1}) // no panic after cancel
	require.Equal(t, testEvent{1}, (<-ch2).Event)
}

func TestBusDropsOldestAndCountsMissed(t *testing.T) {
	b := event.NewBus()
	ch, cancel := b.Subscribe(2)
	defer cancel()
	for i := 1; i <= 5; i++ {
		b.Publish(testEvent{i}) // never blocks
	}
	// Buffer 2: the newest two remain; the three dropped are all counted.
	m1, m2 := <-ch, <-ch
	require.Equal(t, testEvent{4}, m1.Event)
	require.Equal(t, testEvent{5}, m2.Event)
	require.NotZero(t, m1.Missed)
	require.Equal(t, uint64(3), m1.Missed+m2.Missed)
	b.Publish(testEvent{6})
	require.Equal(t, event.Message{Event: testEvent{6}}, <-ch)
}

func TestBusConcurrentPublishAndCancel(t *testing.T) {
	b := event.NewBus()
	var wg sync.WaitGroup
	for i := range 8 {
		ch, cancel := b.Subscribe(1)
		wg.Go(func() {
			for j := range 100 {
				b.Publish(testEvent{i*100 + j})
			}
			cancel()
			for range ch { // drains until closed
			}
		})
	}
	wg.Wait()
	require.Zero(t, b.Subscribers())
}
