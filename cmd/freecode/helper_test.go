package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// installWithHelper puts a copy of this test binary, named freecode, and
// cmd/fc-reaper side by side in a directory first on PATH, as `make
// install` lays them out, and returns the helper's path.
func installWithHelper(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	helper := filepath.Join(dir, procguard.ReaperName)
	build := exec.Command("go", "build", "-o", helper, "./cmd/fc-reaper")
	build.Dir = testutil.RepoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build fc-reaper: %s", out)
	self, err := os.Executable()
	require.NoError(t, err)
	src, err := os.Open(self)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(dir, "freecode"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, dst.Close())
	require.NoError(t, err)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return helper
}

func exeOf(pid int) string {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return exe
}

// With fc-reaper installed beside freecode, serve runs every reaper and
// the guard as fc-reaper, and the orphan guarantees hold as they do with
// freecode as its own reaper (TestOrphans).
func TestOrphansWithHelper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	helper := installWithHelper(t)

	// The processes are the helper's; `-v` says so.
	helpers := func(t *testing.T, p *serveProc, servers []int) {
		t.Helper()
		for _, s := range servers {
			st, ok := testutil.ProcStat(s)
			require.True(t, ok)
			assert.Equal(t, helper, exeOf(st.PPID), "server %d's reaper", s)
			assert.Equal(t, procguard.ReaperName, testutil.Comm(st.PPID))
		}
		g := guardOf(t, p.cmd.Process.Pid, servers)
		assert.Equal(t, helper, exeOf(g.PID), "the guard")
		assert.Equal(t, procguard.GuardName, testutil.Comm(g.PID))
		assert.Contains(t, p.stderr.String(), "reaper="+helper)
	}

	t.Run("serve SIGKILLed with servers running", func(t *testing.T) {
		p, servers, tree := readyServe(t, ts)
		helpers(t, p, servers)
		all := append(descendants(t, p.cmd.Process.Pid), tree...)
		p.signal(syscall.SIGKILL)
		<-p.exited
		requireAllGone(t, all, "after SIGKILL of serve")
	})

	t.Run("serve and guard SIGKILLed together", func(t *testing.T) {
		p, servers, tree := readyServe(t, ts)
		all := append(descendants(t, p.cmd.Process.Pid), tree...)
		self, _ := testutil.Identify(p.cmd.Process.Pid)
		kill(t, self, guardOf(t, p.cmd.Process.Pid, servers))
		<-p.exited
		requireAllGone(t, all, "after SIGKILL of serve and its guard")
	})

	t.Run("reaper SIGKILLed", func(t *testing.T) {
		p, _, tree := readyServe(t, ts)
		st, ok := testutil.ProcStat(tree[0].PID)
		require.True(t, ok)
		reaper, ok := testutil.Identify(st.PPID)
		require.True(t, ok)
		require.Equal(t, helper, exeOf(reaper.PID))
		kill(t, reaper)
		requireAllGone(t, tree, "after the reaper was killed")
		p.waitStatus("g restarted", func(st wire.Status) bool {
			g, _ := server(st, "g")
			return g.Phase == "ready" && g.PID != tree[0].PID
		})
		p.signal(syscall.SIGTERM)
		<-p.exited
		require.NoError(t, p.err)
	})

	t.Run("setsid helper gone on stop", func(t *testing.T) {
		p, _, tree := readyServe(t, ts)
		p.signal(syscall.SIGTERM)
		<-p.exited
		require.NoError(t, p.err)
		requireAllGone(t, tree, "after serve stopped")
	})

	// A one-shot command SIGKILLed while its server starts under the
	// helper: the helper kills the server's whole tree.
	t.Run("status probe SIGKILLed", func(t *testing.T) {
		home := shortHome(t)
		hang := treeServer(ts, home, "hang", "--hang-init")
		hang["timeout"] = 600000
		config{t, filepath.Join(home, "config.json")}.write(cfg(hang), false)
		cmd := exec.Command("freecode", "mcp", "status", "--probe")
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		cmd.Dir = home
		require.NoError(t, cmd.Start())
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		tree := treeProcs(t, home, "hang")
		st, ok := testutil.ProcStat(tree[0].PID)
		require.True(t, ok)
		assert.Equal(t, helper, exeOf(st.PPID), "the server's reaper")
		all := append(descendants(t, cmd.Process.Pid), tree...)
		require.NoError(t, cmd.Process.Kill())
		<-done
		requireAllGone(t, all, "after SIGKILL of `freecode mcp status --probe`")
	})
}
