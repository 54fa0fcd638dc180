package procguard_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/testutil"
)

const waitFor = 20 * time.Second

// pids waits for the pid files names in dir and identifies their
// processes; at cleanup whatever still runs of them is killed.
func pids(t *testing.T, dir string, names ...string) map[string]testutil.Proc {
	t.Helper()
	out := map[string]testutil.Proc{}
	require.Eventually(t, func() bool {
		for _, n := range names {
			if _, ok := out[n]; ok {
				continue
			}
			pid, ok := readPIDFile(filepath.Join(dir, n))
			if !ok {
				return false
			}
			p, ok := testutil.Identify(pid)
			require.True(t, ok, "%s (pid %d) is not running", n, pid)
			out[n] = p
		}
		return true
	}, waitFor, 5*time.Millisecond, "pid files %v in %s", names, dir)
	t.Cleanup(func() {
		for _, p := range out {
			p.Kill()
		}
	})
	return out
}

// requireGone waits until none of procs runs.
func requireGone(t *testing.T, procs map[string]testutil.Proc, names ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range names {
			if procs[n].Alive() {
				return false
			}
		}
		return true
	}, waitFor, 5*time.Millisecond, "all of %v must be gone: %v", names, procs)
}

func self(t *testing.T) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

// startTree starts roleTree under a reaper from this process; extra env is
// added to its environment.
func startTree(t *testing.T, dir string, extra ...string) (*procguard.Process, *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { inW.Close() })
	defer inR.Close()
	exe := self(t)
	cmd := roleCmd("tree", dir)
	p, err := procguard.NewReaper(procguard.SelfExe, nil).Start(procguard.Command{
		Path: exe, Args: []string{exe}, Env: append(cmd.Env, extra...), Stdin: inR, Stderr: os.Stderr,
	})
	require.NoError(t, err)
	return p, inW
}

func waitStatus(t *testing.T, p *procguard.Process) syscall.WaitStatus {
	t.Helper()
	st, _ := p.Wait()
	require.NotNil(t, st)
	return st.Sys().(syscall.WaitStatus)
}

// When the command exits, whatever it left — in its group, in a session of
// its own, orphaned — is killed before Wait returns, and Wait reports the
// command's own exit status.
func TestReaperKillsTreeOnExit(t *testing.T) {
	for name, end := range map[string]func(*procguard.Process, *os.File){
		"stdin closed": func(_ *procguard.Process, in *os.File) { in.Close() },
		"terminated":   func(p *procguard.Process, _ *os.File) { p.Terminate() },
		"killed":       func(p *procguard.Process, _ *os.File) { p.Kill() },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p, in := startTree(t, dir)
			procs := pids(t, dir, "server", "gc", "helper", "daemon")
			assert.Equal(t, procs["server"].PID, p.Pid, "Pid is the command's")
			st, ok := testutil.ProcStat(p.Pid)
			require.True(t, ok)
			assert.Equal(t, p.Pid, st.PGID, "the command leads its own group")
			assert.Equal(t, procguard.ReaperName, testutil.Comm(p.ReaperPid()))
			end(p, in)
			ws := waitStatus(t, p)
			switch name {
			case "stdin closed":
				assert.True(t, ws.Exited() && ws.ExitStatus() == 0, "status %v", ws)
			case "terminated":
				assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "status %v", ws)
			case "killed":
				assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "status %v", ws)
			}
			for n, proc := range procs {
				assert.False(t, proc.Alive(), "%s (pid %d) outlived Wait", n, proc.PID)
			}
		})
	}
}

// The reaper exits the way its command did, so callers see the same exit
// status or the same signal as without a reaper, and dumps no core.
func TestReaperMirrorsExit(t *testing.T) {
	for _, tc := range []struct {
		script string
		exit   int
		sig    syscall.Signal
	}{
		{script: "exit 0"},
		{script: "exit 7", exit: 7},
		{script: "kill -TERM $$", sig: syscall.SIGTERM},
		{script: "kill -KILL $$", sig: syscall.SIGKILL},
		{script: "kill -SEGV $$", sig: syscall.SIGSEGV},
		{script: "kill -ABRT $$", sig: syscall.SIGABRT},
		{script: "kill -USR1 $$", sig: syscall.SIGUSR1},
		{script: "kill -PIPE $$", sig: syscall.SIGPIPE},
	} {
		t.Run(tc.script, func(t *testing.T) {
			dir := t.TempDir()
			sh, err := exec.LookPath("sh")
			require.NoError(t, err)
			p, err := procguard.NewReaper(procguard.SelfExe, nil).Start(procguard.Command{
				Path: sh, Args: []string{"sh", "-c", tc.script}, Env: []string{"PATH=" + os.Getenv("PATH")},
			})
			require.NoError(t, err)
			st, err := p.Wait()
			ws := st.Sys().(syscall.WaitStatus)
			if tc.sig != 0 {
				require.True(t, ws.Signaled(), "status %v", ws)
				assert.Equal(t, tc.sig, ws.Signal())
				assert.False(t, ws.CoreDump(), "the reaper dumped core")
			} else {
				require.True(t, ws.Exited(), "status %v", ws)
				assert.Equal(t, tc.exit, ws.ExitStatus())
			}
			direct := exec.Command(sh, "-c", tc.script)
			derr := direct.Run()
			assert.Equal(t, direct.ProcessState.String(), st.String(), "same state as without a reaper")
			assert.Equal(t, derr == nil, err == nil)
			entries, _ := os.ReadDir(dir)
			assert.Empty(t, entries)
		})
	}
}

// A command that cannot be started fails with the error os/exec gives.
func TestReaperStartError(t *testing.T) {
	for _, path := range []string{"/nonexistent/server", t.TempDir()} {
		_, err := procguard.NewReaper(procguard.SelfExe, nil).Start(procguard.Command{Path: path, Args: []string{path, "--flag"}})
		require.Error(t, err)
		derr := exec.Command(path, "--flag").Start()
		assert.Equal(t, derr.Error(), err.Error())
		var pe *os.PathError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "fork/exec", pe.Op)
		if path == "/nonexistent/server" {
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}
	}
}

// A reaper executable that does not dispatch is reported, not waited for
// forever.
func TestReaperNotAReaper(t *testing.T) {
	sh, err := exec.LookPath("true")
	require.NoError(t, err)
	_, err = procguard.NewReaper(sh, nil).Start(procguard.Command{Path: sh, Args: []string{"true"}})
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "did not start the command")
}

// The program that started the reaper dies (SIGKILL, no chance to clean
// up): the reaper kills the command and everything it left at once.
func TestReaperParentKilled(t *testing.T) {
	dir := t.TempDir()
	parent := roleCmd("parent", dir)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
		_ = parent.Wait()
	})
	procs := pids(t, dir, "reaper", "server", "gc", "helper", "daemon", "known", "known-reaper", "plain")
	require.NoError(t, parent.Process.Kill())
	requireGone(t, procs, "reaper", "server", "gc", "helper", "daemon", "known", "known-reaper")
}

// A reaper is SIGKILLed itself: its command dies by its parent-death
// signal, and the program's Subreaper kills what the command left, which
// was reparented to it, but none of the program's own children.
func TestReaperKilledSubreaperSweeps(t *testing.T) {
	dir := t.TempDir()
	parent := roleCmd("parent", dir)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
		_ = parent.Wait()
	})
	procs := pids(t, dir, "reaper", "server", "gc", "helper", "daemon", "known", "known-reaper", "plain")
	procs["reaper"].Kill()
	requireGone(t, procs, "reaper", "server", "gc", "helper", "daemon")
	for _, n := range []string{"known", "known-reaper", "plain"} {
		assert.True(t, procs[n].Alive(), "%s was killed by the sweep", n)
	}
	// Nothing is left unreaped under the program either.
	require.Eventually(t, func() bool { return len(childZombies(parent.Process.Pid)) == 0 }, waitFor, 5*time.Millisecond, "zombie children of the program: %v", childZombies(parent.Process.Pid))
}

func childZombies(ppid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := testutil.ProcStat(pid); ok && st.PPID == ppid && st.State == 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// The guard is SIGKILLed: a new one is started and told the live groups, so
// that when the program and a command's leader are then killed together,
// the rest of the command's group still dies.
func TestGuardRestarted(t *testing.T) {
	dir := t.TempDir()
	parent := roleCmd("guardparent", dir)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
		_ = parent.Wait()
	})
	procs := pids(t, dir, "guard", "leader", "gc", "helper", "daemon")
	assert.Equal(t, procguard.GuardName, testutil.Comm(procs["guard"].PID))
	procs["guard"].Kill()
	var next testutil.Proc
	require.Eventually(t, func() bool {
		pid, ok := readPIDFile(filepath.Join(dir, "guard"))
		if !ok || pid == procs["guard"].PID {
			return false
		}
		next, ok = testutil.Identify(pid)
		return ok
	}, waitFor, 5*time.Millisecond, "no new guard after %d was killed", procs["guard"].PID)
	t.Cleanup(next.Kill)
	require.Eventually(t, func() bool { return testutil.Comm(next.PID) == procguard.GuardName }, waitFor, 5*time.Millisecond)

	require.NoError(t, parent.Process.Kill())
	procs["leader"].Kill()
	requireGone(t, procs, "leader", "gc")
	// The guard kills groups only: the session helpers are a reaper's job.
	require.Eventually(t, func() bool { return !next.Alive() }, waitFor, 5*time.Millisecond, "the guard exits after its kills")
}
