package procguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The control protocol between a Reaper (parent) and its reaper process,
// over a unix stream socket that the reaper has as file descriptor ctlFD:
//
//	parent → reaper  one JSON line, a startSpec
//	reaper → parent  "pid <PID>\n" once the command runs, or
//	                 "error <ERRNO>\n" if it could not be started (then the
//	                 reaper exits with exitStartFailed), or
//	                 "version <N>\n" if the spec's protocol is not this
//	                 reaper's N (then it exits with exitUsage, having
//	                 started nothing)
//	parent → reaper  single bytes: cmdTerm, cmdKill
//
// End of file from the parent means the parent has died (its end is close-
// on-exec and held by no other process): the reaper kills everything.
const (
	// reaperProtocol is the version of this protocol, which a startSpec
	// names: the reaper may be a separate executable (cmd/fc-reaper) of
	// another version than the program that runs it. Change it with any
	// change to the protocol or to what a reaper does.
	reaperProtocol = 1

	ctlFD   = 3
	cmdTerm = 'T' // SIGTERM to the command's process group
	cmdKill = 'K' // SIGKILL to the command's process group and every descendant

	// exitUsage: the reaper was run by hand or by a program that does not
	// speak the protocol.
	exitUsage = 2
	// exitStartFailed: the command could not be started (reported first).
	exitStartFailed = 127

	// reapPoll paces the final kill-and-reap loop between SIGCHLDs: an
	// orphan reparented to the reaper sends none.
	reapPoll = 5 * time.Millisecond
)

// startSpec is the command a reaper starts. It travels over the control
// socket rather than the command line so that the environment, which may
// hold secrets, is not shown in the reaper's /proc/<pid>/cmdline, and so
// that it does not configure the reaper's own Go runtime (GODEBUG, GOGC).
type startSpec struct {
	Protocol int      `json:"protocol"`
	Path     string   `json:"path"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
}

// runReaper is the reaper process's main. It does not return.
func runReaper() {
	setComm(ReaperName)
	if _, err := unix.FcntlInt(ctlFD, unix.F_GETFD, 0); err != nil {
		fmt.Fprintf(os.Stderr, "%s: this is an internal helper of freecode, not a command\n", ReaperName)
		os.Exit(exitUsage)
	}
	// The command must not inherit the control socket.
	unix.CloseOnExec(ctlFD)
	ctl := os.NewFile(ctlFD, "control")
	in := bufio.NewReader(ctl)
	line, err := in.ReadBytes('\n')
	if err != nil {
		os.Exit(exitUsage) // the parent died before it sent the command
	}
	var spec startSpec
	if err := json.Unmarshal(line, &spec); err != nil || spec.Path == "" || len(spec.Args) == 0 {
		fmt.Fprintf(os.Stderr, "%s: bad start request\n", ReaperName)
		os.Exit(exitUsage)
	}
	if spec.Protocol != reaperProtocol {
		fmt.Fprintf(ctl, "version %d\n", reaperProtocol)
		os.Exit(exitUsage)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "%s: become a child subreaper: %v\n", ReaperName, err)
	}

	// Subscribed before the command starts, so none is missed.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)

	pid, err := syscall.ForkExec(spec.Path, spec.Args, &syscall.ProcAttr{
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2},
		// Its own process group, as without a reaper; SIGKILL if the
		// reaper dies (this goroutine's thread lives as long as the
		// process: nothing here locks a goroutine to its thread).
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(ctl, "error %d\n", int(errno))
		os.Exit(exitStartFailed)
	}
	fmt.Fprintf(ctl, "pid %d\n", pid)
	// stdin and stdout are the command's: holding them would delay the end
	// of file its reader waits for. stderr stays for the reaper's own
	// messages; it is closed when the reaper exits, right after the
	// command and its descendants.
	os.Stdin.Close()
	os.Stdout.Close()
	// The reaper lives as long as its command, one per server: hand back
	// what the program's package initialisation allocated and dropped.
	debug.FreeOSMemory()

	self := os.Getpid()
	exited := make(chan struct{})
	go func() {
		// Wait without reaping: while the command is an unreaped zombie
		// its pid, which is its process group's id, cannot be reused, so
		// the group signals below never reach another process.
		var info unix.Siginfo
		for errors.Is(unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil), unix.EINTR) {
		}
		close(exited)
	}()
	cmds := make(chan byte)
	parentGone := make(chan struct{})
	// Both goroutines block until the process exits, which ends them.
	go func() {
		for {
			b, err := in.ReadByte()
			if err != nil {
				close(parentGone)
				return
			}
			cmds <- b
		}
	}()

	for running := true; running; {
		select {
		case <-exited:
			running = false
		case c := <-cmds:
			switch c {
			case cmdTerm:
				_ = unix.Kill(-pid, unix.SIGTERM)
			case cmdKill:
				_ = unix.Kill(-pid, unix.SIGKILL)
				killSubtree(self)
			}
		case <-parentGone:
			parentGone = nil
			_ = unix.Kill(-pid, unix.SIGKILL)
			killSubtree(self)
		case s := <-sigs:
			if s == unix.SIGCHLD {
				reapOrphans(self, pid)
			} else {
				// Meant for the command: a user's `kill` of the reaper.
				_ = unix.Kill(-pid, s.(syscall.Signal))
			}
		}
	}
	exitLike(finish(self, pid, sigs))
}

// reapOrphans reaps the exited children of this process other than the
// command: orphans that were reparented to the reaper while the command
// runs. The command itself stays unreaped (see runReaper).
func reapOrphans(self, command int) {
	for _, c := range childrenOf(scanProcs(), self) {
		if c.pid != command && c.zombie() {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(c.pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// finish runs once the command has exited: it kills the command's group and
// every other descendant, reaps them all, and returns the command's wait
// status.
func finish(self, command int, sigs <-chan os.Signal) unix.WaitStatus {
	_ = unix.Kill(-command, unix.SIGKILL)
	var status unix.WaitStatus
	tick := time.NewTicker(reapPoll)
	defer tick.Stop()
	for {
		killSubtree(self)
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ECHILD) {
				return status // nothing left
			}
			if err != nil || pid == 0 {
				break // children left, none ended yet
			}
			if pid == command {
				status = ws
			}
		}
		select {
		case <-sigs:
		case <-tick.C:
		}
	}
}

// exitLike ends this process the way ws says the command ended.
func exitLike(ws unix.WaitStatus) {
	if ws.Signaled() {
		dieBySignal(ws.Signal())
	}
	os.Exit(ws.ExitStatus())
}

// dieBySignal ends this process by sig, so its parent sees what it would
// have seen of the command itself. The Go runtime handles most signals
// (some it ignores when they come from kill, some it turns into a crash
// report), so the default action is restored first. No core is dumped: a
// core of the command, if any, was the command's.
func dieBySignal(sig syscall.Signal) {
	runtime.LockOSThread()
	signal.Reset()
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if sig != unix.SIGKILL {
		setDefaultAction(sig)
		var set unix.Sigset_t
		set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
		_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	}
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	// Only reached if sig does not end a process by default or its default
	// action could not be restored on this architecture.
	os.Exit(128 + int(sig))
}
