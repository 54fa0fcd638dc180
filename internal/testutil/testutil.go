// Package testutil holds what tests of several packages need to run real MCP
// servers: the test server binary, built once per test binary, and /proc
// readers to prove that no process outlives its test. It is imported by
// tests only.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/freecode/freecode/internal/procguard"
)

// RepoRoot is the module's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// BuildTestServer builds cmd/mcp-testserver into dir and returns its path.
func BuildTestServer(dir string) (string, error) {
	bin := filepath.Join(dir, "mcp-testserver")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcp-testserver")
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build mcp-testserver: %w\n%s", err, out)
	}
	return bin, nil
}

// Main is a TestMain for packages that run the test server: it builds it,
// stores its path in *bin, runs the tests under goleak and removes the
// build at the end. Run as a reaper or guard (procguard.Dispatch), the test
// binary is that and nothing else.
func Main(m *testing.M, bin *string) {
	procguard.Dispatch()
	DefaultChildSignals()
	if os.Getenv("GORACE") == "" {
		// A race-enabled reaper otherwise sleeps a second before exiting.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	dir, err := os.MkdirTemp("", "freecode-testserver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = BuildTestServer(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// DefaultChildSignals makes the processes this test binary starts begin
// with the default actions for SIGHUP and SIGINT, as every process that
// freecode starts does: freecode catches both (cmd/freecode/app.go), and a
// caught signal is reset to its default by exec. Go's runtime keeps an
// inherited SIG_IGN for exactly these two, so a test binary run by nohup, by
// a non-interactive shell's background job or by a CI runner that ignores
// them would otherwise hand the ignored disposition to every server it
// starts, and a test that signals one would wait for an exit that never
// comes. Catching them here changes nothing else: deliveries to the test
// binary are dropped, as they were ignored before. Signals that are not
// ignored are left alone, so Ctrl-C still stops a test run.
func DefaultChildSignals() {
	for _, sig := range []os.Signal{unix.SIGHUP, unix.SIGINT} {
		if signal.Ignored(sig) {
			// Never read: the signal package drops what a full channel
			// cannot take.
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}

// Stat is what /proc/<pid>/stat says of a process.
type Stat struct {
	State byte // R, S, D, Z, ...
	PPID  int
	PGID  int
}

// ProcStat reads /proc/<pid>/stat; ok is false when the process is gone.
func ProcStat(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return Stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return Stat{State: f[0][0], PPID: ppid, PGID: pgid}, true
}

// Alive reports whether pid runs. A zombie does not: it only waits to be
// reaped by its parent (here possibly an init that never reaps).
func Alive(pid int) bool {
	st, ok := ProcStat(pid)
	return ok && st.State != 'Z' && st.State != 'X'
}

// GroupMembers lists the live processes of process group pgid.
func GroupMembers(pgid int) []int {
	return scan(func(st Stat) bool { return st.PGID == pgid })
}

// Children lists the live children of process ppid.
func Children(ppid int) []int {
	return scan(func(st Stat) bool { return st.PPID == ppid })
}

func scan(match func(Stat) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ProcStat(pid); ok && st.State != 'Z' && st.State != 'X' && match(st) {
			out = append(out, pid)
		}
	}
	return out
}

// Proc is one process, told apart from a later one with the same pid by its
// start time.
type Proc struct {
	PID   int
	Start uint64 // clock ticks after boot (field 22 of /proc/<pid>/stat)
}

// Identify returns the process that has pid now; ok is false when none.
func Identify(pid int) (Proc, bool) {
	start, ok := startTime(pid)
	return Proc{PID: pid, Start: start}, ok
}

func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	// After "(comm)": state is field 3, starttime field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}

// Alive reports whether p still runs: same pid, same start time, and not a
// zombie.
func (p Proc) Alive() bool {
	start, ok := startTime(p.PID)
	return ok && start == p.Start && Alive(p.PID)
}

// Kill sends SIGKILL to p if it still runs; a pid reused by another process
// is left alone.
func (p Proc) Kill() {
	if p.Alive() {
		_ = unix.Kill(p.PID, unix.SIGKILL)
	}
}

// Descendants lists the live descendants of pid.
func Descendants(pid int) []Proc {
	entries, _ := os.ReadDir("/proc")
	parent, live := map[int]int{}, map[int]bool{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ProcStat(p); ok {
			parent[p] = st.PPID
			live[p] = st.State != 'Z' && st.State != 'X'
		}
	}
	var out []Proc
	for p := range parent {
		if !live[p] {
			continue
		}
		for q, n := parent[p], 0; q > 0 && n < len(parent); q, n = parent[q], n+1 {
			if q == pid {
				if id, ok := Identify(p); ok {
					out = append(out, id)
				}
				break
			}
		}
	}
	return out
}

// Comm is the process's name (/proc/<pid>/comm), "" when it is gone.
func Comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
