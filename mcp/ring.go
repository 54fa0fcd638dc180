package mcp

import "sync"

// maxLineBytes bounds one stored stderr line; the rest of a longer line is
// dropped (and "…" appended) so a flood without newlines stays bounded too.
const maxLineBytes = 4096

// lineRing keeps the last lines written to it. It is safe for concurrent use.
type lineRing struct {
	mu    sync.Mutex // guards lines, next, total
	lines []string   // circular, len == capacity once full
	cap   int
	next  int // index the next line goes to once full
	total int // lines ever added
}

func newLineRing(capacity int) *lineRing {
	if capacity < 1 {
		capacity = 1
	}
	return &lineRing{cap: capacity}
}

func (r *lineRing) add(line string) {
	if len(line) > maxLineBytes {
		line = line[:maxLineBytes] + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if len(r.lines) < r.cap {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % r.cap
}

// tail returns the stored lines, oldest first.
func (r *lineRing) tail() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// dropped reports how many lines were pushed out of the ring.
func (r *lineRing) dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total - len(r.lines)
}
