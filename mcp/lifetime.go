package mcp

import (
	"sync"
	"sync/atomic"
)

// lifetime is how a session ends: the reasons it may end for (Close, a
// lost connection), the background goroutines its end waits for, and why
// it ended. Its channels are made by newLifetime; mu guards err and
// stopErr, which end sets once, before done is closed.
type lifetime struct {
	lost      chan error    // cap 1: the first transport loss reported
	closing   chan struct{} // closed by requestClose
	closeOnce sync.Once
	done      chan struct{} // closed by end, once the session has ended

	// bgMu guards bgEnded and the zero-crossing Adds of bg: background
	// work (cancellation notices, logging/setLevel, the listen stream, an
	// elicitation) registers with startBackground and is waited for by
	// stopBackground.
	bgMu    sync.Mutex
	bgEnded bool
	bg      sync.WaitGroup

	running atomic.Bool // set once Connect succeeded

	mu      sync.Mutex // guards err and stopErr
	err     error      // why the session ended (nil: Close, or never)
	stopErr error      // stopping the link failed (a process not reaped)
}

func newLifetime() *lifetime {
	return &lifetime{lost: make(chan error, 1), closing: make(chan struct{}), done: make(chan struct{})}
}

// reportLost asks the owner goroutine to end the session because its
// connection failed. Only the first report counts; it never blocks.
func (l *lifetime) reportLost(err error) {
	select {
	case l.lost <- err:
	default:
	}
}

// lostEarly returns the connection loss reported so far, if any, taking it
// (Connect asks, before the owner goroutine runs).
func (l *lifetime) lostEarly() error {
	select {
	case lost := <-l.lost:
		return lost
	default:
		return nil
	}
}

// requestClose closes closing, once; abort runs with the first call.
func (l *lifetime) requestClose(abort func()) {
	l.closeOnce.Do(func() {
		close(l.closing)
		abort()
	})
}

// unlessClosing returns err, or nil if Close was called: a server that
// exits or drops the connection while being closed ended cleanly.
func (l *lifetime) unlessClosing(err error) error {
	select {
	case <-l.closing:
		return nil
	default:
		return err
	}
}

// startBackground registers a background goroutine that stopBackground
// waits for; it reports false once the session is ending. Each true is
// matched by one endBackground.
func (l *lifetime) startBackground() bool {
	l.bgMu.Lock()
	defer l.bgMu.Unlock()
	if l.bgEnded {
		return false
	}
	l.bg.Add(1)
	return true
}

// endBackground says a registered goroutine is done.
func (l *lifetime) endBackground() { l.bg.Done() }

// stopBackground lets no more background work start and waits for what
// runs (which ends with the session's context).
func (l *lifetime) stopBackground() {
	l.bgMu.Lock()
	l.bgEnded = true
	l.bgMu.Unlock()
	l.bg.Wait()
}

// end records why the session ended and what stopping its link returned,
// and closes done. It is called once, last.
func (l *lifetime) end(why, stopErr error) {
	l.mu.Lock()
	l.err, l.stopErr = why, stopErr
	l.mu.Unlock()
	close(l.done)
}

// ended reports whether the session has ended, and why (see Session.Err).
func (l *lifetime) ended() (bool, error) {
	select {
	case <-l.done:
	default:
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return true, l.err
}

// stopError waits for the end and returns what stopping the link returned.
func (l *lifetime) stopError() error {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopErr
}
