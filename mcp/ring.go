package mcp

import "sync"

// maxLineBytes bounds one stored stderr line; the rest of a longer line is
// dropped (and "…" appended) so a flood without newlines stays bounded too.
const maxLineBytes = 4096

// lineRing keeps the last lines written to it. Lines are numbered from 1 in
// the order they were added, and a line keeps its number while it is
// stored, so a reader that asks for the lines after the last number it saw
// (after) gets each line once, however often the same text repeats. It is
// safe for concurrent use.
type lineRing struct {
	mu    sync.Mutex // guards lines, next, total and wake
	lines []string   // circular, len == capacity once full
	cap   int
	next  int   // index the next line goes to once full
	total int64 // lines ever added: the number of the newest line
	// wake is closed by the next add; nil until after hands one out.
	wake chan struct{}
}

func newLineRing(capacity int) *lineRing {
	if capacity < 1 {
		capacity = 1
	}
	return &lineRing{cap: capacity}
}

// add stores line, shortened to maxLineBytes, and returns it as stored.
func (r *lineRing) add(line string) string {
	if len(line) > maxLineBytes {
		line = line[:maxLineBytes] + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	if len(r.lines) < r.cap {
		r.lines = append(r.lines, line)
		return line
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % r.cap
	return line
}

// count is the number of lines ever added.
func (r *lineRing) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// tail returns the stored lines, oldest first.
func (r *lineRing) tail() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.linesAfterLocked(0)
}

// after returns, in one locked read, the stored lines numbered above n,
// oldest first, the number of the newest line (n when nothing was added
// since: a reader's cursor does not move back), and a channel that the
// next add closes. Lines pushed out of the ring before they were read are
// not returned.
func (r *lineRing) after(n int64) (lines []string, last int64, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return r.linesAfterLocked(n), max(r.total, n), r.wake
}

// linesAfterLocked returns the stored lines numbered above n; r.mu is held.
func (r *lineRing) linesAfterLocked(n int64) []string {
	size := int64(len(r.lines))
	oldest := r.total - size + 1 // the number of the oldest stored line
	skip := min(max(n-oldest+1, 0), size)
	out := make([]string, 0, size-skip)
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
