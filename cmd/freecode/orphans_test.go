package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// These tests kill FreeCode's processes the hard way — serve, its guard,
// a server's reaper, one-shot commands mid-initialize — and check that
// nothing a server started is left: not a grandchild in its process group,
// not a helper in a session of its own.

// treeServer is a test server that leaves a grandchild in its group (pid in
// gc) and a helper in a new session (pid in helper); extra flags follow.
func treeServer(ts, dir, name string, extra ...string) map[string]any {
	return local(name, append([]string{ts,
		"--grandchild", "--grandchild-pid-file", filepath.Join(dir, name+".gc"),
		"--setsid-helper", filepath.Join(dir, name+".helper"),
		"--pid-file", filepath.Join(dir, name+".pid")}, extra...)...)
}

// treeProcs identifies the server, grandchild and helper of treeServer
// name, killing at cleanup whatever of them is left.
func treeProcs(t *testing.T, dir, name string) []testutil.Proc {
	t.Helper()
	var out []testutil.Proc
	for _, f := range []string{".pid", ".gc", ".helper"} {
		p, ok := testutil.Identify(readPID(t, filepath.Join(dir, name+f)))
		require.True(t, ok, "%s%s runs", name, f)
		out = append(out, p)
		t.Cleanup(p.Kill)
	}
	return out
}

// requireAllGone waits until none of procs runs.
func requireAllGone(t *testing.T, procs []testutil.Proc, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(procs, testutil.Proc.Alive)
	}, waitFor, 10*time.Millisecond, "%s: still running: %v", what, alive(procs))
}

func alive(procs []testutil.Proc) []string {
	var out []string
	seen := map[testutil.Proc]bool{}
	for _, p := range procs {
		if !seen[p] && p.Alive() {
			seen[p] = true
			out = append(out, strconv.Itoa(p.PID)+" "+testutil.Comm(p.PID))
		}
	}
	return out
}

// descendants identifies serve and everything below it, killed at cleanup
// if still there.
func descendants(t *testing.T, pid int) []testutil.Proc {
	t.Helper()
	self, ok := testutil.Identify(pid)
	require.True(t, ok)
	out := append(testutil.Descendants(pid), self)
	for _, p := range out {
		t.Cleanup(p.Kill)
	}
	return out
}

// guardOf is serve's guard: its child that none of the servers descends
// from.
func guardOf(t *testing.T, serve int, servers []int) testutil.Proc {
	t.Helper()
	var guards []int
	for _, c := range testutil.Children(serve) {
		ancestor := false
		for _, s := range servers {
			for p := s; p > 1; {
				if p == c {
					ancestor = true
					break
				}
				st, ok := testutil.ProcStat(p)
				if !ok {
					break
				}
				p = st.PPID
			}
		}
		if !ancestor {
			guards = append(guards, c)
		}
	}
	require.Len(t, guards, 1, "serve %d's children besides its servers %v", serve, servers)
	g, ok := testutil.Identify(guards[0])
	require.True(t, ok)
	t.Cleanup(g.Kill)
	return g
}

// readyServe starts serve with treeServer "g" and a plain server "h" and
// waits until both are ready; it returns serve, the servers' pids and what
// g left.
func readyServe(t *testing.T, ts string) (*serveProc, []int, []testutil.Proc) {
	t.Helper()
	home := shortHome(t)
	conf := cfg(treeServer(ts, home, "g"), local("h", ts))
	conf["permission"] = map[string]any{"allow": []string{"mcp__g"}}
	config{t, filepath.Join(home, "config.json")}.write(conf, false)
	p := startServe(t, home)
	st := p.waitStatus("both ready", func(st wire.Status) bool {
		g, _ := server(st, "g")
		h, _ := server(st, "h")
		return g.Phase == "ready" && h.Phase == "ready"
	})
	var pids []int
	for _, s := range st.Servers {
		pids = append(pids, s.PID)
	}
	return p, pids, treeProcs(t, home, "g")
}

func kill(t *testing.T, procs ...testutil.Proc) {
	t.Helper()
	for _, p := range procs {
		require.True(t, p.Alive(), "process %d to kill is not running", p.PID)
		require.NoError(t, syscall.Kill(p.PID, syscall.SIGKILL))
	}
}

func TestOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)

	// The guard died first and nothing noticed; a later SIGKILL of serve
	// must still take everything.
	t.Run("serve SIGKILLed after its guard", func(t *testing.T) {
		p, servers, tree := readyServe(t, ts)
		all := append(descendants(t, p.cmd.Process.Pid), tree...)
		kill(t, guardOf(t, p.cmd.Process.Pid, servers))
		p.signal(syscall.SIGKILL)
		<-p.exited
		requireAllGone(t, all, "after SIGKILL of the guard, then of serve")
	})

	// `kill -9 <serve> <guard>`, and what `killall -9 freecode` does (here
	// limited to this serve's processes: other tests may run freecode too).
	t.Run("serve and guard SIGKILLed together", func(t *testing.T) {
		for round := range 3 {
			p, servers, tree := readyServe(t, ts)
			serve := descendants(t, p.cmd.Process.Pid)
			all := append(serve, tree...)
			g := guardOf(t, p.cmd.Process.Pid, servers)
			self, _ := testutil.Identify(p.cmd.Process.Pid)
			switch round {
			case 0:
				kill(t, self, g)
			case 1:
				kill(t, g, self)
			case 2:
				var named []testutil.Proc
				for _, q := range serve {
					if testutil.Comm(q.PID) == "freecode" {
						named = append(named, q)
					}
				}
				require.Contains(t, named, self)
				kill(t, named...)
			}
			<-p.exited
			requireAllGone(t, all, "round "+strconv.Itoa(round))
		}
	})

	t.Run("setsid helper gone on stop", func(t *testing.T) {
		p, _, tree := readyServe(t, ts)
		p.signal(syscall.SIGTERM)
		<-p.exited
		require.NoError(t, p.err)
		requireAllGone(t, tree, "after serve stopped")
	})

	t.Run("setsid helper gone when its server crashes", func(t *testing.T) {
		p, _, tree := readyServe(t, ts)
		_, err := p.client.Call(t.Context(), "mcp__g__crash", nil)
		require.Error(t, err)
		requireAllGone(t, tree, "after the server crashed")
		p.waitStatus("g restarted", func(st wire.Status) bool {
			g, _ := server(st, "g")
			return g.Phase == "ready" && g.PID != tree[0].PID
		})
	})

	// A reaper killed on its own: the server dies by its parent-death
	// signal, serve takes what it left and restarts it.
	t.Run("reaper SIGKILLed", func(t *testing.T) {
		p, _, tree := readyServe(t, ts)
		st, ok := testutil.ProcStat(tree[0].PID)
		require.True(t, ok)
		assert.Equal(t, "fc-reaper", testutil.Comm(st.PPID), "the server's parent is its reaper")
		reaper, ok := testutil.Identify(st.PPID)
		require.True(t, ok)
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

	// A guard that dies is replaced and knows the groups: with serve and
	// every reaper then killed at once, the new guard still kills what was
	// left in the servers' groups. (What left its group — the session
	// helper — is beyond a guard; docs/serve.md says so.)
	t.Run("guard restarted", func(t *testing.T) {
		p, servers, tree := readyServe(t, ts)
		old := guardOf(t, p.cmd.Process.Pid, servers)
		kill(t, old)
		var next testutil.Proc
		require.Eventually(t, func() bool {
			for _, c := range testutil.Children(p.cmd.Process.Pid) {
				if testutil.Comm(c) == "fc-guard" && c != old.PID {
					next, _ = testutil.Identify(c)
					return true
				}
			}
			return false
		}, waitFor, 10*time.Millisecond, "no new guard after %d was killed", old.PID)
		t.Cleanup(next.Kill)
		require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "started a new guard process") },
			waitFor, 10*time.Millisecond)
		assert.Contains(t, p.stderr.String(), "guard process exited; starting a new one")

		self, _ := testutil.Identify(p.cmd.Process.Pid)
		victims := []testutil.Proc{self}
		for _, c := range testutil.Children(p.cmd.Process.Pid) {
			if testutil.Comm(c) == "fc-reaper" {
				r, _ := testutil.Identify(c)
				victims = append(victims, r)
			}
		}
		require.Len(t, victims, 3, "serve and one reaper per server")
		kill(t, victims...)
		<-p.exited
		requireAllGone(t, append(victims, tree[:2]...), "serve, reapers, servers and the grandchild")
	})
}

// One-shot commands have no guard and no serve: SIGKILLed while their
// server is still initializing, they must leave nothing behind either.
func TestOrphansOneShot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	for name, args := range map[string][]string{
		"start":        {"mcp", "start", "hang"},
		"start watch":  {"mcp", "start", "hang", "--watch"},
		"tools":        {"mcp", "tools", "hang"},
		"status probe": {"mcp", "status", "--probe"},
		"call":         {"mcp", "call", "mcp__hang__echo", `{"text":"x"}`, "--yes"},
	} {
		t.Run(name, func(t *testing.T) {
			home := shortHome(t)
			hang := treeServer(ts, home, "hang", "--hang-init")
			hang["timeout"] = 600000
			config{t, filepath.Join(home, "config.json")}.write(cfg(hang), false)
			cmd := exec.Command("freecode", args...)
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
			all := append(descendants(t, cmd.Process.Pid), tree...)
			require.NoError(t, cmd.Process.Kill())
			<-done
			requireAllGone(t, all, "after SIGKILL of `freecode "+strings.Join(args, " ")+"`")
		})
	}

	// The reaper of a `start --watch` is killed: the watch ends with the
	// server's death, and the command takes what the server left.
	t.Run("watch loses its reaper", func(t *testing.T) {
		home := shortHome(t)
		config{t, filepath.Join(home, "config.json")}.write(cfg(treeServer(ts, home, "w")), false)
		cmd := exec.Command("freecode", "mcp", "start", "w", "--watch")
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
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
		tree := treeProcs(t, home, "w")
		require.Eventually(t, func() bool { return strings.Contains(out.String(), `Watching "w"`) }, waitFor, 10*time.Millisecond)
		st, ok := testutil.ProcStat(tree[0].PID)
		require.True(t, ok)
		reaper, ok := testutil.Identify(st.PPID)
		require.True(t, ok)
		require.Equal(t, "fc-reaper", testutil.Comm(reaper.PID))
		kill(t, reaper)
		<-done
		assert.Contains(t, out.String(), `server "w" stopped: server "w" was killed by SIGKILL`)
		requireAllGone(t, tree, "after the watch's reaper was killed")
	})
}
