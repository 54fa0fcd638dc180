package procguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Names of the helper processes: their argv[0], which [Dispatch] goes by,
// and their comm (what ps, top and killall show; at most 15 bytes).
const (
	ReaperName = "fc-reaper"
	GuardName  = "fc-guard"
)

// SelfExe runs this program's own executable, the very file this process
// was started from, even if a newer version has since been installed at
// its path (the helpers then always speak this version's protocol).
const SelfExe = "/proc/self/exe"

const (
	// startTimeout bounds the wait for a new reaper to report the
	// command's pid.
	startTimeout = 10 * time.Second
	// killGrace is how long a reaper told to kill gets to finish before
	// it is SIGKILLed itself (its command then dies by its parent-death
	// signal, and a Subreaper takes what is left).
	killGrace = 2 * time.Second
)

// Dispatch runs this process as a reaper or a guard when os.Args[0] names
// one ([ReaperName], [GuardName]) and does not return then; otherwise it
// returns at once. Call it first thing in main, before any flag parsing or
// heavy set-up, and in the TestMain of every test binary used as a
// [Reaper] or [Guard] executable.
func Dispatch() {
	switch os.Args[0] {
	case ReaperName:
		runReaper()
	case GuardName:
		os.Exit(runGuard(os.Stdin))
	}
}

// helperEnv is the environment of a helper process: none of this program's
// (a reaper gets its command's environment over the control socket), but
// one processor for the Go runtime (a helper has next to no work; fewer
// threads and caches keep it small) and GORACE, which tells a race-enabled
// build how to exit.
func helperEnv() []string {
	env := []string{"GOMAXPROCS=1"}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	return env
}

// Reaper starts commands, each under a reaper process of its own (see the
// package documentation).
type Reaper struct {
	path string
	// fallback, if not "", is run as the reaper once path could not be
	// (see [NewHelperReaper]); usingFallback is set from then on.
	fallback      string
	usingFallback atomic.Bool
	sub           *Subreaper
}

// NewReaper returns a Reaper that runs the executable at path as the
// reaper; path's main must call [Dispatch] first ([SelfExe] for this
// program). If sub is not nil, every reaper is started as a known child of
// sub, which then never takes it for an orphan.
func NewReaper(path string, sub *Subreaper) *Reaper {
	return &Reaper{path: path, sub: sub}
}

// NewHelperReaper returns a Reaper that runs the dedicated reaper
// executable installed beside this program's own, named [ReaperName]
// (cmd/fc-reaper: a small program whose main is [Dispatch] and nothing
// else, so a reaper costs a fraction of what this program would, in
// memory and in start time). Where there is none it runs [SelfExe], as
// NewReaper(SelfExe, sub) does. If the helper cannot be run as a reaper
// (not executable, not a reaper, a version that speaks another protocol)
// the first Start that finds out runs SelfExe instead, and so does every
// later one: the orphan guarantees are the same either way, only the cost
// differs.
func NewHelperReaper(sub *Subreaper) *Reaper {
	path, fallback := Helper()
	return &Reaper{path: path, fallback: fallback, sub: sub}
}

// Helper returns the executable to run the helpers (reapers, the guard)
// as: the dedicated helper [ReaperName] installed beside this program's
// executable, with [SelfExe] as the fallback, or [SelfExe] and no fallback
// ("") where there is none.
func Helper() (path, fallback string) {
	if exe, err := os.Executable(); err == nil {
		if helper, ok := helperBeside(exe); ok {
			return helper, SelfExe
		}
	}
	return SelfExe, ""
}

// helperBeside returns the path of a regular, executable file named
// [ReaperName] in the directory of the executable exe.
func helperBeside(exe string) (string, bool) {
	helper := filepath.Join(filepath.Dir(exe), ReaperName)
	if helper == exe {
		return "", false // this program is the helper
	}
	fi, err := os.Stat(helper)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return helper, true
}

// Path is the executable the next Start runs as the reaper.
func (r *Reaper) Path() string {
	if r.fallback != "" && r.usingFallback.Load() {
		return r.fallback
	}
	return r.path
}

// Command is a command for [Reaper.Start]: what os/exec would run.
type Command struct {
	Path string   // the executable, as resolved by exec.LookPath
	Args []string // argv, Args[0] included
	Env  []string // the whole environment
	// Stdin, Stdout and Stderr become the command's; nil is /dev/null.
	Stdin, Stdout, Stderr *os.File
}

// Process is a command running under a reaper. Wait for it: a Process
// dropped unwaited is collected in time, and the finalizer of its control
// socket then closes it, which the reaper takes for the program's death (it
// kills the command and exits, a zombie until the program exits).
type Process struct {
	// Pid is the command's process id; the command leads its own process
	// group, so Pid is also the group's id.
	Pid int

	reaper *exec.Cmd
	sub    *Subreaper

	mu        sync.Mutex // guards ctl (writes and close) and killTimer
	ctl       *os.File
	killTimer *time.Timer
}

// Start starts a reaper, in a new process group, that starts c. It returns
// once c runs; if c cannot be started, the error is the one os/exec would
// have returned (an *os.PathError with Op "fork/exec").
func (r *Reaper) Start(c Command) (*Process, error) {
	path := r.Path()
	p, err := r.start(path, c)
	var ne *notReaperError
	if err == nil || r.fallback == "" || path == r.fallback || !errors.As(err, &ne) {
		return p, err
	}
	// The helper did not start the command (nothing of c runs): the
	// fallback from now on.
	r.usingFallback.Store(true)
	p, ferr := r.start(r.fallback, c)
	if ferr != nil {
		return nil, errors.Join(ferr, err)
	}
	return p, nil
}

// notReaperError is a reaper executable that did not start the command: it
// could not be run, did not speak the protocol, or died first.
type notReaperError struct{ err error }

func (e *notReaperError) Error() string { return e.err.Error() }
func (e *notReaperError) Unwrap() error { return e.err }

// start is Start with path as the reaper.
func (r *Reaper) start(path string, c Command) (*Process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start reaper: control socket: %w", err)
	}
	// Only our end is non-blocking, so reads of it honour a deadline.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("start reaper: control socket: %w", err)
	}
	ctl := os.NewFile(uintptr(fds[0]), "reaper control")
	child := os.NewFile(uintptr(fds[1]), "reaper control")
	defer child.Close()

	cmd := exec.Command(path)
	cmd.Args = []string{ReaperName}
	cmd.Env = helperEnv()
	// A nil *os.File must stay a nil io.Reader/io.Writer.
	if c.Stdin != nil {
		cmd.Stdin = c.Stdin
	}
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	cmd.ExtraFiles = []*os.File{child} // ctlFD
	// Its own group: a Ctrl-C aimed at our terminal job does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.sub.startKnown(cmd); err != nil {
		ctl.Close()
		return nil, &notReaperError{fmt.Errorf("start reaper %s: %w", path, err)}
	}
	child.Close()

	p := &Process{reaper: cmd, sub: r.sub, ctl: ctl}
	pid, err := p.handshake(c)
	if err != nil {
		return nil, err
	}
	p.Pid = pid
	return p, nil
}

// handshake sends c to the reaper and reads back the command's pid. On
// failure the reaper has been waited for.
func (p *Process) handshake(c Command) (int, error) {
	spec, err := json.Marshal(startSpec{Protocol: reaperProtocol, Path: c.Path, Args: c.Args, Env: c.Env})
	if err != nil {
		p.abort()
		return 0, fmt.Errorf("start reaper: %w", err)
	}
	_ = p.ctl.SetDeadline(time.Now().Add(startTimeout))
	_, err = p.ctl.Write(append(spec, '\n'))
	var reply string
	if err == nil {
		reply, err = bufio.NewReader(p.ctl).ReadString('\n')
	}
	_ = p.ctl.SetDeadline(time.Time{})
	word, arg, _ := strings.Cut(strings.TrimSpace(reply), " ")
	n, convErr := strconv.Atoi(arg)
	switch {
	case err == nil && convErr == nil && word == "pid" && n > 0:
		return n, nil
	case err == nil && convErr == nil && word == "error" && n > 0:
		p.wait()
		return 0, &os.PathError{Op: "fork/exec", Path: c.Path, Err: syscall.Errno(n)}
	}
	// Not a reaper (its main does not call Dispatch), one of another
	// protocol version ("version N"), or it died.
	p.abort()
	if err == nil {
		err = fmt.Errorf("unexpected reply %q", reply)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A reaper too slow to answer on a loaded machine is no sign of
		// the wrong one: no fallback.
		return 0, fmt.Errorf("reaper %s did not start the command within %s: %w", p.reaper.Path, startTimeout, err)
	}
	return 0, &notReaperError{fmt.Errorf("reaper %s (%s) did not start the command: %w", p.reaper.Path, p.reaper.ProcessState, err)}
}

// abort kills the reaper and waits for it.
func (p *Process) abort() {
	_ = p.reaper.Process.Kill()
	p.wait()
}

func (p *Process) wait() {
	_, _ = p.Wait()
}

// ReaperPid is the reaper's process id.
func (p *Process) ReaperPid() int { return p.reaper.Process.Pid }

// Terminate sends SIGTERM to the command's process group.
func (p *Process) Terminate() {
	p.send(cmdTerm)
}

// Kill sends SIGKILL to the command's process group and to every other
// descendant of the reaper. A reaper that has not exited killGrace later is
// SIGKILLed itself.
func (p *Process) Kill() {
	p.mu.Lock()
	if p.killTimer == nil && p.ctl != nil {
		p.killTimer = time.AfterFunc(killGrace, func() { _ = p.reaper.Process.Kill() })
	}
	p.mu.Unlock()
	p.send(cmdKill)
}

// send writes a command byte; if the reaper cannot be told, it is killed.
func (p *Process) send(c byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctl == nil {
		return // waited for already
	}
	if _, err := p.ctl.Write([]byte{c}); err != nil {
		// os.Process.Kill never signals a process that was reaped.
		_ = p.reaper.Process.Kill()
	}
}

// Wait waits for the reaper to exit, which it does once the command has
// exited and every descendant is gone, and returns its state: that of the
// command (same exit status, or the same signal). The error is what
// exec.Cmd.Wait returns for that state.
func (p *Process) Wait() (*os.ProcessState, error) {
	err := p.reaper.Wait()
	p.sub.forget(p.reaper.Process.Pid)
	p.mu.Lock()
	if p.killTimer != nil {
		p.killTimer.Stop()
	}
	if p.ctl != nil {
		p.ctl.Close()
		p.ctl = nil
	}
	p.mu.Unlock()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return p.reaper.ProcessState, fmt.Errorf("wait for reaper: %w", err)
	}
	return p.reaper.ProcessState, err
}
