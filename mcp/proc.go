package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// Stop timings for a local server: after stdin is closed the server gets
// stdinGrace to exit by itself, then SIGTERM and termGrace, then SIGKILL.
const (
	stdinGrace = 500 * time.Millisecond
	termGrace  = 2 * time.Second
	// killWait bounds the wait after SIGKILL (a process in uninterruptible
	// sleep cannot be reaped until it leaves it).
	killWait = 5 * time.Second
	// stderrDrainWait bounds how long the exit of a server waits for the rest
	// of its stderr, which an escaped descendant may keep open.
	stderrDrainWait = time.Second
)

// inheritedEnv lists the parent's environment variables a local server sees
// (besides its own configured env): what programs need to find executables,
// files, the locale, the terminal type, and a proxy or a corporate CA. All
// other variables, such as provider API keys, stay with FreeCode; a server
// that needs one must name it in its "env".
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ", "XDG_RUNTIME_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// childEnv builds a server's environment: the allow-listed variables of
// parent (in os.Environ form) overlaid with the server's env. The result is
// sorted. withheld names, sorted, the variables of parent that are set (not
// empty) but that the server does not get: neither allow-listed nor in its
// env. Only names leave this function, never values.
func childEnv(parent []string, env map[string]string) (out, withheld []string) {
	m := make(map[string]string, len(inheritedEnv)+len(env))
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
		case slices.Contains(inheritedEnv, k):
			m[k] = v
		case v != "":
			if _, given := env[k]; !given {
				withheld = append(withheld, k)
			}
		}
	}
	maps.Copy(m, env)
	out = make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	slices.Sort(withheld)
	return out, slices.Compact(withheld)
}

// mentionedVars returns the names of vars (sorted) that lines name as a
// word of their own: "BRAVE_API_KEY is required", "missing $GITHUB_TOKEN",
// but not the "PATH" in "XPATH_HOME". Names shorter than two characters
// ("_") are left out: too many words look like them.
func mentionedVars(vars, lines []string) []string {
	var out []string
	for _, name := range vars {
		if len(name) < 2 {
			continue
		}
		for _, line := range lines {
			if containsWord(line, name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// containsWord reports whether word occurs in s with no letter, digit or
// underscore right before or after it.
func containsWord(s, word string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !isNameByte(s[start-1])) && (end == len(s) || !isNameByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isNameByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// process is a local server's child process, the leader of its own process
// group, started directly or by a Launcher. Its waiter goroutine reaps it
// the moment it exits (with a launcher: once the launched process's Wait
// returns), kills whatever is left of its group, and then closes exited.
type process struct {
	leader leader
	pid    int // the server's pid, also its process group id
	log    logr.Logger
	ring   *lineRing

	stdin  *os.File // write end of the child's stdin: close it with closeStdin
	stdout *os.File // read end of the child's stdout
	stderr *os.File // read end of the child's stderr

	// withheld are the variables of FreeCode's environment the server
	// does not get (see childEnv).
	withheld []string
	// onStderr, if set, gets every stderr line (Options.OnStderr).
	onStderr func(line string)

	stderrDone chan struct{} // closed when the stderr reader returned
	exited     chan struct{} // closed after the leader was reaped and its group killed
	state      *os.ProcessState
	waitErr    error // set before exited is closed

	closeOnce sync.Once
	// stdinOnce closes stdin; unreadAtClose is what the pipe held unread
	// just before (-1: unknown), for drained once stdin is closed.
	stdinOnce     sync.Once
	unreadAtClose atomic.Int64
}

// startProcess starts argv in a new process group with an explicit
// environment and pipes for stdin, stdout and stderr, through launcher if
// it is not nil. Stderr goes line by line into ring, to log at V(1) and to
// onStderr if it is not nil. onStart, if not nil, is called with the
// server's pid and the exited channel as soon as the process runs.
//
// Started directly, the child also gets SIGKILL (Pdeathsig) when the OS
// thread that started it exits. The Go runtime only ends a thread when a
// goroutine exits while locked to it (runtime.LockOSThread), so
// startProcess must not be called from such a goroutine; from ordinary
// goroutines it means the child dies with FreeCode even when FreeCode is
// killed without a chance to clean up. A launcher sees to FreeCode's death
// itself (procguard's reaper learns of it from its control socket),
// whichever thread started it.
func startProcess(argv []string, env map[string]string, launcher Launcher, ring *lineRing, log logr.Logger, onStart func(pid int, exited <-chan struct{}), onStderr func(string)) (_ *process, err error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command configured")
	}
	// Resolved here, with FreeCode's PATH, with or without a launcher.
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	var withheld []string
	cmd.Env, withheld = childEnv(os.Environ(), env)

	var parentEnds, childEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			for _, f := range parentEnds {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("create pipe: %w", err)
		}
		return r, w, nil
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds, parentEnds = append(childEnds, inR), append(parentEnds, inW)
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds, parentEnds = append(childEnds, outW), append(parentEnds, outR)
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds, parentEnds = append(childEnds, errW), append(parentEnds, errR)
	var l leader
	if launcher == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		// *os.File streams are handed to the child as they are: exec
		// starts no copying goroutines and Wait closes nothing we read
		// from.
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		l = &directLeader{cmd: cmd, p: cmd.Process.Pid}
	} else {
		lp, err := launcher.Launch(LaunchSpec{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Stdin: inR, Stdout: outW, Stderr: errW})
		if err != nil {
			return nil, err
		}
		l = launchedLeader{lp}
	}
	p := &process{
		leader:     l,
		pid:        l.pid(),
		log:        log,
		ring:       ring,
		stdin:      inW,
		stdout:     outR,
		stderr:     errR,
		withheld:   withheld,
		onStderr:   onStderr,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	p.unreadAtClose.Store(-1)

	go p.readStderr()
	go p.wait()
	if onStart != nil {
		onStart(p.pid, p.exited)
	}
	return p, nil
}

// readStderr copies the child's stderr into the ring until EOF.
func (p *process) readStderr() {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.stderr, maxLineBytes)
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if len(line) < maxLineBytes+1 {
			line = append(line, chunk...)
		}
		if err != nil {
			if len(line) > 0 {
				p.addStderr(string(line))
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.V(1).Info("reading stderr failed", "err", err)
			}
			return
		}
		if !isPrefix {
			p.addStderr(string(line))
			line = line[:0]
		}
	}
}

func (p *process) addStderr(line string) {
	line = p.ring.add(line)
	p.log.V(1).Info("stderr", "line", line)
	if p.onStderr != nil {
		p.onStderr(line)
	}
}

// wait reaps the leader, kills what is left of its process group, and
// collects the last of stderr before closing exited.
func (p *process) wait() {
	p.state, p.waitErr = p.leader.wait()

	timer := time.NewTimer(stderrDrainWait)
	defer timer.Stop()
	select {
	case <-p.stderrDone:
	case <-timer.C:
		// A descendant that left the group still holds stderr; closing
		// our end ends the read.
		p.stderr.Close()
		<-p.stderrDone
	}
	// Nothing reads it any more; closing it now, not whenever the garbage
	// collector gets to it, keeps file descriptors from piling up across
	// restarts.
	p.stderr.Close()
	p.log.V(1).Info("server process exited", "pid", p.pid, "state", p.state.String())
	close(p.exited)
}

// stop ends the process: close stdin, then SIGTERM to the group, then
// SIGKILL, each after a grace period; it returns once the leader was reaped.
// A server that never got going (graceful false) gets SIGTERM at once.
// It reports an error only if even SIGKILL did not end the process in time.
func (p *process) stop(graceful bool) error {
	p.closeStdin()
	if graceful {
		if p.waitFor(stdinGrace) {
			return p.release()
		}
		p.log.V(1).Info("server did not exit after stdin closed; sending SIGTERM", "pid", p.pid)
	}
	p.leader.terminate()
	if p.waitFor(termGrace) {
		return p.release()
	}
	p.log.Info("server did not exit after SIGTERM; sending SIGKILL", "pid", p.pid)
	p.leader.kill()
	if p.waitFor(killWait) {
		return p.release()
	}
	return fmt.Errorf("process %d did not exit %s after SIGKILL", p.pid, killWait)
}

func (p *process) waitFor(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// release closes the parent's pipe ends once the process is gone, which
// also ends a transport reader blocked on stdout should a descendant that
// left the group still hold it.
func (p *process) release() error {
	p.closeOnce.Do(func() {
		p.closeStdin()
		p.stdout.Close()
	})
	return nil
}

// closeStdin closes the write end of the server's stdin, noting first how
// much of what was written it had not read (unreadAtClose).
func (p *process) closeStdin() {
	p.stdinOnce.Do(func() {
		p.unreadAtClose.Store(int64(p.unread()))
		p.stdin.Close()
	})
}

// unread is how many bytes written to the server's stdin it has not read,
// -1 when that cannot be told (stdin is closed).
func (p *process) unread() int {
	raw, err := p.stdin.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := raw.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			n = v
		}
	}); err != nil {
		return -1
	}
	return n
}

// leader is the process FreeCode started for a server: the server itself,
// or what a Launcher started.
type leader interface {
	// pid is the server's pid, also its process group id.
	pid() int
	// terminate sends SIGTERM to the server's process group.
	terminate()
	// kill sends SIGKILL to the server's process group (with a launcher
	// that tracks them, to every other descendant of the server too).
	kill()
	// wait returns once the server has exited and its group was sent
	// SIGKILL (with a launcher that tracks them: once every descendant is
	// gone too), with the server's state.
	wait() (*os.ProcessState, error)
}

// directLeader is a server FreeCode started itself.
type directLeader struct {
	cmd *exec.Cmd
	p   int
}

func (d *directLeader) pid() int   { return d.p }
func (d *directLeader) terminate() { _ = syscall.Kill(-d.p, syscall.SIGTERM) }
func (d *directLeader) kill()      { _ = syscall.Kill(-d.p, syscall.SIGKILL) }

func (d *directLeader) wait() (*os.ProcessState, error) {
	// Wait for the exit without reaping: while the leader is a zombie its
	// pid, which is the group id, cannot be reused, so the group kill below
	// cannot hit an unrelated process.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, d.p, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	// Descendants (the real server behind `npx` or `sh -c`) may hold stdout
	// open; with the leader gone they are orphans.
	_ = syscall.Kill(-d.p, syscall.SIGKILL)
	err := d.cmd.Wait()
	return d.cmd.ProcessState, err
}

// launchedLeader is a server a Launcher started, which does the group kills
// itself (procguard's reaper holds the server unreaped while it sends them).
type launchedLeader struct{ p LaunchedProcess }

func (l launchedLeader) pid() int                        { return l.p.Pid() }
func (l launchedLeader) terminate()                      { l.p.Terminate() }
func (l launchedLeader) kill()                           { l.p.Kill() }
func (l launchedLeader) wait() (*os.ProcessState, error) { return l.p.Wait() }
