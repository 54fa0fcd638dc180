package mcp

import (
	"encoding/json"
	"sync"
	"time"
)

// maxLineBytes bounds one stored line, of stderr or a log message; the
// rest of a longer line is dropped (and "…" appended) so a flood without
// newlines stays bounded too.
const maxLineBytes = 4096

// LogLine is one line of a server's log: a line it wrote to stderr, or a
// log message it sent (notifications/message).
type LogLine struct {
	// Text is the line as shown: a stderr line as the server wrote it, a
	// log message rendered with its level first (see LogMessage.render).
	// Either is cut to 4 KiB.
	Text string
	// Message is what the server sent of a log message; nil for a stderr
	// line.
	Message *LogMessage
}

// LogMessage is a log message as the server sent it.
type LogMessage struct {
	// Level is the message's severity, one of the eight of RFC 5424 that
	// MCP uses ("debug" … "emergency"), as the server named it (cut to
	// maxLevelBytes).
	Level string
	// Logger names the part of the server that logged, if it said.
	Logger string
	// Data is the message's data verbatim when it is at most maxLineBytes;
	// nil when it is larger (Text then holds its start).
	Data json.RawMessage
}

// lineRing keeps the last lines of a server's log. Lines are numbered from
// 1 in the order they were added, and a line keeps its number while it is
// stored, so a reader that asks for the lines after the last number it saw
// (after) gets each line once, however often the same text repeats. It is
// safe for concurrent use.
type lineRing struct {
	mu    sync.Mutex // guards lines, next, total, lastStderr and wake
	lines []LogLine  // circular, len == capacity once full
	cap   int
	next  int   // index the next line goes to once full
	total int64 // lines ever added: the number of the newest line
	// lastStderr is when the last stderr line was added (not a message):
	// the start meter's sign that the server writes.
	lastStderr time.Time
	// wake is closed by the next add; nil until after hands one out.
	wake chan struct{}
}

func newLineRing(capacity int) *lineRing {
	if capacity < 1 {
		capacity = 1
	}
	return &lineRing{cap: capacity}
}

// cut shortens s to maxLineBytes, marking the cut with "…".
func cut(s string) string {
	if len(s) > maxLineBytes {
		return s[:maxLineBytes] + "…"
	}
	return s
}

// add stores a stderr line, shortened to maxLineBytes, and returns it as
// stored.
func (r *lineRing) add(line string) string {
	line = cut(line)
	r.put(LogLine{Text: line})
	return line
}

// addMessage stores a log message's line.
func (r *lineRing) addMessage(l LogLine) { r.put(l) }

func (r *lineRing) put(l LogLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if l.Message == nil {
		r.lastStderr = time.Now()
	}
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	if len(r.lines) < r.cap {
		r.lines = append(r.lines, l)
		return
	}
	r.lines[r.next] = l
	r.next = (r.next + 1) % r.cap
}

// lastLine is when the last stderr line was added (zero: none yet).
func (r *lineRing) lastLine() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastStderr
}

// tail returns the stored stderr lines, oldest first: what errors and the
// status quote of a server's stderr, without its log messages.
func (r *lineRing) tail() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for _, l := range r.linesAfterLocked(0) {
		if l.Message == nil {
			out = append(out, l.Text)
		}
	}
	return out
}

// after returns, in one locked read, the stored lines numbered above n,
// oldest first, the number of the newest line (n when nothing was added
// since: a reader's cursor does not move back), and a channel that the
// next add closes. Lines pushed out of the ring before they were read are
// not returned.
func (r *lineRing) after(n int64) (lines []LogLine, last int64, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return r.linesAfterLocked(n), max(r.total, n), r.wake
}

// linesAfterLocked returns the stored lines numbered above n; r.mu is held.
func (r *lineRing) linesAfterLocked(n int64) []LogLine {
	size := int64(len(r.lines))
	oldest := r.total - size + 1 // the number of the oldest stored line
	skip := min(max(n-oldest+1, 0), size)
	out := make([]LogLine, 0, size-skip)
	for i := skip; i < size; i++ {
		out = append(out, r.lines[(int64(r.next)+i)%size])
	}
	return out
}

// dropped reports how many lines were pushed out of the ring.
func (r *lineRing) dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.total) - len(r.lines)
}

// LineTexts returns the Text of each line.
func LineTexts(lines []LogLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}
