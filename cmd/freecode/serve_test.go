package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/testutil"
)

// These tests run `freecode serve` as a real subprocess (the test binary,
// which testscript.Main put on PATH as "freecode") against the test MCP
// server and a real npm server, and drive it through its API.

const waitFor = 30 * time.Second

// syncBuffer is a bytes.Buffer safe for a writer process and a reader test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
	dir, err := os.MkdirTemp("", "fch")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
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

func (p *serveProc) status() api.Status {
	p.t.Helper()
	st, err := p.client.Status(p.t.Context())
	require.NoError(p.t, err)
	return st
}

// server returns the named server's status (ok false if absent).
func server(st api.Status, name string) (api.ServerStatus, bool) {
	for _, s := range st.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return api.ServerStatus{}, false
}

// waitStatus waits until cond holds for the live status and returns it.
func (p *serveProc) waitStatus(what string, cond func(api.Status) bool) api.Status {
	p.t.Helper()
	var last api.Status
	ok := assert.Eventually(p.t, func() bool {
		st, err := p.client.Status(p.t.Context())
		if err != nil {
			return false
		}
		last = st
		return cond(st)
	}, waitFor, 20*time.Millisecond, what)
	if !ok {
		b, _ := json.MarshalIndent(last, "", "  ")
		p.t.Fatalf("waiting for %s; last status:\n%s", what, b)
	}
	return last
}

func (p *serveProc) waitPhase(name, phase string) api.ServerStatus {
	p.t.Helper()
	st := p.waitStatus(name+" "+phase, func(st api.Status) bool {
		s, ok := server(st, name)
		return ok && string(s.Phase) == phase
	})
	s, _ := server(st, name)
	return s
}

// events subscribes to /v1/events; events are read from the returned
// channel, which closes when the stream ends.
func (p *serveProc) events() <-chan api.Event {
	p.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := p.client.Events(ctx)
	require.NoError(p.t, err)
	ch := make(chan api.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			ev, err := s.Next()
			if err != nil {
				return
			}
			ch <- ev
		}
	}()
	p.t.Cleanup(func() {
		cancel()
		s.Close()
		<-done
	})
	return ch
}

// until collects events until one satisfies stop (included) and returns
// them all.
func until(t *testing.T, ch <-chan api.Event, what string, stop func(api.Event) bool) []api.Event {
	t.Helper()
	var got []api.Event
	timeout := time.NewTimer(waitFor)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "event stream ended while waiting for %s; got %v", what, got)
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-timeout.C:
			t.Fatalf("no %s event; got %v", what, got)
		}
	}
}

func phaseEvent(server, phase string) func(api.Event) bool {
	return func(ev api.Event) bool {
		var pc struct{ Server, Phase string }
		return ev.Kind == "phase_changed" && ev.Decode(&pc) == nil && pc.Server == server && pc.Phase == phase
	}
}

// config is a config file under test.
type config struct {
	t    *testing.T
	path string
}

// write replaces the file: in place (truncate and write, like many
// editors' "save") or by renaming a new file over it (like vim and most
// atomic writers).
func (c config) write(v any, rename bool) {
	c.t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(c.t, err)
	c.writeBytes(data, rename)
}

func (c config) writeBytes(data []byte, rename bool) {
	c.t.Helper()
	if !rename {
		require.NoError(c.t, os.WriteFile(c.path, data, 0o600))
		return
	}
	tmp := c.path + ".tmp"
	require.NoError(c.t, os.WriteFile(tmp, data, 0o600))
	require.NoError(c.t, os.Rename(tmp, c.path))
}

func local(name string, command ...string) map[string]any {
	return map[string]any{"name": name, "type": "local", "command": command}
}

func cfg(servers ...map[string]any) map[string]any {
	if servers == nil {
		servers = []map[string]any{}
	}
	return map[string]any{
		"model":      "anthropic/claude-sonnet-4-5",
		"providers":  map[string]any{"anthropic": map[string]any{"apiKey": "sk-test"}},
		"mcp":        map[string]any{"servers": servers},
		"permission": map[string]any{"allow": []string{"mcp__a"}},
	}
}

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

	t.Run("converges on edits", func(t *testing.T) {
		home := shortHome(t)
		c := config{t, filepath.Join(home, "config.json")}
		a := local("a", ts, "--name", "a")
		c.write(cfg(a), false)
		p := startServe(t, home)
		ready := p.waitPhase("a", "ready")
		aPID := ready.PID
		require.NotZero(t, aPID)
		assert.Equal(t, "user", ready.Source)
		assert.True(t, ready.Desired.Enabled)
		assert.Equal(t, ready.Desired.SpecHash, ready.SpecHash)
		events := p.events()

		// Add b with an in-place write.
		c.write(cfg(a, local("b", ts, "--name", "b")), false)
		until(t, events, "b ready", phaseEvent("b", "ready"))
		b := p.waitPhase("b", "ready")
		tools, err := p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, hasTool(tools, "mcp__b__echo"))

		// Change b's spec with a rename-replace: it restarts with the new spec.
		b2 := local("b", ts, "--name", "b", "--tools", "2")
		c.write(cfg(a, b2), true)
		p.waitStatus("b restarted with the new spec", func(st api.Status) bool {
			s, _ := server(st, "b")
			return s.Phase == "ready" && s.PID != b.PID && s.SpecHash == s.Desired.SpecHash && s.SpecHash != b.SpecHash
		})
		tools, err = p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, hasTool(tools, "mcp__b__tool_001"))

		// Disable, enable, remove.
		b2["enabled"] = false
		c.write(cfg(a, b2), true)
		dis := p.waitPhase("b", "disabled")
		assert.Zero(t, dis.PID)
		tools, err = p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.False(t, hasTool(tools, "mcp__b__echo"))
		b2["enabled"] = true
		c.write(cfg(a, b2), false)
		p.waitPhase("b", "ready")
		c.write(cfg(a), true)
		p.waitStatus("b removed", func(st api.Status) bool {
			_, ok := server(st, "b")
			return !ok
		})
		tools, err = p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.False(t, hasTool(tools, "mcp__b__echo"))

		// An invalid edit stops nothing and shows in the status.
		c.writeBytes([]byte(`{"mcp": {"servers": [{"name": "a", "type": "local"}]}}`), false)
		st := p.waitStatus("config error", func(st api.Status) bool { return st.ConfigError != "" })
		assert.Contains(t, st.ConfigError, "config.json:1:")
		s, _ := server(st, "a")
		assert.Equal(t, "ready", string(s.Phase))
		assert.Equal(t, aPID, s.PID)
		c.write(cfg(a), true)
		st = p.waitStatus("config error cleared", func(st api.Status) bool { return st.ConfigError == "" })
		s, _ = server(st, "a")
		assert.Equal(t, aPID, s.PID, "a was never restarted")

		// An identical rewrite restarts nothing and publishes nothing: up to
		// the next real change, no event concerns a or the tools.
		c.write(cfg(a), false)
		c.write(cfg(a), true)
		c.write(cfg(a, map[string]any{"name": "c", "type": "local", "command": []string{ts}, "enabled": false}), false)
		got := until(t, events, "c disabled", phaseEvent("c", "disabled"))
		for _, ev := range got {
			aTools := ev.Kind == "tools_changed" && strings.Contains(ev.Data, `"a"`)
			assert.False(t, aTools || phaseEvent("a", "starting")(ev) || phaseEvent("a", "stopping")(ev), "unexpected event %v", ev)
		}
		s, _ = server(p.status(), "a")
		assert.Equal(t, aPID, s.PID)
		assert.Zero(t, s.Restarts)
	})

	t.Run("list_changed re-registers tools with one event", func(t *testing.T) {
		home := shortHome(t)
		c := config{t, filepath.Join(home, "config.json")}
		c.write(cfg(local("a", ts)), true)
		p := startServe(t, home)
		p.waitPhase("a", "ready")
		before, err := p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		events := p.events()
		// add_tool is mutating; the config allows mcp__a.
		_, err = p.client.Call(t.Context(), "mcp__a__add_tool", json.RawMessage(`{"name":"fresh"}`))
		require.NoError(t, err)
		got := until(t, events, "tools_changed", func(ev api.Event) bool { return ev.Kind == "tools_changed" })
		assert.JSONEq(t, `{"source":"a"}`, got[len(got)-1].Data)
		after, err := p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, hasTool(after, "mcp__a__fresh"))
		assert.NotEqual(t, before.Version, after.Version)
		// Exactly one: the next event is the one of the next change.
		_, err = p.client.Call(t.Context(), "mcp__a__remove_tool", json.RawMessage(`{"name":"fresh"}`))
		require.NoError(t, err)
		got = until(t, events, "tools_changed", func(ev api.Event) bool { return ev.Kind == "tools_changed" })
		assert.Len(t, got, 1, "events: %v", got)
		final, err := p.client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.Equal(t, before.Version, final.Version)
	})

	t.Run("crashed child restarts, repeated crashes back off", func(t *testing.T) {
		home := shortHome(t)
		c := config{t, filepath.Join(home, "config.json")}
		c.write(cfg(local("a", ts), local("broken", ts, "--exit-at-start", "3")), true)
		p := startServe(t, home)
		a := p.waitPhase("a", "ready")
		require.NoError(t, syscall.Kill(a.PID, syscall.SIGKILL))
		p.waitStatus("a restarted", func(st api.Status) bool {
			s, _ := server(st, "a")
			return s.Phase == "ready" && s.PID != a.PID && s.Restarts == 1
		})
		st := p.waitStatus("broken backing off after repeated failures", func(st api.Status) bool {
			s, _ := server(st, "broken")
			return s.Phase == "backoff" && s.Restarts >= 2
		})
		s, _ := server(st, "broken")
		assert.Contains(t, s.LastError, "exited with status 3")
		assert.False(t, s.NextRetry.IsZero())
		lines, err := p.client.Logs(t.Context(), "broken")
		require.NoError(t, err)
		assert.NotEmpty(t, lines)

		// restart skips the backoff wait.
		require.NoError(t, p.client.Restart(t.Context(), "a"))
		p.waitStatus("a restarted on request", func(st api.Status) bool {
			s, _ := server(st, "a")
			return s.Phase == "ready" && s.Restarts == 2
		})
		err = p.client.Restart(t.Context(), "nope")
		require.ErrorIs(t, err, api.ErrNotFound)
	})

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
			api.Status
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
		p.waitStatus("a restarted", func(st api.Status) bool {
			s, _ := server(st, "a")
			return s.Phase == "ready" && s.Restarts == 1
		})
		require.Eventually(t, func() bool {
			return strings.Contains(wout.String(), "starting") && strings.Count(fout.String(), "flood line") == 4
		}, waitFor, 10*time.Millisecond, "watch:\n%s\nfollow:\n%s", wout, fout)
		assert.Equal(t, "--- a restarted\n", ferr.String())
		for _, cmd := range []*exec.Cmd{watch, follow} {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			require.NoError(t, cmd.Wait())
		}

		out, err = fc("mcp", "restart", "nope").CombinedOutput()
		require.Error(t, err)
		assert.Equal(t, "Error: restart \"nope\": unknown server\n", string(out))

		// add says that the running serve picks the change up, and it does.
		out, err = fc("mcp", "add", "b", "local", "--", ts, "--name", "b").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "freecode serve is running and applies the change now; see `freecode mcp status`.")
		p.waitPhase("b", "ready")
	})

	t.Run("approval flow", func(t *testing.T) {
		home := shortHome(t)
		c := config{t, filepath.Join(home, "config.json")}
		conf := cfg(local("n", ts))
		c.write(conf, true)
		p := startServe(t, home)
		p.waitPhase("n", "ready")
		events := p.events()
		call := func() <-chan error {
			ch := make(chan error, 1)
			go func() {
				_, err := p.client.Call(context.Background(), "mcp__n__note", json.RawMessage(`{"text":"hello"}`))
				ch <- err
			}()
			return ch
		}
		for _, approve := range []bool{true, false} {
			done := call()
			got := until(t, events, "approval_requested", func(ev api.Event) bool { return ev.Kind == "approval_requested" })
			var req api.Approval
			require.NoError(t, got[len(got)-1].Decode(&req))
			assert.Equal(t, "mcp__n__note", req.Tool)
			pending, err := p.client.Approvals(t.Context())
			require.NoError(t, err)
			require.Len(t, pending, 1)
			require.NoError(t, p.client.Answer(t.Context(), req.ID, approve))
			err = <-done
			if approve {
				require.NoError(t, err)
				continue
			}
			var apiErr *api.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, api.KindNotApproved, apiErr.Call.Kind)
			assert.Equal(t, `the call to "mcp__n__note" was not approved`, apiErr.Call.Result.Text())
		}
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
			st := p.waitStatus("both ready", func(st api.Status) bool {
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

	t.Run("npm server-memory", func(t *testing.T) {
		node, _ := filepath.Abs("../../testdata/npm/node_modules/.bin/node")
		script, _ := filepath.Abs("../../testdata/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
		for _, f := range []string{node, script} {
			if _, err := os.Stat(f); err != nil {
				t.Skipf("npm servers not installed (make deps): %v", err)
			}
		}
		home := shortHome(t)
		mem := local("memory", node, script)
		mem["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}
		mem["timeout"] = 20000
		conf := cfg(mem)
		conf["permission"] = map[string]any{"allow": []string{"mcp__memory"}}
		c := config{t, filepath.Join(home, "config.json")}
		c.write(conf, true)
		p := startServe(t, home)
		s := p.waitPhase("memory", "ready")
		assert.Greater(t, s.Tools, 3)
		_, err := p.client.Call(t.Context(), "mcp__memory__create_entities",
			json.RawMessage(`{"entities":[{"name":"freecode","entityType":"project","observations":["serves MCP"]}]}`))
		require.NoError(t, err)
		resp, err := p.client.Call(t.Context(), "mcp__memory__read_graph", nil)
		require.NoError(t, err)
		assert.Contains(t, resp.Result.Text(), "serves MCP")

		// A spec change (new env) restarts it; the memory file persists.
		mem["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl"), "X": "1"}
		c.write(conf, false)
		p.waitStatus("memory restarted", func(st api.Status) bool {
			n, _ := server(st, "memory")
			return n.Phase == "ready" && n.PID != s.PID
		})
		resp, err = p.client.Call(t.Context(), "mcp__memory__read_graph", nil)
		require.NoError(t, err)
		assert.Contains(t, resp.Result.Text(), "serves MCP")
		p.signal(syscall.SIGTERM)
		<-p.exited
		require.NoError(t, p.err)
		require.Eventually(t, func() bool { return !testutil.Alive(s.PID) }, waitFor, 10*time.Millisecond)
	})
}

func hasTool(t api.Tools, id string) bool {
	for _, d := range t.Tools {
		if d.Name == id {
			return true
		}
	}
	return false
}
