package main

import (
	"encoding/json"
	"fmt"
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

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// These tests run `freecode serve` as a real subprocess (the test binary,
// which testscript.Main put on PATH as "freecode") against the test MCP
// server and a real npm server, and drive it through its API.

const waitFor = servetest.WaitFor

// syncBuffer is a bytes.Buffer safe for a writer process and a reader test.
type syncBuffer = servetest.SyncBuffer

// buildTestServer builds cmd/mcp-testserver into a temporary directory.
func buildTestServer(t *testing.T) string {
	t.Helper()
	bin, err := testutil.BuildTestServer(t.TempDir())
	require.NoError(t, err)
	return bin
}

// shortHome is a FreeCode home whose socket path fits the 108-byte limit.
func shortHome(t *testing.T) string {
	t.Helper()
	return servetest.ShortHome(t)
}

type serveProc struct {
	t      *testing.T
	home   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed once cmd.Wait returned
	err    error         // cmd.Wait's result, set before exited closes
	client *api.Client
}

// startServe runs `freecode serve -v [args...]` for home, in home, and waits
// for its API.
func startServe(t *testing.T, home string, args ...string) *serveProc {
	t.Helper()
	return startServeIn(t, home, home, args...)
}

// startServeIn is startServe with serve's working directory dir.
func startServeIn(t *testing.T, home, dir string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{t: t, home: home, stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command("freecode", append([]string{"serve", "-v"}, args...)...)
	p.cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGTERM)
		<-p.exited
		if p.client != nil {
			p.client.Close()
		}
		if t.Failed() {
			t.Logf("serve stderr:\n%s", p.stderr.String())
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-p.exited:
			return true
		default:
		}
		c, err := api.Dial(api.SocketPath(home))
		if err != nil {
			return false
		}
		p.client = c
		return true
	}, waitFor, 10*time.Millisecond)
	require.NotNil(t, p.client, "serve exited: %v\n%s", p.err, p.stderr.String())
	return p
}

func (p *serveProc) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// api is the serve's API, for the shared helpers (package servetest).
func (p *serveProc) api() servetest.API { return servetest.API{T: p.t, Client: p.client} }

func (p *serveProc) status() wire.Status {
	p.t.Helper()
	return p.api().Status()
}

// server returns the named server's status (ok false if absent).
func server(st wire.Status, name string) (wire.ServerStatus, bool) { return servetest.Server(st, name) }

// waitStatus waits until cond holds for the live status and returns it.
func (p *serveProc) waitStatus(what string, cond func(wire.Status) bool) wire.Status {
	p.t.Helper()
	return p.api().WaitStatus(what, cond)
}

func (p *serveProc) waitPhase(name, phase string) wire.ServerStatus {
	p.t.Helper()
	return p.api().WaitPhase(name, phase)
}

// events subscribes to /v1/events; events are read from the returned
// channel, which closes when the stream ends.
func (p *serveProc) events() <-chan api.Event {
	p.t.Helper()
	return p.api().Events()
}

// until collects events until one satisfies stop (included) and returns
// them all.
func until(t *testing.T, ch <-chan api.Event, what string, stop func(api.Event) bool) []api.Event {
	t.Helper()
	return servetest.Until(t, ch, what, stop)
}

// config is a config file under test.
type config struct {
	t    *testing.T
	path string
}

// write replaces the file: in place or by renaming a new file over it
// (see servetest.File).
func (c config) write(v any, rename bool) {
	c.t.Helper()
	servetest.File{T: c.t, Path: c.path}.Write(v, rename)
}

func (c config) writeBytes(data []byte, rename bool) {
	c.t.Helper()
	servetest.File{T: c.t, Path: c.path}.WriteBytes(data, rename)
}

func local(name string, command ...string) map[string]any { return servetest.Local(name, command...) }

func cfg(servers ...map[string]any) map[string]any { return servetest.Config(servers...) }

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, waitFor, 10*time.Millisecond)
	return pid
}

func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)

	t.Run("cli verbs through serve", func(t *testing.T) {
		home := shortHome(t)
		c := config{t, filepath.Join(home, "config.json")}
		a := local("a", ts, "--stderr-flood", "2")
		c.write(cfg(a), true)
		p := startServe(t, home)
		a1 := p.waitPhase("a", "ready")
		fc := func(args ...string) *exec.Cmd {
			cmd := exec.Command("freecode", args...)
			cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
			return cmd
		}
		out, err := fc("mcp", "status").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `(?m)^NAME +SOURCE +ENABLED +PHASE +PID +TOOLS +RESTARTS +SINCE +LAST-ERROR\n`+
			fmt.Sprintf(`a +user +yes +ready +%d +7 +- +\S+ +-$`, a1.PID), string(out))
		out, err = fc("mcp", "status", "--json").Output()
		require.NoError(t, err)
		var js struct {
			ServeRunning bool `json:"serveRunning"`
			ServePID     int  `json:"servePid"`
			wire.Status
		}
		require.NoError(t, json.Unmarshal(out, &js))
		assert.True(t, js.ServeRunning)
		assert.Equal(t, p.cmd.Process.Pid, js.ServePID)
		out, err = fc("mcp", "logs", "a").Output()
		require.NoError(t, err)
		assert.Equal(t, "flood line 0\nflood line 1\n", string(out))

		// --watch prints again on a change, logs --follow sees the restart;
		// both end cleanly on SIGINT.
		watch := fc("mcp", "status", "--watch")
		wout := &syncBuffer{}
		watch.Stdout = wout
		require.NoError(t, watch.Start())
		follow := fc("mcp", "logs", "a", "--follow")
		fout, ferr := &syncBuffer{}, &syncBuffer{}
		follow.Stdout, follow.Stderr = fout, ferr
		require.NoError(t, follow.Start())
		require.Eventually(t, func() bool {
			return strings.Contains(wout.String(), "ready") && strings.Count(fout.String(), "flood line") == 2
		},
			waitFor, 10*time.Millisecond)

		out, err = fc("mcp", "restart", "a").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, "Restarting server \"a\"; see `freecode mcp status`.\n", string(out))
		p.waitStatus("a restarted", func(st wire.Status) bool {
			s, _ := server(st, "a")
			return s.Phase == "ready" && s.Restarts == 1
		})
		require.Eventually(t, func() bool {
			return strings.Contains(wout.String(), "starting") && strings.Count(fout.String(), "flood line") == 4
		}, waitFor, 10*time.Millisecond, "watch:\n%s\nfollow:\n%s", wout, fout)
		// The marker goes to stderr before the new session's lines go to
		// stdout, but the two pipes are copied into the buffers by
		// goroutines of their own: wait for it rather than expect it.
		require.Eventually(t, func() bool { return ferr.String() != "" }, waitFor, 10*time.Millisecond)
		assert.Equal(t, "--- a restarted\n", ferr.String())
		for _, cmd := range []*exec.Cmd{watch, follow} {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			require.NoError(t, cmd.Wait())
		}

		out, err = fc("mcp", "restart", "nope").CombinedOutput()
		require.Error(t, err)
		assert.Equal(t, "Error: restart \"nope\": unknown server. See the servers with `freecode mcp status`.\n", string(out))

		// add says that the running serve picks the change up, and it does.
		out, err = fc("mcp", "add", "b", "local", "--", ts, "--name", "b").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "freecode serve is running and applies the change now; see `freecode mcp status`.")
		p.waitPhase("b", "ready")
	})

	t.Run("second serve refused, private socket", func(t *testing.T) {
		home := shortHome(t)
		config{t, filepath.Join(home, "config.json")}.write(cfg(), false)
		p := startServe(t, home)
		for path, mode := range map[string]os.FileMode{
			filepath.Join(home, "run"):            0o700 | os.ModeDir,
			api.SocketPath(home):                  0o600 | os.ModeSocket,
			filepath.Join(home, "run/serve.lock"): 0o600,
		} {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, mode, fi.Mode(), path)
		}
		second := exec.Command("freecode", "serve")
		second.Env = append(os.Environ(), "FREECODE_HOME="+home)
		out, err := second.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 1, ee.ExitCode())
		assert.Contains(t, string(out), fmt.Sprintf("freecode serve is already running for %s (pid %d holds", home, p.cmd.Process.Pid))
		// The first one is unaffected.
		p.status()
	})

	t.Run("stale socket of a killed serve is replaced", func(t *testing.T) {
		home := shortHome(t)
		config{t, filepath.Join(home, "config.json")}.write(cfg(), false)
		p := startServe(t, home)
		p.signal(syscall.SIGKILL)
		<-p.exited
		_, err := os.Stat(api.SocketPath(home))
		require.NoError(t, err, "a killed serve leaves its socket file")
		p2 := startServe(t, home)
		p2.status()
	})

	// SIGHUP is what closing serve's terminal sends: a graceful stop too.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		t.Run("no process left after "+sig.String(), func(t *testing.T) {
			home := shortHome(t)
			gcFile := filepath.Join(home, "grandchild.pid")
			config{t, filepath.Join(home, "config.json")}.write(cfg(
				local("g", ts, "--grandchild", "--grandchild-pid-file", gcFile),
				local("h", ts),
			), false)
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
			gc := readPID(t, gcFile)
			require.True(t, testutil.Alive(gc))
			gcStat, _ := testutil.ProcStat(gc)
			gcGroup := gcStat.PGID
			g, _ := server(st, "g")
			require.Equal(t, g.PID, gcGroup, "the grandchild is in its server's process group")

			p.signal(sig)
			<-p.exited
			if sig != syscall.SIGKILL {
				require.NoError(t, p.err, "serve exits 0 on %s; stderr:\n%s", sig, p.stderr.String())
			}
			require.Eventually(t, func() bool {
				for _, pid := range append(pids, gc) {
					if testutil.Alive(pid) {
						return false
					}
				}
				for _, pid := range pids {
					if len(testutil.GroupMembers(pid)) > 0 {
						return false
					}
				}
				return true
			}, waitFor, 10*time.Millisecond, "children %v and grandchild %d must be gone", pids, gc)
		})
	}

	// The guard must know a server's process group while the server is
	// still starting (a first `npx -y` download can take minutes): a
	// SIGKILLed serve's children die by Pdeathsig, their own children only
	// by the guard.
	t.Run("no process left after SIGKILL during a start", func(t *testing.T) {
		home := shortHome(t)
		gcFile := filepath.Join(home, "grandchild.pid")
		hang := local("hang", ts, "--hang-init", "--grandchild", "--grandchild-pid-file", gcFile)
		hang["timeout"] = 600000
		config{t, filepath.Join(home, "config.json")}.write(cfg(hang), false)
		p := startServe(t, home)
		gc := readPID(t, gcFile)
		gcStat, ok := testutil.ProcStat(gc)
		require.True(t, ok && testutil.Alive(gc), "grandchild %d runs", gc)
		leader := gcStat.PGID
		require.NotEqual(t, gc, leader, "the grandchild is in its server's process group")
		s, _ := server(p.status(), "hang")
		require.Equal(t, "starting", string(s.Phase))

		p.signal(syscall.SIGKILL)
		<-p.exited
		require.Eventually(t, func() bool {
			return !testutil.Alive(leader) && !testutil.Alive(gc) && len(testutil.GroupMembers(leader)) == 0
		}, waitFor, 10*time.Millisecond, "server %d and its grandchild %d must be gone", leader, gc)
	})

}
