package audit

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// queueSize bounds the records waiting to be written; more are counted as
// lost (and a KindLost record says so once writing catches up).
const queueSize = 1024

// Logger writes records to a Store from one goroutine of its own, so that
// a caller never waits for the disk or another process's lock: Log only
// queues. A record that cannot be written (a full disk, an unwritable
// file, the lock held past LockTimeout, the queue full) is counted, logged
// and reported by Health, and never fails the caller.
//
// Why not fail the calls: the log records what the permission rules and
// approvals decided; it does not decide anything. Failing every tool call
// because a disk filled would turn a disk problem into an outage, and the
// gap is on record anyway (KindLost, and the status while it lasts).
type Logger struct {
	store *Store
	log   logr.Logger
	queue chan Record
	stop  chan struct{} // closed by Close: drain the queue and end
	done  chan struct{} // closed when the goroutine ended
	once  sync.Once

	mu      sync.Mutex // guards the fields below
	closed  bool
	written uint64
	lost    int // since the last KindLost record was written
	lostAll uint64
	err     string // the last failure, "" once a write succeeded after it
	errAt   time.Time
}

// Health is what Logger.Health reports.
type Health struct {
	Path    string
	Written uint64
	// Lost counts the records lost since the Logger started.
	Lost uint64
	// Err is the last failure to write, "" when the last write worked.
	Err   string
	ErrAt time.Time
}

// NewLogger starts a Logger on store; Close ends it.
func NewLogger(store *Store, log logr.Logger) *Logger {
	l := &Logger{store: store, log: log, queue: make(chan Record, queueSize), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// Key is the store's digest key.
func (l *Logger) Key() Key { return l.store.Key() }

// Log queues r; it never blocks. A Logger that is nil logs nothing.
func (l *Logger) Log(r Record) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.lost++
		l.lostAll++
		return
	}
	select {
	case l.queue <- r:
	default:
		l.lost++
		l.lostAll++
		l.err, l.errAt = "the audit queue is full: the log cannot keep up", time.Now()
	}
}

// Health reports what was written and lost, and the last failure.
func (l *Logger) Health() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Health{Path: l.store.Path(), Written: l.written, Lost: l.lostAll, Err: l.err, ErrAt: l.errAt}
}

// Close writes what is queued (until ctx ends) and stops the goroutine.
// Records logged after Close are lost.
func (l *Logger) Close(ctx context.Context) error {
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.stop)
	})
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxBatch bounds the records written under one hold of the lock.
const maxBatch = 256

// batchWindow is how long the writer gathers records after the first of a
// batch before it writes them: one append (a lock, a write and the head's
// rewrite) for every call of a busy stretch would cost the machine more
// than the calls themselves; a record reaches the file this much later.
const batchWindow = 50 * time.Millisecond

func (l *Logger) run() {
	defer close(l.done)
	for {
		var first Record
		select {
		case first = <-l.queue:
		case <-l.stop:
			// Closed: the queue takes nothing more; write what is in it.
			for {
				select {
				case r := <-l.queue:
					l.write(l.batch(r))
				default:
					return
				}
			}
		}
		l.write(l.gather(first))
	}
}

// gather is first and the records queued within batchWindow of it, up to
// maxBatch; a Close meanwhile ends the wait (what is queued is written by
// run's drain).
func (l *Logger) gather(first Record) []Record {
	b := []Record{first}
	t := time.NewTimer(batchWindow)
	defer t.Stop()
	for len(b) < maxBatch {
		select {
		case r := <-l.queue:
			b = append(b, r)
		case <-t.C:
			return b
		case <-l.stop:
			return b
		}
	}
	return b
}

// batch is first and what else is queued, up to maxBatch.
func (l *Logger) batch(first Record) []Record {
	b := []Record{first}
	for len(b) < maxBatch {
		select {
		case r := <-l.queue:
			b = append(b, r)
		default:
			return b
		}
	}
	return b
}

func (l *Logger) write(b []Record) {
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	recs := b
	if lost > 0 {
		recs = append([]Record{{Time: time.Now(), Kind: KindLost, Count: lost, Reason: "records could not be written (see serve's log)"}}, b...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), LockTimeout)
	err := l.store.Append(ctx, recs...)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.lost += len(b)
		l.lostAll += uint64(len(b))
		l.err, l.errAt = err.Error(), time.Now()
		l.log.Error(err, "audit records lost; tool calls go on", "lost", l.lost)
		return
	}
	l.lost -= lost
	l.written += uint64(len(b))
	l.err = ""
}
