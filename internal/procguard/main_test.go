package procguard_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"

	"github.com/freecode/freecode/internal/procguard"
)

// The test binary plays every process of these tests: the reaper and the
// guard (procguard.Dispatch), and the roles below, chosen by roleEnv, which
// write the pids of what they start as files into the directory in dirEnv.
const (
	roleEnv = "PROCGUARD_TEST_ROLE"
	dirEnv  = "PROCGUARD_TEST_DIR"
	exitEnv = "PROCGUARD_TEST_EXIT" // role tree: exit with this status at once
	// reaperEnv, if set, is the reaper executable of role parent (else
	// this test binary, procguard.SelfExe).
	reaperEnv = "PROCGUARD_TEST_REAPER"
	// guardEnv, if set, is the guard executable of role guardparent, with
	// this test binary as its fallback.
	guardEnv = "PROCGUARD_TEST_GUARD"
)

func TestMain(m *testing.M) {
	procguard.Dispatch()
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role, os.Getenv(dirEnv)))
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled child otherwise sleeps a second before exiting.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}

func runRole(role, dir string) int {
	var err error
	switch role {
	case "hold":
		hold()
	case "tree":
		err = roleTree(dir)
	case "daemonize":
		err = roleDaemonize(dir)
	case "parent":
		err = roleParent(dir)
	case "guardparent":
		err = roleGuardParent(dir)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "role %s: %v\n", role, err)
		return 1
	}
	return 0
}

// hold blocks until the process is killed.
func hold() {
	for {
		time.Sleep(time.Hour)
	}
}

func roleCmd(role, dir string) *exec.Cmd {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	// Each variable once: a command started through a reaper gets its
	// environment as it is, and Go's getenv takes the first of duplicates.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, roleEnv+"=") && !strings.HasPrefix(kv, dirEnv+"=") && !strings.HasPrefix(kv, exitEnv+"=") && !strings.HasPrefix(kv, reaperEnv+"=") && !strings.HasPrefix(kv, guardEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, roleEnv+"="+role, dirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	return cmd
}

func writePID(dir, name string, pid int) error {
	// Written whole, then renamed: a reader never sees half a pid.
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// roleTree is a server-like process: it starts a grandchild in its own
// group that holds its stdout ("gc"), a helper in a new session ("helper"),
// and an orphan that a short-lived child left in a new session ("daemon");
// then it exits with exitEnv's status, or at the end of stdin.
func roleTree(dir string) error {
	gc := roleCmd("hold", dir)
	gc.Stdout = os.Stdout
	if err := gc.Start(); err != nil {
		return err
	}
	helper := roleCmd("hold", dir)
	helper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := helper.Start(); err != nil {
		return err
	}
	if err := roleCmd("daemonize", dir).Run(); err != nil {
		return err
	}
	for name, pid := range map[string]int{"gc": gc.Process.Pid, "helper": helper.Process.Pid, "server": os.Getpid()} {
		if err := writePID(dir, name, pid); err != nil {
			return err
		}
	}
	if code := os.Getenv(exitEnv); code != "" {
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// roleDaemonize starts a helper in a new session and exits without waiting
// for it, which orphans it.
func roleDaemonize(dir string) error {
	d := roleCmd("hold", dir)
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Start(); err != nil {
		return err
	}
	return writePID(dir, "daemon", d.Process.Pid)
}

// roleParent is a program that uses procguard: a Subreaper runs, a tree runs
// under a reaper ("reaper"), and two children that must survive every
// sweep: one in its own process group under a second reaper ("known"), one
// started plainly in the parent's group ("plain"). It runs until killed.
func roleParent(dir string) error {
	sub, err := procguard.NewSubreaper(logr.Discard())
	if err != nil {
		return err
	}
	go sub.Run(context.Background())
	reaper := procguard.SelfExe
	if p := os.Getenv(reaperEnv); p != "" {
		reaper = p
	}
	r := procguard.NewReaper(reaper, sub)
	self, _ := os.Executable()
	inR, _, err := os.Pipe() // the write end stays open: the tree runs on
	if err != nil {
		return err
	}
	p, err := r.Start(procguard.Command{Path: self, Args: []string{self}, Env: roleCmd("tree", dir).Env, Stdin: inR, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	go func() { _, _ = p.Wait() }()
	known, err := r.Start(procguard.Command{Path: self, Args: []string{self}, Env: roleCmd("hold", dir).Env, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	// Waited for, as every Process must be: one dropped unwaited is
	// collected, and the finalizer of its control socket closes it, which
	// its reaper takes for this program's death (it then kills "known" and
	// exits, a zombie nobody reaps).
	go func() { _, _ = known.Wait() }()
	plain := roleCmd("hold", dir)
	if err := plain.Start(); err != nil {
		return err
	}
	for name, pid := range map[string]int{"known": known.Pid, "known-reaper": known.ReaperPid(), "plain": plain.Process.Pid, "reaper": p.ReaperPid()} {
		if err := writePID(dir, name, pid); err != nil {
			return err
		}
	}
	hold()
	return nil
}

// roleGuardParent runs a Guard that tracks the process group of a tree it
// started directly ("leader"), and writes the guard's pid to "guard" each
// time it changes.
func roleGuardParent(dir string) error {
	opts := procguard.GuardOptions{Path: procguard.SelfExe, Stderr: os.Stderr}
	if p := os.Getenv(guardEnv); p != "" {
		opts.Path, opts.Fallback = p, procguard.SelfExe
	}
	g, err := procguard.StartGuard(opts)
	if err != nil {
		return err
	}
	tree := roleCmd("tree", dir)
	tree.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := tree.StdinPipe(); err != nil {
		return err
	}
	if err := tree.Start(); err != nil {
		return err
	}
	g.Track(tree.Process.Pid, make(chan struct{}))
	if err := writePID(dir, "leader", tree.Process.Pid); err != nil {
		return err
	}
	last := 0
	for {
		if pid := g.Pid(); pid != 0 && pid != last {
			if err := writePID(dir, "guard", pid); err != nil {
				return err
			}
			last = pid
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPIDFile(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
