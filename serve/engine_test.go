package serve

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// The controller's refusals reach the API as what they mean: an unknown
// server is a 404, a disabled or held one a 409, each with the
// controller's message.
func TestRunRestartRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	repo := filepath.Join(home, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".freecode"), 0o755))
	project := servetest.File{T: t, Path: filepath.Join(repo, ".freecode", "settings.json")}
	project.Write(map[string]any{"mcp": map[string]any{"servers": []any{servetest.Local("proj", testServerBin)}}}, false)
	off := servetest.Local("off", testServerBin)
	off["enabled"] = false
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(servetest.Config(off), true)
	opts := options(home)
	opts.Sources.Project = project.Path
	d := start(t, opts)
	d.WaitPhase("off", "disabled")
	held := d.WaitPhase("proj", "untrusted")

	for name, want := range map[string]struct {
		code int
		msg  string
	}{
		"off":  {http.StatusConflict, `restart "off": server is disabled (enable it first)`},
		"proj": {http.StatusConflict, `restart "proj": server is held: ` + held.Reason},
		"nope": {http.StatusNotFound, `restart "nope": unknown server`},
	} {
		err := d.Client.Restart(t.Context(), name)
		var apiErr *api.Error
		require.ErrorAs(t, err, &apiErr, name)
		assert.Equal(t, want.code, apiErr.Status, name)
		assert.Equal(t, want.msg, apiErr.Message, name)
	}
	_, err := d.Client.Logs(t.Context(), "nope")
	require.ErrorIs(t, err, api.ErrNotFound)
	_, err = d.Client.FollowLogs(t.Context(), "nope")
	require.ErrorIs(t, err, api.ErrNotFound)
	lines, err := d.Client.Logs(t.Context(), "off")
	require.NoError(t, err)
	assert.Empty(t, lines.Lines)
}

// One Run per home: a second one returns at once, naming the first, which
// goes on unaffected.
func TestRunRefusesASecondOnTheHome(t *testing.T) {
	home := servetest.ShortHome(t)
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(servetest.Config(), false)
	d := start(t, options(home))
	err := Run(t.Context(), options(home))
	require.ErrorContains(t, err, "freecode serve is already running for "+home)
	st := d.Status()
	assert.Equal(t, os.Getpid(), st.ServePID)
	assert.Equal(t, filepath.Join(home, "config.json"), st.ConfigPath)
}

// startEngines runs a Core for opts (as Run does, without the home's lock)
// with the API over it on the home's socket, until the test ends; it
// returns the Core and a Client of that API: the same Engine twice.
func startEngines(t *testing.T, opts Options) (*Core, *api.Client) {
	t.Helper()
	log := &servetest.SyncBuffer{}
	opts.Logger = logr.FromSlogHandler(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.Level(-1)}))
	require.NoError(t, os.MkdirAll(filepath.Join(opts.Home, "run"), 0o700))
	ln, err := listenSocket(api.SocketPath(opts.Home), opts.Logger)
	require.NoError(t, err)
	core, err := NewCore(opts)
	require.NoError(t, err)
	srv := api.NewServer(core, api.ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- core.Run(ctx, Part{Name: "api", Run: func(ctx context.Context) error { return srv.Serve(ctx, ln) }})
	}()
	c, err := api.Dial(api.SocketPath(opts.Home))
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		cancel()
		assert.NoError(t, <-done)
		core.Close()
		assert.Eventually(t, func() bool { return len(testutil.Children(os.Getpid())) == 0 }, waitFor, 10*time.Millisecond,
			"child processes left: %v", testutil.Children(os.Getpid()))
		if t.Failed() {
			t.Logf("serve log:\n%s", log.String())
		}
	})
	return core, c
}

// answer is what an Engine answered, as the table compares it: the value's
// JSON (what a client sees of it) and what the error says.
type answer struct {
	JSON string
	Err  string // its message
	// Is names the sentinels the error wraps.
	Is []string
	// Status and Call are those of an *api.Error.
	Status int
	Call   string
}

func answerOf(t *testing.T, v any, err error) answer {
	t.Helper()
	b, jerr := json.Marshal(v)
	require.NoError(t, jerr)
	a := answer{JSON: string(b)}
	if err == nil {
		return a
	}
	a.Err = err.Error()
	for _, s := range []struct {
		name string
		err  error
	}{{"not found", api.ErrNotFound}, {"conflict", api.ErrConflict}, {"bad request", api.ErrBadRequest}, {"timeout", api.ErrTimeout}} {
		if errors.Is(err, s.err) {
			a.Is = append(a.Is, s.name)
		}
	}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Call != nil {
		a.Status = ae.Status
		c, jerr := json.Marshal(ae.Call)
		require.NoError(t, jerr)
		a.Call = string(c)
	}
	return a
}

// One table of Engine calls runs against the Core and against a Client of
// the API over that same Core: each row's answers are the same on both
// paths, and what the row expects.
func TestEngineInProcessAndOverTheSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	slow := servetest.Local("slow", testServerBin, "--resources", "1", "--read-delay", "1m")
	slow["callTimeout"] = 300
	off := servetest.Local("off", testServerBin)
	off["enabled"] = false
	conf := servetest.Config(servetest.Local("ts", testServerBin, "--resources", "2", "--prompts", "--completions"), slow, off)
	conf["permission"] = map[string]any{"allow": []string{"mcp__ts", "mcp__slow"}, "deny": []string{"mcp__ts__note"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	core, client := startEngines(t, options(home))
	d := servetest.API{T: t, Client: client}
	d.WaitPhase("ts", "ready")
	d.WaitPhase("slow", "ready")
	d.WaitPhase("off", "disabled")

	ts := func(args string) json.RawMessage { return json.RawMessage(args) }
	for _, row := range []struct {
		name string
		do   func(ctx context.Context, e api.Engine) (any, error)
		// want checks one implementation's answer (both are the same).
		want func(t *testing.T, v any, a answer)
	}{
		{"status", func(ctx context.Context, e api.Engine) (any, error) {
			st, err := e.Status(ctx)
			st.ObservedAt = time.Time{}
			return st, err
		}, func(t *testing.T, v any, a answer) {
			st := v.(wire.Status)
			assert.Equal(t, os.Getpid(), st.ServePID)
			assert.Equal(t, filepath.Join(home, "config.json"), st.ConfigPath)
			assert.Equal(t, home, st.Root)
			phases := map[string]wire.Phase{}
			for _, s := range st.Servers {
				phases[s.Name] = s.Phase
			}
			assert.Equal(t, map[string]wire.Phase{"ts": wire.PhaseReady, "slow": wire.PhaseReady, "off": wire.PhaseDisabled}, phases)
		}},
		{"tools", func(ctx context.Context, e api.Engine) (any, error) { return e.Tools(ctx, "") }, func(t *testing.T, v any, a answer) {
			tools := v.(api.Tools)
			assert.Equal(t, "jsonschema", tools.Dialect)
			assert.Equal(t, len(tools.Tools), tools.Count)
			assert.Contains(t, a.JSON, `"name":"mcp__ts__echo"`)
		}},
		{"tools summary", func(ctx context.Context, e api.Engine) (any, error) { return e.ToolsSummary(ctx, "openai") }, func(t *testing.T, v any, a answer) {
			tools := v.(api.Tools)
			assert.Empty(t, tools.Tools)
			assert.Positive(t, tools.Count)
		}},
		{"unknown dialect", func(ctx context.Context, e api.Engine) (any, error) { return e.Tools(ctx, "cobol") }, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"bad request"}, a.Is)
			assert.Equal(t, `unknown dialect "cobol" (want one of jsonschema, openai, gemini)`, a.Err)
		}},
		{"server tools", func(ctx context.Context, e api.Engine) (any, error) { return e.ServerTools(ctx, "ts") }, func(t *testing.T, v any, a answer) {
			st := v.(wire.ServerTools)
			assert.Equal(t, wire.PhaseReady, st.Phase)
			assert.Contains(t, a.JSON, `"id":"mcp__ts__echo"`)
			assert.Nil(t, st.Hidden)
		}},
		{"all server tools", func(ctx context.Context, e api.Engine) (any, error) { return e.AllServerTools(ctx, "slow") }, func(t *testing.T, v any, a answer) {
			assert.Equal(t, "slow", v.(wire.ServerTools).Server)
		}},
		{"lists", func(ctx context.Context, e api.Engine) (any, error) { return e.Lists(ctx) }, func(t *testing.T, v any, a answer) {
			ls := v.(wire.Lists)
			servers := []string{}
			for _, st := range ls.Tools {
				servers = append(servers, st.Server)
				assert.Nil(t, st.Hidden)
			}
			assert.Equal(t, []string{"off", "slow", "ts"}, servers)
			assert.Contains(t, a.JSON, `"id":"mcp__ts__echo"`)
			require.Len(t, ls.Resources.Servers, 2)
			assert.Equal(t, "slow", ls.Resources.Servers[0].Server)
			require.Len(t, ls.Prompts.Servers, 1)
			assert.Equal(t, "ts", ls.Prompts.Servers[0].Server)
			assert.Equal(t, []string{"ts"}, ls.Completions)
		}},
		{"tools of an unknown server", func(ctx context.Context, e api.Engine) (any, error) { return e.ServerTools(ctx, "nope") }, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"not found"}, a.Is)
		}},
		{"call", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__ts__echo", ts(`{"text":"hi"}`), api.CallOptions{}))
		}, func(t *testing.T, v any, a answer) {
			assert.Empty(t, a.Err)
			assert.Equal(t, "hi", v.(api.CallResponse).Result.Text())
		}},
		{"unknown tool", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__ts__nope", nil, api.CallOptions{}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, http.StatusNotFound, a.Status)
			assert.Equal(t, api.KindUnknownTool, v.(api.CallResponse).Kind)
			assert.Equal(t, a.Call, a.JSON, "the error carries the response")
		}},
		{"invalid arguments", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__ts__echo", ts(`{"text":1}`), api.CallOptions{ID: "c-1"}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, http.StatusBadRequest, a.Status)
			assert.Equal(t, []string{"bad request"}, a.Is)
			assert.Equal(t, api.KindInvalidArgs, v.(api.CallResponse).Kind)
		}},
		{"denied", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__ts__note", ts(`{"text":"x"}`), api.CallOptions{}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, http.StatusForbidden, a.Status)
			assert.Equal(t, api.KindDenied, v.(api.CallResponse).Kind)
			assert.Contains(t, v.(api.CallResponse).Result.Text(), `denied by rule "mcp__ts__note" in permission.deny`)
		}},
		{"call timeout", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__slow__sleep", ts(`{"ms":60000}`), api.CallOptions{}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, http.StatusGatewayTimeout, a.Status)
			assert.Equal(t, []string{"timeout"}, a.Is)
			assert.Equal(t, "tool mcp__slow__sleep did not finish within 300ms", v.(api.CallResponse).Result.Text())
		}},
		{"bad call id", func(ctx context.Context, e api.Engine) (any, error) {
			return callAnswer(e.CallWith(ctx, "mcp__ts__echo", ts(`{"text":"hi"}`), api.CallOptions{ID: "no spaces"}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"bad request"}, a.Is)
			assert.Equal(t, "callId must be 1 to 64 letters, digits, '_', '-' or '.'", a.Err)
			assert.Zero(t, a.Status, "no call was made")
		}},
		{"resources", func(ctx context.Context, e api.Engine) (any, error) { return e.Resources(ctx, "") }, func(t *testing.T, v any, a answer) {
			var names []string
			for _, s := range v.(wire.Resources).Servers {
				names = append(names, s.Server)
			}
			assert.ElementsMatch(t, []string{"ts", "slow"}, names)
		}},
		{"read", func(ctx context.Context, e api.Engine) (any, error) {
			return e.ReadResource(ctx, "ts", testserver.TextURI(0))
		},
			func(t *testing.T, v any, a answer) {
				rr := v.(wire.ResourceRead)
				require.Len(t, rr.Contents, 1)
				assert.Equal(t, testserver.TextContents(0), *rr.Contents[0].Text)
			}},
		{"read past callTimeout", func(ctx context.Context, e api.Engine) (any, error) {
			return e.ReadResource(ctx, "slow", testserver.TextURI(0))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"timeout"}, a.Is)
			assert.Contains(t, a.Err, "(300ms, the server's callTimeout)")
		}},
		{"read without a URI", func(ctx context.Context, e api.Engine) (any, error) { return e.ReadResource(ctx, "ts", "") },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"bad request"}, a.Is) }},
		{"resources of an unknown server", func(ctx context.Context, e api.Engine) (any, error) { return e.Resources(ctx, "nope") },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"not found"}, a.Is) }},
		{"subscribe", func(ctx context.Context, e api.Engine) (any, error) {
			return nil, errors.Join(e.Subscribe(ctx, "ts", testserver.TextURI(1), true), e.Subscribe(ctx, "ts", testserver.TextURI(1), false))
		}, func(t *testing.T, v any, a answer) { assert.Empty(t, a.Err) }},
		{"prompts", func(ctx context.Context, e api.Engine) (any, error) { return e.Prompts(ctx, "") }, func(t *testing.T, v any, a answer) {
			p := v.(wire.Prompts)
			require.Len(t, p.Servers, 1)
			assert.Equal(t, "ts", p.Servers[0].Server)
		}},
		{"prompt", func(ctx context.Context, e api.Engine) (any, error) {
			return e.GetPrompt(ctx, "ts", "greet", map[string]string{"name": "Ada"})
		}, func(t *testing.T, v any, a answer) {
			assert.Contains(t, a.JSON, "Hello, Ada!")
		}},
		{"prompt with wrong arguments", func(ctx context.Context, e api.Engine) (any, error) { return e.GetPrompt(ctx, "ts", "greet", nil) },
			func(t *testing.T, v any, a answer) {
				assert.Equal(t, []string{"bad request"}, a.Is)
				assert.Equal(t, `server "ts": prompt "greet" needs the argument "name"; its arguments: name (required), greeting`, a.Err)
			}},
		{"complete a prompt's argument", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "ts", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, "name", "A", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, wire.Completion{Server: "ts", Values: []string{"Ada", "Alan", "Alonzo"}}, v)
		}},
		{"complete with the other arguments", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "ts", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, "greeting", "", map[string]string{"name": "Ada"}))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, testserver.CompletionGreetingsAda(), v.(wire.Completion).Values)
		}},
		{"complete a template's argument", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "ts", complete(wire.CompletionRef{Type: wire.RefResource, URI: testserver.ItemTemplate}, "id", "1", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, `{"server":"ts","values":["1","10","11"],"total":5,"hasMore":true}`, a.JSON)
		}},
		{"complete without completions", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "slow", complete(wire.CompletionRef{Type: wire.RefResource, URI: testserver.ItemTemplate}, "id", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"conflict"}, a.Is)
			assert.Equal(t, `server "slow" offers no completions (its initialize result does not declare them), so completion/complete of resource template "test://items/{id}" argument "id" is not sent`, a.Err)
		}},
		{"complete an unknown prompt", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "ts", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "gret"}, "name", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"not found"}, a.Is)
			assert.Equal(t, `server "ts" has no prompt "gret" to complete an argument of`, a.Err)
		}},
		{"complete without a ref", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "ts", complete(wire.CompletionRef{}, "name", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"bad request"}, a.Is)
			assert.Equal(t, `server "ts": completion/complete: the ref's type is "" (want "ref/prompt" or "ref/resource")`, a.Err)
		}},
		{"complete of an unknown server", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "nope", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, "name", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"not found"}, a.Is)
			assert.Equal(t, `server "nope": unknown server`, a.Err)
		}},
		{"complete without a server", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, "name", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"bad request"}, a.Is)
			assert.Equal(t, "a completion needs a server", a.Err)
		}},
		{"complete of a disabled server", func(ctx context.Context, e api.Engine) (any, error) {
			return e.Complete(ctx, "off", complete(wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, "name", "", nil))
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []string{"conflict"}, a.Is)
			assert.Equal(t, "server \"off\": server is not ready (phase disabled), so it cannot complete arguments; see `freecode mcp status`", a.Err)
		}},
		{"restart a disabled server", func(ctx context.Context, e api.Engine) (any, error) { return nil, e.Restart(ctx, "off") },
			func(t *testing.T, v any, a answer) {
				assert.Equal(t, []string{"conflict"}, a.Is)
				assert.Equal(t, `restart "off": server is disabled (enable it first)`, a.Err)
			}},
		{"restart an unknown server", func(ctx context.Context, e api.Engine) (any, error) { return nil, e.Restart(ctx, "nope") },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"not found"}, a.Is) }},
		{"logs", func(ctx context.Context, e api.Engine) (any, error) {
			l, err := e.Logs(ctx, "off")
			l.Last = 0 // the reader's cursor, not sent
			return l, err
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, wire.Logs{Server: "off", Lines: []string{}}, v)
		}},
		{"logs of an unknown server", func(ctx context.Context, e api.Engine) (any, error) { return e.Logs(ctx, "nope") },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"not found"}, a.Is) }},
		{"followed logs", func(ctx context.Context, e api.Engine) (any, error) {
			s, err := e.FollowLogs(ctx, "ts")
			if err != nil {
				return nil, err
			}
			defer s.Close()
			return s.Next()
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, wire.KindLogSession, v.(api.Event).Kind)
			assert.Regexp(t, `^\{"session":[1-9][0-9]*\}$`, v.(api.Event).Data)
		}},
		{"followed logs of an unknown server", func(ctx context.Context, e api.Engine) (any, error) { return e.FollowLogs(ctx, "nope") },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"not found"}, a.Is) }},
		{"approvals", func(ctx context.Context, e api.Engine) (any, error) { return e.Approvals(ctx) },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []api.Approval{}, v) }},
		{"answer an unknown approval", func(ctx context.Context, e api.Engine) (any, error) { return nil, e.Answer(ctx, "a9", true) },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []string{"not found"}, a.Is) }},
		{"elicitations", func(ctx context.Context, e api.Engine) (any, error) { return e.Elicitations(ctx) },
			func(t *testing.T, v any, a answer) { assert.Equal(t, []wire.Elicitation{}, v) }},
		{"clear loaded", func(ctx context.Context, e api.Engine) (any, error) { return nil, e.ClearLoaded(ctx) },
			func(t *testing.T, v any, a answer) { assert.Empty(t, a.Err) }},
		{"events of a restart", func(ctx context.Context, e api.Engine) (any, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s, err := e.Events(ctx)
			if err != nil {
				return nil, err
			}
			defer s.Close()
			if err := e.Restart(ctx, "ts"); err != nil {
				return nil, err
			}
			var phases []api.Event
			for {
				ev, err := s.Next()
				if err != nil {
					return phases, err
				}
				if ev.Kind == wire.KindPhaseChanged && strings.Contains(ev.Data, `"server":"ts"`) {
					phases = append(phases, ev)
					if strings.Contains(ev.Data, `"phase":"ready"`) {
						return phases, nil
					}
				}
			}
		}, func(t *testing.T, v any, a answer) {
			assert.Equal(t, []api.Event{
				{Kind: wire.KindPhaseChanged, Data: `{"server":"ts","phase":"stopping"}`},
				{Kind: wire.KindPhaseChanged, Data: `{"server":"ts","phase":"stopped"}`},
				{Kind: wire.KindPhaseChanged, Data: `{"server":"ts","phase":"pending"}`},
				{Kind: wire.KindPhaseChanged, Data: `{"server":"ts","phase":"starting"}`},
				{Kind: wire.KindPhaseChanged, Data: `{"server":"ts","phase":"ready"}`},
			}, v)
		}},
	} {
		t.Run(row.name, func(t *testing.T) {
			var got [2]answer
			for i, e := range []api.Engine{core, client} {
				v, err := row.do(t.Context(), e)
				got[i] = answerOf(t, v, err)
				row.want(t, v, got[i])
			}
			assert.Equal(t, got[0], got[1], "in process, then over the socket")
		})
	}
}

// callAnswer is a call's answer with its duration, which differs from one
// call to the next, left out.
func callAnswer(r api.CallResponse, err error) (api.CallResponse, error) {
	r.DurationMS = 0
	var ae *api.Error
	if errors.As(err, &ae) && ae.Call != nil {
		ae.Call.DurationMS = 0
	}
	return r, err
}

// complete is a completion request of arg of ref, typed so far, with the
// other arguments given.
func complete(ref wire.CompletionRef, arg, typed string, given map[string]string) wire.CompletionRequest {
	return wire.CompletionRequest{Ref: ref, Argument: wire.CompletionArgument{Name: arg, Value: typed}, Context: given}
}
