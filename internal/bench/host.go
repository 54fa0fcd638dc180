package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// host is the in-process core of `freecode serve`: a Bus, a Registry on it
// and a running Controller publishing there, plus one subscription that
// sees every event from before the controller started.
type host struct {
	bus    *event.Bus
	reg    *registry.Registry
	ctrl   *controller.Controller
	events <-chan event.Message
	unsub  func()
	cancel context.CancelFunc
	done   chan struct{} // closed when Start returned (every server stopped)
}

// eventTimeout bounds every wait for an event.
const eventTimeout = 60 * time.Second

func newHost(opts controller.Options) *host {
	h := &host{bus: event.NewBus()}
	h.reg = registry.NewRegistry(h.bus)
	opts.Registry, opts.Bus = h.reg, h.bus
	h.ctrl = controller.New(opts)
	// Large enough that no scenario overflows it; a Missed count fails the
	// wait below rather than being ignored.
	h.events, h.unsub = h.bus.Subscribe(1 << 16)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		_ = h.ctrl.Start(ctx)
		close(h.done)
	}()
	return h
}

// close stops every server and waits until they are gone.
func (h *host) close() {
	h.cancel()
	<-h.done
	h.unsub()
}

// waitFor reads events until match returns true for one and returns the
// time it was received. Every event read before it is passed to match too.
// A server entering backoff is an error unless failOnBackoff is false.
func (h *host) waitFor(what string, failOnBackoff bool, match func(event.Event) bool) (time.Time, error) {
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-h.events:
			now := time.Now()
			if !ok {
				return now, fmt.Errorf("waiting for %s: subscription closed", what)
			}
			if m.Missed > 0 {
				return now, fmt.Errorf("waiting for %s: missed %d events", what, m.Missed)
			}
			if match(m.Event) {
				return now, nil
			}
			if pc, ok := m.Event.(wire.PhaseChanged); ok && failOnBackoff && pc.Phase == wire.PhaseBackoff {
				return now, fmt.Errorf("waiting for %s: server %s failed: %s", what, pc.Server, pc.Err)
			}
		case <-timer.C:
			return time.Now(), fmt.Errorf("waiting for %s: no event within %s", what, eventTimeout)
		}
	}
}

// waitTools waits for ToolsChanged of every named source.
func (h *host) waitTools(names ...string) (time.Time, error) {
	left := make(map[string]bool, len(names))
	for _, n := range names {
		left[n] = true
	}
	return h.waitFor(fmt.Sprintf("tools of %d server(s)", len(names)), true, func(e event.Event) bool {
		if tc, ok := e.(registry.ToolsChanged); ok {
			delete(left, tc.Source)
		}
		return len(left) == 0
	})
}

// waitReady waits until every named server is ready (its tools are
// registered before it is).
func (h *host) waitReady(names ...string) (time.Time, error) {
	left := make(map[string]bool, len(names))
	for _, n := range names {
		left[n] = true
	}
	return h.waitFor(fmt.Sprintf("%d server(s) to be ready", len(names)), true, func(e event.Event) bool {
		if pc, ok := e.(wire.PhaseChanged); ok && pc.Phase == wire.PhaseReady {
			delete(left, pc.Server)
		}
		return len(left) == 0
	})
}

// waitPhase waits for name to reach phase p.
func (h *host) waitPhase(name string, p wire.Phase) (time.Time, error) {
	return h.waitFor(fmt.Sprintf("%s to be %s", name, p), true, func(e event.Event) bool {
		pc, ok := e.(wire.PhaseChanged)
		return ok && pc.Server == name && pc.Phase == p
	})
}

// localServer is a desired local server running argv, resolved as a
// config file's entry would be.
func localServer(name string, argv []string) schema.Server {
	return schema.MCP{}.Resolve(schema.Server{Name: name, Type: schema.Local, Command: argv, Enabled: true, Timeout: 30 * time.Second, Source: schema.SourceUser})
}
