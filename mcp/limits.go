package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// maxErrorBodyBytes bounds how much of an HTTP error answer (status >= 400)
// is read: such a body is only quoted in messages, so the rest is dropped
// rather than the session ended.
const maxErrorBodyBytes = 64 << 10

// The limits' names as written in FreeCode's config ("limits").
const (
	limitMessageBytes = "maxMessageBytes"
	limitListItems    = "maxListItems"
	limitListPages    = "maxListPages"
	limitListBytes    = "maxListBytes"
)

// LimitError reports that a server sent more than one of its limits
// (Spec.Limits) allows, so its session was ended. It wraps [ErrLimit] and
// [ErrTransport]: the connection is gone, and a call that was under way may
// or may not have reached the server.
type LimitError struct {
	Server string
	// Step is the request the server was answering ("initialize",
	// "tools/list", "resources/list", "prompts/list", ...), or "" when the limit was hit outside of one, e.g. on an
	// SSE stream of a running session.
	Step string
	// Limit names the limit as in the config: "maxMessageBytes",
	// "maxListItems", "maxListPages" or "maxListBytes".
	Limit string
	// Value is the limit that was in force.
	Value int64
	// Max is the highest value the limit may be configured to
	// (Spec.MaxLimits); 0 sets no bound. The message suggests raising the
	// limit within it.
	Max int64
}

func (e *LimitError) Error() string {
	var what string
	switch e.Limit {
	case limitMessageBytes:
		what = "sent a message of more than " + formatBytes(e.Value)
	case limitListItems:
		what = fmt.Sprintf("listed more than %d %s", e.Value, listNoun(e.Step))
	case limitListPages:
		what = fmt.Sprintf("needed more than %d pages to list its %s", e.Value, listNoun(e.Step))
	case limitListBytes:
		what = "listed more than " + formatBytes(e.Value) + " of " + listNoun(e.Step)
	default:
		what = fmt.Sprintf("went over its limit %s (%d)", e.Limit, e.Value)
	}
	step := ""
	if e.Step != "" {
		step = e.Step + ": "
	}
	suggest := e.suggest()
	raise := fmt.Sprintf(`raise it for this server with "limits": {%q: %d} if it is legitimate`, e.Limit, suggest)
	if suggest <= e.Value {
		raise = "it is at its maximum"
	}
	return fmt.Sprintf("server %q: %sthe server %s (limit mcp.limits.%s); %s", e.Server, step, what, e.Limit, raise)
}

// during returns e with Step set to step, unless it names one already.
func (e *LimitError) during(step string) *LimitError {
	if e.Step != "" || step == stepDone {
		return e
	}
	c := *e
	c.Step = step
	return &c
}

func (e *LimitError) Unwrap() []error { return []error{ErrLimit, ErrTransport} }

// suggest is the value the error suggests instead of Value: twice it,
// within Max.
func (e *LimitError) suggest() int64 {
	if e.Max > 0 {
		return min(2*e.Value, e.Max)
	}
	return 2 * e.Value
}

// formatBytes renders n as "16 MiB", "64 KiB" or "70000 bytes".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitTrip records the first limit a session's server went over. Readers
// of the server's input trip it; the session then ends with its error.
type limitTrip struct {
	srv  Spec // its name and MaxLimits, for the error
	once sync.Once
	err  *LimitError   // set once, before hit is closed
	hit  chan struct{} // closed when err is set
}

func newLimitTrip(srv Spec) *limitTrip { return &limitTrip{srv: srv, hit: make(chan struct{})} }

// trip records e unless a limit was hit before; it returns the recorded
// error.
func (t *limitTrip) trip(e *LimitError) *LimitError {
	t.once.Do(func() {
		t.err = e
		close(t.hit)
	})
	<-t.hit
	return t.err
}

// tripped returns the recorded error, or nil.
func (t *limitTrip) tripped() *LimitError {
	select {
	case <-t.hit:
		return t.err
	default:
		return nil
	}
}

// over records that the server went over limit (value is the one in
// force) during step ("": reading its messages), which ends the session,
// and returns the error a reader hands on: the first limit recorded.
func (t *limitTrip) over(step, limit string, value int64) error {
	return t.trip(&LimitError{Server: t.srv.Name, Step: step, Limit: limit, Value: value, Max: t.srv.MaxLimits.max(limit)})
}

// newFrameCounter counts frames that end as ends says.
func newFrameCounter(limit int64, ends frameEnd) frameCounter {
	return frameCounter{limit: limit, ends: ends, blank: true}
}

// frameCounter counts the bytes of the current frame of a stream and
// reports when one grows past limit. What ends a frame depends on the
// stream: a newline (a local server's stdout, one message per line), a
// blank line (an SSE event), or nothing (a JSON body is one frame).
type frameCounter struct {
	limit int64
	ends  frameEnd
	n     int64 // bytes of the current frame so far
	// blank is set while the current line holds nothing but '\r' (SSE
	// only): a newline then ends the event.
	blank bool
}

type frameEnd int

const (
	endAtEOF     frameEnd = iota // a whole body
	endAtNewline                 // one line
	endAtBlank                   // one SSE event: up to an empty line
)

// add counts b and reports whether a frame grew past the limit.
func (c *frameCounter) add(b []byte) bool {
	switch c.ends {
	case endAtNewline:
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				c.n += int64(len(b))
				return c.n > c.limit
			}
			if c.n+int64(i) > c.limit {
				return true
			}
			c.n, b = 0, b[i+1:]
		}
	case endAtBlank:
		for {
			i := bytes.IndexByte(b, '\n')
			line := b
			if i >= 0 {
				line = b[:i]
			}
			c.n += int64(len(line))
			if len(bytes.Trim(line, "\r")) > 0 {
				c.blank = false
			}
			if c.n > c.limit {
				return true
			}
			if i < 0 {
				return false
			}
			if c.blank {
				c.n = 0 // an empty line: the event is complete
			} else {
				c.n++ // the newline belongs to the event
			}
			c.blank, b = true, b[i+1:]
		}
	default:
		c.n += int64(len(b))
		return c.n > c.limit
	}
}

// limitReader passes a stream through a frameCounter. Once a frame grows
// past the limit it calls over and fails every further Read with its error,
// so whoever accumulates frames (mcp-go's line readers, io.ReadAll, a JSON
// decoder) never holds much more than the limit. Reads are also refused once
// ctx ends, so that a body streaming without pause honours the request's
// deadline. Read must not be called concurrently; Close may be.
type limitReader struct {
	r    io.Reader
	ctx  context.Context // nil: none
	c    frameCounter
	over func() error
	err  error // sticky
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.ctx != nil {
		if err := l.ctx.Err(); err != nil {
			return 0, err
		}
	}
	n, err := l.r.Read(p)
	if l.c.add(p[:n]) {
		l.err = l.over()
		return 0, l.err
	}
	return n, err
}

// limitReadCloser is a limitReader over a body.
type limitReadCloser struct {
	limitReader
	io.Closer
}

// cappedBody reads at most limit bytes of an error answer and then reports
// EOF, leaving the rest unread; cut is set when it stopped at the cap.
type cappedBody struct {
	rc   io.ReadCloser
	ctx  context.Context
	left int64
	cut  *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.left <= 0 {
		b.cut.Store(true)
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
