package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := testServerBin

	t.Run("converges on edits", func(t *testing.T) {
		home := servetest.ShortHome(t)
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		a := servetest.Local("a", ts, "--name", "a")
		c.Write(servetest.Config(a), false)
		d := start(t, options(home))
		ready := d.WaitPhase("a", "ready")
		aPID := ready.PID
		require.NotZero(t, aPID)
		assert.Equal(t, "user", ready.Source)
		assert.True(t, ready.Desired.Enabled)
		assert.Equal(t, ready.Desired.SpecHash, ready.SpecHash)
		events := d.Events()

		// Add b with an in-place write.
		c.Write(servetest.Config(a, servetest.Local("b", ts, "--name", "b")), false)
		servetest.Until(t, events, "b ready", servetest.PhaseEvent("b", "ready"))
		b := d.WaitPhase("b", "ready")
		tools, err := d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, servetest.HasTool(tools, "mcp__b__echo"))

		// Change b's spec with a rename-replace: it restarts with the new spec.
		b2 := servetest.Local("b", ts, "--name", "b", "--tools", "2")
		c.Write(servetest.Config(a, b2), true)
		d.WaitStatus("b restarted with the new spec", func(st wire.Status) bool {
			s, _ := servetest.Server(st, "b")
			return s.Phase == "ready" && s.PID != b.PID && s.SpecHash == s.Desired.SpecHash && s.SpecHash != b.SpecHash
		})
		tools, err = d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, servetest.HasTool(tools, "mcp__b__tool_001"))

		// Disable, enable, remove.
		b2["enabled"] = false
		c.Write(servetest.Config(a, b2), true)
		dis := d.WaitPhase("b", "disabled")
		assert.Zero(t, dis.PID)
		tools, err = d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.False(t, servetest.HasTool(tools, "mcp__b__echo"))
		b2["enabled"] = true
		c.Write(servetest.Config(a, b2), false)
		d.WaitPhase("b", "ready")
		c.Write(servetest.Config(a), true)
		d.WaitStatus("b removed", func(st wire.Status) bool {
			_, ok := servetest.Server(st, "b")
			return !ok
		})
		tools, err = d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.False(t, servetest.HasTool(tools, "mcp__b__echo"))

		// An invalid edit (of the file, not of one server) stops nothing and
		// shows in the status.
		c.WriteBytes([]byte(`{"mcp": {"servers": [{"name": "a", "type": "local"}], "pollInterval": 5}}`), false)
		st := d.WaitStatus("config error", func(st wire.Status) bool { return st.ConfigError != "" })
		assert.Contains(t, st.ConfigError, "config.json:1:")
		s, _ := servetest.Server(st, "a")
		assert.Equal(t, "ready", string(s.Phase))
		assert.Equal(t, aPID, s.PID)
		c.Write(servetest.Config(a), true)
		st = d.WaitStatus("config error cleared", func(st wire.Status) bool { return st.ConfigError == "" })
		s, _ = servetest.Server(st, "a")
		assert.Equal(t, aPID, s.PID, "a was never restarted")

		// An identical rewrite restarts nothing and publishes nothing: up to
		// the next real change, no event concerns a or the tools.
		c.Write(servetest.Config(a), false)
		c.Write(servetest.Config(a), true)
		c.Write(servetest.Config(a, map[string]any{"name": "c", "type": "local", "command": []string{ts}, "enabled": false}), false)
		got := servetest.Until(t, events, "c disabled", servetest.PhaseEvent("c", "disabled"))
		for _, ev := range got {
			aTools := ev.Kind == wire.KindToolsChanged && strings.Contains(ev.Data, `"a"`)
			assert.False(t, aTools || servetest.PhaseEvent("a", "starting")(ev) || servetest.PhaseEvent("a", "stopping")(ev), "unexpected event %v", ev)
		}
		s, _ = servetest.Server(d.Status(), "a")
		assert.Equal(t, aPID, s.PID)
		assert.Zero(t, s.Restarts)
	})

	t.Run("a bad server holds only itself", func(t *testing.T) {
		home := servetest.ShortHome(t)
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		a, b := servetest.Local("a", ts, "--name", "a"), servetest.Local("b", ts, "--name", "b")
		bad := servetest.Local("bad", ts, "--name", "bad")
		bad["env"] = map[string]string{"TOKEN": "${FREECODE_TEST_UNSET_TOKEN}"}
		c.Write(servetest.Config(a, bad, b), false)
		opts := options(home)
		opts.LookupEnv = func(k string) (string, bool) {
			if k == "FREECODE_TEST_UNSET_TOKEN" {
				return "", false
			}
			return os.LookupEnv(k)
		}
		d := start(t, opts)
		d.WaitPhase("a", "ready")
		d.WaitPhase("b", "ready")
		st := d.WaitStatus("bad invalid", func(st wire.Status) bool {
			s, _ := servetest.Server(st, "bad")
			return s.Phase == "invalid"
		})
		assert.Empty(t, st.ConfigError, "the file is applied")
		s, _ := servetest.Server(st, "bad")
		assert.Zero(t, s.PID)
		assert.Contains(t, s.Reason, `config.json:`)
		assert.Contains(t, s.Reason, `mcp.servers[1].env.TOKEN (server "bad"): environment variable FREECODE_TEST_UNSET_TOKEN is not set`)
		tools, err := d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, servetest.HasTool(tools, "mcp__a__echo"))
		assert.True(t, servetest.HasTool(tools, "mcp__b__echo"))
		assert.False(t, servetest.HasTool(tools, "mcp__bad__echo"))
		assert.Contains(t, d.log.String(), `msg="server not started: its entry has errors; the others run"`)

		// Later edits apply: a new server starts beside the invalid one,
		// then fixing it starts it too, and a's process is left alone.
		aPID := d.WaitPhase("a", "ready").PID
		cc := servetest.Local("cc", ts, "--name", "cc")
		c.Write(servetest.Config(a, bad, b, cc), true)
		d.WaitPhase("cc", "ready")
		bad["env"] = map[string]string{"TOKEN": "${FREECODE_TEST_UNSET_TOKEN:-none}"}
		c.Write(servetest.Config(a, bad, b, cc), true)
		d.WaitPhase("bad", "ready")
		s, _ = servetest.Server(d.Status(), "a")
		assert.Equal(t, aPID, s.PID)

		// Breaking a running server stops it alone.
		bad["type"] = "lokal"
		c.Write(servetest.Config(a, bad, b, cc), true)
		d.WaitPhase("bad", "invalid")
		s, _ = servetest.Server(d.Status(), "a")
		assert.Equal(t, aPID, s.PID)
		tools, err = d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.False(t, servetest.HasTool(tools, "mcp__bad__echo"))
	})

	t.Run("list_changed re-registers tools with one event", func(t *testing.T) {
		home := servetest.ShortHome(t)
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		c.Write(servetest.Config(servetest.Local("a", ts)), true)
		d := start(t, options(home))
		d.WaitPhase("a", "ready")
		before, err := d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		events := d.Events()
		// add_tool is mutating; the config allows mcp__a.
		_, err = d.Client.Call(t.Context(), "mcp__a__add_tool", json.RawMessage(`{"name":"fresh"}`))
		require.NoError(t, err)
		got := servetest.Until(t, events, "tools_changed", func(ev api.Event) bool { return ev.Kind == wire.KindToolsChanged })
		assert.JSONEq(t, `{"source":"a"}`, got[len(got)-1].Data)
		after, err := d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.True(t, servetest.HasTool(after, "mcp__a__fresh"))
		assert.NotEqual(t, before.Version, after.Version)
		// Exactly one: the next event is the one of the next change.
		_, err = d.Client.Call(t.Context(), "mcp__a__remove_tool", json.RawMessage(`{"name":"fresh"}`))
		require.NoError(t, err)
		got = servetest.Until(t, events, "tools_changed", func(ev api.Event) bool { return ev.Kind == wire.KindToolsChanged })
		assert.Len(t, got, 1, "events: %v", got)
		final, err := d.Client.Tools(t.Context(), "")
		require.NoError(t, err)
		assert.Equal(t, before.Version, final.Version)
	})

	t.Run("crashed child restarts, repeated crashes back off", func(t *testing.T) {
		home := servetest.ShortHome(t)
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		c.Write(servetest.Config(servetest.Local("a", ts), servetest.Local("broken", ts, "--exit-at-start", "3")), true)
		d := start(t, options(home))
		a := d.WaitPhase("a", "ready")
		require.NoError(t, syscall.Kill(a.PID, syscall.SIGKILL))
		d.WaitStatus("a restarted", func(st wire.Status) bool {
			s, _ := servetest.Server(st, "a")
			return s.Phase == "ready" && s.PID != a.PID && s.Restarts == 1
		})
		st := d.WaitStatus("broken backing off after repeated failures", func(st wire.Status) bool {
			s, _ := servetest.Server(st, "broken")
			return s.Phase == "backoff" && s.Restarts >= 2
		})
		s, _ := servetest.Server(st, "broken")
		assert.Contains(t, s.LastError, "exited with status 3")
		assert.False(t, s.NextRetry.IsZero())
		lines, err := d.Client.Logs(t.Context(), "broken")
		require.NoError(t, err)
		assert.NotEmpty(t, lines.Lines)

		// restart skips the backoff wait.
		require.NoError(t, d.Client.Restart(t.Context(), "a"))
		d.WaitStatus("a restarted on request", func(st wire.Status) bool {
			s, _ := servetest.Server(st, "a")
			return s.Phase == "ready" && s.Restarts == 2
		})
		err = d.Client.Restart(t.Context(), "nope")
		require.ErrorIs(t, err, api.ErrNotFound)
	})

	t.Run("approval flow", func(t *testing.T) {
		home := servetest.ShortHome(t)
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		conf := servetest.Config(servetest.Local("n", ts))
		c.Write(conf, true)
		d := start(t, options(home))
		d.WaitPhase("n", "ready")
		events := d.Events()
		call := func() <-chan error {
			ch := make(chan error, 1)
			go func() {
				_, err := d.Client.Call(context.Background(), "mcp__n__note", json.RawMessage(`{"text":"hello"}`))
				ch <- err
			}()
			return ch
		}
		for _, approve := range []bool{true, false} {
			done := call()
			got := servetest.Until(t, events, "approval_requested", func(ev api.Event) bool { return ev.Kind == wire.KindApprovalRequested })
			var req api.Approval
			require.NoError(t, got[len(got)-1].Decode(&req))
			assert.Equal(t, "mcp__n__note", req.Tool)
			pending, err := d.Client.Approvals(t.Context())
			require.NoError(t, err)
			require.Len(t, pending, 1)
			require.NoError(t, d.Client.Answer(t.Context(), req.ID, approve))
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

	t.Run("npm server-memory", func(t *testing.T) {
		node := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules/.bin/node")
		script := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
		for _, f := range []string{node, script} {
			if _, err := os.Stat(f); err != nil {
				t.Skipf("npm servers not installed (make deps): %v", err)
			}
		}
		home := servetest.ShortHome(t)
		mem := servetest.Local("memory", node, script)
		mem["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}
		mem["timeout"] = 20000
		conf := servetest.Config(mem)
		conf["permission"] = map[string]any{"allow": []string{"mcp__memory"}}
		c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
		c.Write(conf, true)
		d := start(t, options(home))
		s := d.WaitPhase("memory", "ready")
		assert.Greater(t, s.Tools, 3)
		_, err := d.Client.Call(t.Context(), "mcp__memory__create_entities",
			json.RawMessage(`{"entities":[{"name":"freecode","entityType":"project","observations":["serves MCP"]}]}`))
		require.NoError(t, err)
		resp, err := d.Client.Call(t.Context(), "mcp__memory__read_graph", nil)
		require.NoError(t, err)
		assert.Contains(t, resp.Result.Text(), "serves MCP")

		// A spec change (new env) restarts it; the memory file persists.
		mem["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl"), "X": "1"}
		c.Write(conf, false)
		d.WaitStatus("memory restarted", func(st wire.Status) bool {
			n, _ := servetest.Server(st, "memory")
			return n.Phase == "ready" && n.PID != s.PID
		})
		resp, err = d.Client.Call(t.Context(), "mcp__memory__read_graph", nil)
		require.NoError(t, err)
		assert.Contains(t, resp.Result.Text(), "serves MCP")
		require.NoError(t, d.stop())
		require.Eventually(t, func() bool { return !testutil.Alive(s.PID) }, waitFor, 10*time.Millisecond)
	})
}

// callErr makes a call through serve's API that must fail and returns the
// API's answer.
func callErr(t *testing.T, d *daemon, tool, args string) *api.Error {
	t.Helper()
	_, err := d.Client.Call(t.Context(), tool, json.RawMessage(args))
	var apiErr *api.Error
	require.ErrorAs(t, err, &apiErr)
	require.NotNil(t, apiErr.Call, "%v", err)
	return apiErr
}

func TestRunCallLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := testServerBin

	// A call that runs past its server's callTimeout (or mcp.callTimeout)
	// is answered 504 "timeout", and the server is told to stop it.
	t.Run("call timeout", func(t *testing.T) {
		home := servetest.ShortHome(t)
		sLog, gLog := filepath.Join(home, "s.calls"), filepath.Join(home, "g.calls")
		s := servetest.Local("s", ts, "--call-log", sLog)
		s["callTimeout"] = 300
		conf := servetest.Config(s, servetest.Local("g", ts, "--call-log", gLog))
		conf["mcp"].(map[string]any)["callTimeout"] = 400
		servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
		d := start(t, options(home))
		d.WaitPhase("s", "ready")
		d.WaitPhase("g", "ready")

		for _, tc := range []struct{ tool, log, within string }{
			{"mcp__s__sleep", sLog, "300ms"},
			{"mcp__g__sleep", gLog, "400ms"},
		} {
			apiErr := callErr(t, d, tc.tool, `{"ms":60000}`)
			assert.Equal(t, 504, apiErr.Status, tc.tool)
			assert.Equal(t, api.KindTimeout, apiErr.Call.Kind, tc.tool)
			assert.Equal(t, "tool "+tc.tool+" did not finish within "+tc.within, apiErr.Call.Result.Text())
			// notifications/cancelled ended the sleep early on the server.
			var end *testserver.CallRecord
			require.Eventually(t, func() bool {
				recs, err := testserver.ReadCallLog(tc.log)
				require.NoError(t, err)
				for _, r := range recs {
					if r.Phase == "end" && r.Tool == "sleep" {
						end = &r
						return true
					}
				}
				return false
			}, waitFor, 10*time.Millisecond, "the server never ended the sleep of %s", tc.tool)
			require.NotNil(t, end.IsError)
			assert.True(t, *end.IsError, "the sleep was cancelled, not completed")
			assert.Less(t, end.End.Sub(end.Start), 30*time.Second)
		}
		// Both servers are still there.
		resp, err := d.Client.Call(t.Context(), "mcp__s__echo", json.RawMessage(`{"text":"still here"}`))
		require.NoError(t, err)
		assert.Equal(t, "still here", resp.Result.Text())
	})

	t.Run("argument size", func(t *testing.T) {
		home := servetest.ShortHome(t)
		conf := servetest.Config(servetest.Local("a", ts))
		conf["mcp"].(map[string]any)["maxArgumentBytes"] = 1024
		servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
		d := start(t, options(home))
		d.WaitPhase("a", "ready")
		apiErr := callErr(t, d, "mcp__a__echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`)
		assert.Equal(t, 400, apiErr.Status)
		assert.Equal(t, api.KindInvalidArgs, apiErr.Call.Kind)
		assert.Equal(t, "invalid arguments for mcp__a__echo: arguments of 2 KiB exceed the limit of 1 KiB (mcp.maxArgumentBytes); send less per call", apiErr.Call.Result.Text())
	})

	// serve started in a directory that contains its home (as in ~): the
	// built-in read of the home's files asks, even with an allow rule, and a
	// refusal reads nothing; other files are read as before.
	t.Run("home inside the workspace", func(t *testing.T) {
		ws := servetest.ShortHome(t)
		home := filepath.Join(ws, ".freecode")
		require.NoError(t, os.Mkdir(home, 0o700))
		conf := servetest.Config()
		conf["permission"] = map[string]any{"allow": []string{"read"}}
		servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
		require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain\n"), 0o644))
		require.NoError(t, os.Symlink(".freecode/config.json", filepath.Join(ws, "innocent.txt")))
		opts := options(home)
		opts.Root = ws
		d := start(t, opts)
		events := d.Events()

		resp, err := d.Client.Call(t.Context(), "read", json.RawMessage(`{"path":"notes.txt"}`))
		require.NoError(t, err)
		assert.Equal(t, "plain\n", resp.Result.Text())

		for _, path := range []string{".freecode/config.json", "innocent.txt"} {
			done := make(chan error, 1)
			go func() {
				_, err := d.Client.Call(context.Background(), "read", json.RawMessage(`{"path":"`+path+`"}`))
				done <- err
			}()
			got := servetest.Until(t, events, "approval_requested", func(ev api.Event) bool { return ev.Kind == wire.KindApprovalRequested })
			var req api.Approval
			require.NoError(t, got[len(got)-1].Decode(&req))
			assert.Equal(t, "read", req.Tool)
			assert.Equal(t, path+" is inside FreeCode's home "+home+" (its config holds provider keys); it is read or written only with your approval", req.Reason)
			require.NoError(t, d.Client.Answer(t.Context(), req.ID, false))
			err := <-done
			var apiErr *api.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, api.KindNotApproved, apiErr.Call.Kind, path)
			assert.NotContains(t, apiErr.Call.Result.Text(), "sk-test")
		}
	})
}
