package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/freecode/freecode/internal/termtext"
)

// liveTick is how often the elapsed time of a start is redrawn.
const liveTick = 100 * time.Millisecond

// liveLines bounds the stderr lines waiting to be shown; a server that
// writes faster than the terminal takes them has the excess counted, not
// queued.
const liveLines = 256

// startLive shows on a terminal, while a server starts, how long it has
// taken so far and each line it writes to stderr: `freecode mcp start` of
// an `npx -y` server that downloads for a while is not a silent wait. It
// draws one status line that it rewrites in place (carriage return, erase
// line) with the stderr lines printed above it, so it must only be used on
// a terminal. One goroutine draws; stop ends it.
type startLive struct {
	w     io.Writer
	name  string
	began time.Time

	lines   chan string
	quit    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex // guards dropped and waiting
	dropped int
	// waiting, appended to the status line, says why the start goes on
	// past its timeout (working); "" until it does.
	waiting string
}

// newStartLive starts drawing on w for the start of server name that began
// at began.
func newStartLive(w io.Writer, name string, began time.Time) *startLive {
	l := &startLive{w: w, name: name, began: began, lines: make(chan string, liveLines),
		quit: make(chan struct{}), stopped: make(chan struct{})}
	go l.run()
	return l
}

// line takes one stderr line (serve.OneShotOptions.OnStderr); it never
// blocks.
func (l *startLive) line(s string) {
	select {
	case l.lines <- s:
	default:
		l.mu.Lock()
		l.dropped++
		l.mu.Unlock()
	}
}

// working takes the news that the start goes on past its budget because
// the server is still working (serve.OneShotOptions.OnStillWorking): the
// status line says so from then on. It never blocks for long.
func (l *startLive) working(how string, _, budget time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting = fmt.Sprintf(" (still working: %s; waiting up to %s)", how, budget)
}

// stop shows the lines still queued, erases the status line and returns
// once the drawing goroutine has ended. Call it once.
func (l *startLive) stop() {
	close(l.quit)
	<-l.stopped
}

func (l *startLive) run() {
	defer close(l.stopped)
	tick := time.NewTicker(liveTick)
	defer tick.Stop()
	l.status()
	for {
		select {
		case s := <-l.lines:
			l.print(s)
		case <-tick.C:
			l.status()
		case <-l.quit:
			l.drain()
			l.mu.Lock()
			dropped := l.dropped
			l.mu.Unlock()
			fmt.Fprint(l.w, "\r\033[K")
			if dropped > 0 {
				fmt.Fprintf(l.w, "  │ (%d more stderr lines came too fast to show; `freecode mcp logs` under serve keeps them)\n", dropped)
			}
			return
		}
	}
}

// drain prints the lines still queued.
func (l *startLive) drain() {
	for {
		select {
		case s := <-l.lines:
			l.print(s)
		default:
			return
		}
	}
}

// print shows a stderr line above the status line.
func (l *startLive) print(s string) {
	fmt.Fprintf(l.w, "\r\033[K  │ %s\n", termtext.Neutralize(s))
	l.status()
}

func (l *startLive) status() {
	elapsed := time.Since(l.began).Truncate(liveTick)
	l.mu.Lock()
	waiting := l.waiting
	l.mu.Unlock()
	fmt.Fprintf(l.w, "\r\033[K… Starting %q: %s%s", l.name, elapsed, waiting)
}
