package procguard_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/testutil"
)

// buildHelper builds cmd/fc-reaper, the dedicated reaper, into a directory
// of the test's.
func buildHelper(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), procguard.ReaperName)
	build := exec.Command("go", "build", "-o", bin, "./cmd/fc-reaper")
	build.Dir = testutil.RepoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build fc-reaper: %s", out)
	return bin
}

// The dedicated reaper keeps every guarantee of the program run as its own
// reaper: the scenarios of the tests above, with cmd/fc-reaper as the
// reaper.
func TestHelperReaper(t *testing.T) {
	helper := buildHelper(t)

	t.Run("tree killed on exit", func(t *testing.T) {
		for name, end := range map[string]func(*procguard.Process, *os.File){
			"stdin closed": func(_ *procguard.Process, in *os.File) { in.Close() },
			"terminated":   func(p *procguard.Process, _ *os.File) { p.Terminate() },
			"killed":       func(p *procguard.Process, _ *os.File) { p.Kill() },
		} {
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				inR, inW, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { inW.Close() })
				exe := self(t)
				p, err := procguard.NewReaper(helper, nil).Start(procguard.Command{
					Path: exe, Args: []string{exe}, Env: roleCmd("tree", dir).Env, Stdin: inR, Stderr: os.Stderr,
				})
				inR.Close()
				require.NoError(t, err)
				procs := pids(t, dir, "server", "gc", "helper", "daemon")
				assert.Equal(t, procs["server"].PID, p.Pid)
				assert.Equal(t, procguard.ReaperName, testutil.Comm(p.ReaperPid()))
				exe2, err := os.Readlink("/proc/" + strconv.Itoa(p.ReaperPid()) + "/exe")
				require.NoError(t, err)
				assert.Equal(t, helper, exe2, "the helper is the reaper, not this program")
				end(p, inW)
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
	})

	t.Run("exit mirrored", func(t *testing.T) {
		sh, err := exec.LookPath("sh")
		require.NoError(t, err)
		for script, want := range map[string]string{"exit 7": "exit status 7", "kill -SEGV $$": "signal: segmentation fault"} {
			p, err := procguard.NewReaper(helper, nil).Start(procguard.Command{Path: sh, Args: []string{"sh", "-c", script}})
			require.NoError(t, err)
			st, _ := p.Wait()
			assert.Equal(t, want, st.String(), script)
		}
	})

	t.Run("start error", func(t *testing.T) {
		_, err := procguard.NewReaper(helper, nil).Start(procguard.Command{Path: "/nonexistent/server", Args: []string{"server"}})
		derr := exec.Command("/nonexistent/server").Start()
		require.Error(t, err)
		assert.Equal(t, derr.Error(), err.Error())
	})

	// The program SIGKILLed with servers running: each server's helper
	// kills its whole tree, the setsid helper and the orphaned daemon
	// included.
	t.Run("parent killed", func(t *testing.T) {
		dir := t.TempDir()
		parent := roleCmd("parent", dir)
		parent.Env = append(parent.Env, reaperEnv+"="+helper)
		parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, parent.Start())
		t.Cleanup(func() {
			_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
			_ = parent.Wait()
		})
		procs := pids(t, dir, "reaper", "server", "gc", "helper", "daemon", "known", "known-reaper", "plain")
		assert.Equal(t, procguard.ReaperName, testutil.Comm(procs["reaper"].PID))
		require.NoError(t, parent.Process.Kill())
		requireGone(t, procs, "reaper", "server", "gc", "helper", "daemon", "known", "known-reaper")
	})

	// The helper SIGKILLed on its own: the server dies by its parent-death
	// signal and the program's Subreaper takes the rest.
	t.Run("reaper killed", func(t *testing.T) {
		dir := t.TempDir()
		parent := roleCmd("parent", dir)
		parent.Env = append(parent.Env, reaperEnv+"="+helper)
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
	})
}

// A helper that cannot serve as the reaper (missing, not a reaper, one of
// another protocol version) leaves nothing running, and the Reaper runs
// its fallback for this start and every later one.
func TestHelperFallback(t *testing.T) {
	scratch := t.TempDir()
	otherVersion := filepath.Join(scratch, "other-version")
	// What a helper of another protocol version answers.
	require.NoError(t, os.WriteFile(otherVersion, []byte("#!/bin/sh\nread spec <&3\necho 'version 99' >&3\nexit 2\n"), 0o755))
	trueBin, err := exec.LookPath("true")
	require.NoError(t, err)
	for name, helper := range map[string]string{
		"missing":       filepath.Join(scratch, "missing"),
		"not a reaper":  trueBin,
		"other version": otherVersion,
	} {
		t.Run(name, func(t *testing.T) {
			r := procguard.NewReaperWithFallback(helper, procguard.SelfExe, nil)
			assert.Equal(t, helper, r.Path())
			for range 2 {
				sh, err := exec.LookPath("sh")
				require.NoError(t, err)
				p, err := r.Start(procguard.Command{Path: sh, Args: []string{"sh", "-c", "exit 3"}})
				require.NoError(t, err)
				assert.Equal(t, procguard.SelfExe, r.Path(), "the fallback from now on")
				exe, err := os.Readlink("/proc/" + strconv.Itoa(p.ReaperPid()) + "/exe")
				require.NoError(t, err)
				assert.Equal(t, self(t), exe)
				st, _ := p.Wait()
				assert.Equal(t, 3, st.ExitCode())
			}
			assert.Empty(t, testutil.Children(os.Getpid()), "the failed helper was reaped")
		})
	}

	// A command that cannot be started is the command's error, not the
	// helper's: no fallback.
	t.Run("start error", func(t *testing.T) {
		helper := buildHelper(t)
		r := procguard.NewReaperWithFallback(helper, procguard.SelfExe, nil)
		_, err := r.Start(procguard.Command{Path: "/nonexistent/server", Args: []string{"server"}})
		require.Error(t, err)
		assert.Equal(t, helper, r.Path())
	})
}

// A reaper asked to start a command in another version of the protocol
// starts nothing: it names its own version and exits with status 2.
func TestReaperRefusesOtherProtocol(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	ours, theirs := os.NewFile(uintptr(fds[0]), "ctl"), os.NewFile(uintptr(fds[1]), "ctl")
	defer ours.Close()
	marker := filepath.Join(t.TempDir(), "started")
	cmd := exec.Command(self(t))
	cmd.Args = []string{procguard.ReaperName}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Env = []string{"GORACE=" + os.Getenv("GORACE")}
	require.NoError(t, cmd.Start())
	theirs.Close()
	_, err = ours.WriteString(`{"protocol":99,"path":"/bin/sh","args":["sh","-c","touch ` + marker + `"],"env":[]}` + "\n")
	require.NoError(t, err)
	reply, err := bufio.NewReader(ours).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(reply, "version "), "reply %q", reply)
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.NoFileExists(t, marker)
}

// The guard runs as the helper too, and as the fallback when the helper is
// none or speaks another protocol; either way it kills the groups it knows
// when the program dies.
func TestHelperGuard(t *testing.T) {
	helper := buildHelper(t)
	scratch := t.TempDir()
	otherVersion := filepath.Join(scratch, "other-version")
	// A guard of another protocol version: refuses the first line.
	require.NoError(t, os.WriteFile(otherVersion, []byte("#!/bin/sh\nread v\nexit 2\n"), 0o755))
	for name, tc := range map[string]struct{ path, want string }{
		"helper":        {helper, helper},
		"other version": {otherVersion, self(t)},
		"missing":       {filepath.Join(scratch, "missing"), self(t)},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			parent := roleCmd("guardparent", dir)
			parent.Env = append(parent.Env, guardEnv+"="+tc.path)
			parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			require.NoError(t, parent.Start())
			t.Cleanup(func() {
				_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
				_ = parent.Wait()
			})
			procs := pids(t, dir, "leader", "gc", "helper", "daemon")
			var guard testutil.Proc
			require.Eventually(t, func() bool {
				pid, ok := readPIDFile(filepath.Join(dir, "guard"))
				if !ok {
					return false
				}
				exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
				if err != nil || exe != tc.want || testutil.Comm(pid) != procguard.GuardName {
					return false
				}
				guard, ok = testutil.Identify(pid)
				return ok
			}, waitFor, 5*time.Millisecond, "no guard running %s", tc.want)
			t.Cleanup(guard.Kill)

			require.NoError(t, parent.Process.Kill())
			procs["leader"].Kill()
			requireGone(t, procs, "leader", "gc")
			require.Eventually(t, func() bool { return !guard.Alive() }, waitFor, 5*time.Millisecond, "the guard exits after its kills")
		})
	}
}

// A guard told another protocol version kills nothing: it exits with
// status 2 at once.
func TestGuardRefusesOtherProtocol(t *testing.T) {
	victim := roleCmd("hold", t.TempDir())
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, victim.Start())
	t.Cleanup(func() {
		_ = victim.Process.Kill()
		_ = victim.Wait()
	})
	cmd := exec.Command(self(t))
	cmd.Args = []string{procguard.GuardName}
	cmd.Env = []string{"GORACE=" + os.Getenv("GORACE")}
	cmd.Stdin = strings.NewReader("v99\n+" + strconv.Itoa(victim.Process.Pid) + "\n")
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.True(t, testutil.Alive(victim.Process.Pid), "the guard killed a group")
}
