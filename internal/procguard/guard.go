package procguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// guardRetry is the pause between attempts to start a new guard after one
// failed to start.
const guardRetry = time.Second

// GuardOptions configure a [Guard].
type GuardOptions struct {
	// Path is the executable run as the guard; its main must call
	// [Dispatch] first ([SelfExe] for this program, or the dedicated
	// helper: see [Helper]).
	Path string
	// Fallback, if set, is run as the guard from the moment one run from
	// Path could not be started or exited by itself (not by a signal): a
	// helper that is not one, or speaks another protocol version.
	Fallback string
	// Sub, if set, gets every guard as a known child.
	Sub *Subreaper
	// Logger hears of a guard that exited and of the new one.
	Logger logr.Logger
	// Stderr receives the guard's own stderr; nil discards it.
	Stderr io.Writer
}

// Guard runs a process outside this program's tree that SIGKILLs the
// process groups it was told about when this program dies without removing
// them (SIGKILL, a crash): it takes what a command left in its group even
// if the command's reaper was killed at the same time.
//
// The program tells it, over its stdin, which groups are live ("+PGID" /
// "-PGID" lines); when that pipe reaches end of file — the program exited,
// however it exited — the guard kills every group still listed and exits.
// If the guard itself dies, the Guard starts a new one and tells it the
// live groups again; until then a death of the program is covered only by
// the reapers.
type Guard struct {
	opts GuardOptions

	mu     sync.Mutex // guards groups, w, pid, path and closed
	groups map[int]bool
	w      io.WriteCloser // the running guard's stdin; nil between guards
	pid    int
	path   string // what the next guard runs: opts.Path, then opts.Fallback
	closed bool

	stop chan struct{} // closed by Close
	done chan struct{} // closed when watch returned
}

// StartGuard starts a guard process and the goroutine that watches it; end
// both with Close.
func StartGuard(opts GuardOptions) (*Guard, error) {
	g := &Guard{opts: opts, groups: map[int]bool{}, path: opts.Path, stop: make(chan struct{}), done: make(chan struct{})}
	cmd, w, err := g.spawn(g.path)
	if err != nil && opts.Fallback != "" {
		g.path = opts.Fallback
		var ferr error
		if cmd, w, ferr = g.spawn(g.path); ferr != nil {
			err = errors.Join(ferr, err)
		} else {
			err = nil
		}
	}
	if err != nil {
		return nil, err
	}
	g.w, g.pid = w, cmd.Process.Pid
	go g.watch(cmd)
	return g, nil
}

// spawn starts a guard from path and tells it the protocol version.
func (g *Guard) spawn(path string) (*exec.Cmd, io.WriteCloser, error) {
	cmd := exec.Command(path)
	cmd.Args = []string{GuardName}
	cmd.Env = helperEnv()
	cmd.Stderr = g.opts.Stderr
	// Its own process group: a Ctrl-C aimed at our terminal job does not
	// reach it, and it never shares a fate with us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("start guard: %w", err)
	}
	if err := g.opts.Sub.startKnown(cmd); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("start guard %s: %w", path, err)
	}
	// Into the pipe's buffer: it does not wait for the guard. A failure
	// means the guard died already, which watch sees.
	_, _ = fmt.Fprintf(w, "v%d\n", guardProtocol)
	return cmd, w, nil
}

// Pid is the running guard's process id, 0 between guards.
func (g *Guard) Pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pid
}

// watch waits for the running guard and, unless Close was called, starts a
// new one and lists the live groups with it.
func (g *Guard) watch(cmd *exec.Cmd) {
	defer close(g.done)
	for {
		_ = cmd.Wait()
		g.opts.Sub.forget(cmd.Process.Pid)
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return
		}
		if g.w != nil {
			g.w.Close()
		}
		g.w, g.pid = nil, 0
		if st := cmd.ProcessState.Sys().(syscall.WaitStatus); g.opts.Fallback != "" && g.path != g.opts.Fallback && st.Exited() {
			// A guard exits by itself only when it is not one of
			// ours, or of another version.
			g.opts.Logger.Info("guard helper exited by itself; running the fallback as the guard", "helper", g.path, "fallback", g.opts.Fallback)
			g.path = g.opts.Fallback
		}
		path := g.path
		g.mu.Unlock()
		g.opts.Logger.Info("guard process exited; starting a new one", "pid", cmd.Process.Pid, "state", cmd.ProcessState.String())
		for {
			next, w, err := g.spawn(path)
			if err == nil {
				cmd = next
				g.mu.Lock()
				g.w, g.pid = w, cmd.Process.Pid
				if g.closed {
					g.w = nil
					w.Close()
				}
				for pgid := range g.groups {
					g.send('+', pgid)
				}
				n := len(g.groups)
				g.mu.Unlock()
				g.opts.Logger.Info("started a new guard process", "pid", cmd.Process.Pid, "groups", n)
				break
			}
			if g.opts.Fallback != "" && path != g.opts.Fallback {
				g.opts.Logger.Info("cannot start the guard helper; running the fallback as the guard", "helper", path, "fallback", g.opts.Fallback, "err", err.Error())
				g.mu.Lock()
				g.path = g.opts.Fallback
				path = g.path
				g.mu.Unlock()
				continue
			}
			g.opts.Logger.Error(err, "no guard process: if this process is killed, what its servers started may outlive it", "retryIn", guardRetry)
			t := time.NewTimer(guardRetry)
			select {
			case <-g.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// Track lists process group pgid with the guard until exited is closed (or
// Close is called). A nil Guard does nothing.
func (g *Guard) Track(pgid int, exited <-chan struct{}) {
	if g == nil || pgid <= 1 {
		return
	}
	g.mu.Lock()
	g.groups[pgid] = true
	g.send('+', pgid)
	g.mu.Unlock()
	go func() {
		select {
		case <-exited:
		case <-g.stop:
			return
		}
		g.mu.Lock()
		delete(g.groups, pgid)
		g.send('-', pgid)
		g.mu.Unlock()
	}()
}

// send writes one line to the running guard; g.mu must be held. A failed
// write means the guard died: watch starts a new one and lists the groups.
func (g *Guard) send(op byte, pgid int) {
	if g.w != nil {
		_, _ = fmt.Fprintf(g.w, "%c%d\n", op, pgid)
	}
}

// Close ends the guard (after a clean stop no group is listed any more, so
// it kills nothing) and waits for it and for the watching goroutine.
func (g *Guard) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	w := g.w
	g.w = nil
	g.mu.Unlock()
	close(g.stop)
	if w != nil {
		w.Close()
	}
	<-g.done
}

// guardProtocol is the version of the guard's protocol, the first line
// the Guard sends ("v1"); a guard of another version exits with exitUsage
// at once. Change it with any change to the protocol.
const guardProtocol = 1

// runGuard is the guard process's main: it keeps the listed process groups
// until stdin ends, then kills them.
func runGuard(stdin io.Reader) int {
	setComm(GuardName)
	// Signals for the terminal job or for a program that is stopping are
	// not for the guard; end of file is its only cue.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	groups := map[int]bool{}
	sc := bufio.NewScanner(stdin)
	if !sc.Scan() {
		return 0 // the program ended before it said anything
	}
	if v := strings.TrimSpace(sc.Text()); v != "v"+strconv.Itoa(guardProtocol) {
		fmt.Fprintf(os.Stderr, "%s: protocol %q, this guard speaks v%d\n", GuardName, v, guardProtocol)
		return exitUsage
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return 0
}
