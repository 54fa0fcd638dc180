// Package event is FreeCode's typed event bus: the registry announces tool
// set changes on it, the controller phase changes and config errors, the
// API approval requests; the API's event stream and the hosts read it.
//
// # Delivery contract
//
// Publish never blocks and never waits for a subscriber. Every subscriber
// has its own buffered channel; when it is full, the subscriber's oldest
// undelivered message is dropped to make room, and the drop is counted in
// the Missed field of a later message to that subscriber. A subscriber
// therefore always sees the most recent events, in publish order per
// publisher, and knows when it missed some. Events are hints to look again,
// never state to apply: a subscriber that missed any re-reads the state it
// cares about, and one that must never miss a change (the provider-facing
// definitions) reads a generation counter instead of subscribing.
package event

import (
	"sync"
)

// Event is anything published on a Bus. Packages define their own event
// types (the registry publishes ToolsChanged; the controller phase changes;
// the API approval requests); Kind names the type for logs and for
// subscribers that forward events elsewhere. The kinds of FreeCode's
// events are constants of package wire (wire.KindToolsChanged, …), so that
// publishers and subscribers spell each one once.
type Event interface {
	Kind() string
}

// Message is what a subscriber receives: the event, plus a count of
// messages this subscriber lost because its buffer was full. Counts are
// never lost: the sum of Missed over all messages received equals the number
// of messages dropped before the last one received. A non-zero Missed means
// "you missed something earlier: re-read the state".
type Message struct {
	Event  Event
	Missed uint64
}

// DefaultBufferSize is the per-subscriber buffer used when Subscribe is
// given a size below 1.
const DefaultBufferSize = 16

// Bus delivers events to subscribers as the package documentation's
// delivery contract says. The zero Bus is ready to use; a nil *Bus drops
// every event published on it.
type Bus struct {
	mu   sync.Mutex // guards subs and next
	subs map[uint64]*subscriber
	next uint64
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{} }

type subscriber struct {
	mu     sync.Mutex // guards closed, missed and sends on ch
	ch     chan Message
	missed uint64
	closed bool
}

// Subscribe registers a subscriber with a buffer of size messages (below 1:
// DefaultBufferSize). It returns the receive channel and a cancel function;
// cancel is idempotent, unregisters the subscriber and closes the channel.
func (b *Bus) Subscribe(size int) (<-chan Message, func()) {
	if size < 1 {
		size = DefaultBufferSize
	}
	s := &subscriber{ch: make(chan Message, size)}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[uint64]*subscriber)
	}
	id := b.next
	b.next++
	b.subs[id] = s
	b.mu.Unlock()

	var once sync.Once
	cancel := func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, id)
			b.mu.Unlock()
			s.mu.Lock()
			s.closed = true
			close(s.ch)
			s.mu.Unlock()
		})
	}
	return s.ch, cancel
}

// Publish delivers e to every current subscriber without blocking (see the
// package's delivery contract). It is safe to call from any goroutine and never
// waits for a subscriber to receive.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	b.mu.Lock()
	subs := make([]*subscriber, 0, len(b.subs))
	for _, s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.deliver(e)
	}
}

// deliver sends e to s, dropping the oldest buffered message when full.
func (s *subscriber) deliver(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for {
		select {
		case s.ch <- Message{Event: e, Missed: s.missed}:
			s.missed = 0
			return
		default:
		}
		// Full: only senders (serialized by s.mu) fill the channel and the
		// receiver only drains it, so after one drop there is room.
		select {
		case old := <-s.ch:
			s.missed += old.Missed + 1
		default:
		}
	}
}

// Subscribers reports how many subscribers are registered.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
