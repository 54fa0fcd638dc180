package procguard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

const (
	// suspectDelay is how long a child that looks foreign is left alone
	// before it is killed: a child that another part of the program has
	// just started with a group of its own is not mistaken for an orphan
	// while it is short-lived.
	suspectDelay = time.Second
	// finalWait bounds how long Run, once its context ended, waits for the
	// foreign children it killed to be reaped.
	finalWait = 5 * time.Second
	// finalPoll paces that wait between SIGCHLDs.
	finalPoll = 10 * time.Millisecond
)

// Subreaper makes this process a child subreaper and kills the foreign
// children reparented to it: what a killed reaper's command left behind
// (the command itself dies by its parent-death signal).
//
// A child is ours, and left alone, if it was started through this Subreaper
// (a [Reaper] or [Guard] given it) or if it shares this process's group and
// session (what os/exec starts without SysProcAttr). Every other child is
// foreign: one in its own process group or session that we did not start,
// which only reparenting makes ours. So a program using a Subreaper must
// start every child that gets a process group or session of its own
// through it; such a child started otherwise is killed once it has been
// seen for suspectDelay, and its zombie may be reaped before the program's
// own Wait.
//
// Sweeps run on SIGCHLD: every reparenting to this process follows the
// death of one of its children.
type Subreaper struct {
	log             logr.Logger
	self, pgid, sid int

	// mu guards known and suspects. It is held while a known child is
	// forked and recorded, so a sweep sees every known child recorded.
	mu       sync.Mutex
	known    map[int]bool
	suspects map[int]time.Time // foreign children still spared: when first seen
}

// NewSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): orphans in its subtree are reparented to it
// rather than to init. Kills are logged to log at Info.
func NewSubreaper(log logr.Logger) (*Subreaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become a child subreaper: %w", err)
	}
	pgid, err := unix.Getpgid(0)
	if err != nil {
		return nil, fmt.Errorf("process group: %w", err)
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return &Subreaper{log: log, self: os.Getpid(), pgid: pgid, sid: sid, known: map[int]bool{}, suspects: map[int]time.Time{}}, nil
}

// startKnown starts cmd as a known child. A nil Subreaper just starts it.
func (s *Subreaper) startKnown(cmd *exec.Cmd) error {
	if s == nil {
		return cmd.Start()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	s.known[cmd.Process.Pid] = true
	return nil
}

// forget drops a known child once it has been waited for.
func (s *Subreaper) forget(pid int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, pid)
}

// Run sweeps on every SIGCHLD (and again suspectDelay after a sweep that
// found something) until ctx ends; then it kills every foreign child left,
// without the delay, and waits up to finalWait for them to be reaped. Run
// it for as long as children may be reparented, and let it return before
// the program exits.
func (s *Subreaper) Run(ctx context.Context) {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, unix.SIGCHLD)
	defer signal.Stop(sigc)
	again := time.NewTimer(suspectDelay)
	defer again.Stop()
	for {
		if s.sweep(false) {
			again.Reset(suspectDelay)
		}
		select {
		case <-ctx.Done():
			s.final(sigc)
			return
		case <-sigc:
		case <-again.C:
		}
	}
}

// final kills the foreign children left and reaps them, for up to
// finalWait.
func (s *Subreaper) final(sigc <-chan os.Signal) {
	deadline := time.NewTimer(finalWait)
	defer deadline.Stop()
	poll := time.NewTicker(finalPoll)
	defer poll.Stop()
	for s.sweep(true) {
		select {
		case <-deadline.C:
			s.log.Info("orphaned processes did not exit in time", "within", finalWait)
			return
		case <-sigc:
		case <-poll.C:
		}
	}
}

// sweep kills and reaps the foreign children first seen suspectDelay ago
// or earlier (all of them if final) and reports whether any foreign child
// was found.
func (s *Subreaper) sweep(final bool) bool {
	// Read before the lock: a known child forked after this point is not
	// in it, one forked before is recorded by the time we hold the lock.
	kids := childrenOf(scanProcs(), s.self)
	now := time.Now()
	var act []procStat
	s.mu.Lock()
	next := map[int]time.Time{}
	for _, k := range kids {
		if s.known[k.pid] || (k.pgid == s.pgid && k.sid == s.sid) {
			continue
		}
		seen, ok := s.suspects[k.pid]
		if !ok {
			seen = now
		}
		if final || now.Sub(seen) >= suspectDelay {
			act = append(act, k)
		} else {
			next[k.pid] = seen
		}
	}
	s.suspects = next
	s.mu.Unlock()
	// A child stays ours until we reap it, so its pid, and the id of a
	// group it leads, cannot be reused before the signals below.
	for _, k := range act {
		if !k.zombie() {
			if k.pgid == k.pid {
				_ = unix.Kill(-k.pid, unix.SIGKILL)
			}
			_ = unix.Kill(k.pid, unix.SIGKILL)
			s.log.Info("killed an orphaned process", "pid", k.pid, "command", k.comm)
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(k.pid, &ws, unix.WNOHANG, nil)
	}
	return len(next) > 0 || len(act) > 0
}
