package serve

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// npmFile is a file under testdata/npm/node_modules; the test is skipped
// when the npm servers are not installed.
func npmFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("npm servers not installed (make deps): %v", err)
	}
	return p
}

// callAsync calls a tool through the API and delivers its answer.
func callAsync(d *daemon, tool, args string) <-chan api.CallResponse {
	ch := make(chan api.CallResponse, 1)
	go func() {
		resp, _ := d.Client.Call(d.T.Context(), tool, json.RawMessage(args))
		ch <- resp
	}()
	return ch
}

// nextElicitation waits for the next elicitation_requested event.
func nextElicitation(t *testing.T, events <-chan api.Event) wire.Elicitation {
	t.Helper()
	got := servetest.Until(t, events, "elicitation_requested", func(ev api.Event) bool { return ev.Kind == wire.KindElicitationRequested })
	var e wire.Elicitation
	require.NoError(t, got[len(got)-1].Decode(&e))
	return e
}

// server-everything's trigger-elicitation-request round-trips through the
// API: declined at once while no client listens, accepted (a bad answer
// refused first, the omitted fields' defaults filled in), declined,
// cancelled, and cancelled by the timeout when nobody answers.
func TestElicitationThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	node, script := npmFile(t, ".bin/node"), npmFile(t, "@modelcontextprotocol/server-everything/dist/index.js")
	home := servetest.ShortHome(t)
	ev := servetest.Local("everything", node, script, "stdio")
	ev["timeout"] = 20000
	conf := servetest.Config(ev)
	conf["permission"] = map[string]any{"allow": []string{"mcp__everything"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	opts := options(home)
	opts.ElicitationTimeout = 2 * time.Second
	d := start(t, opts)
	d.WaitPhase("everything", "ready")
	tools, err := d.Client.ServerTools(t.Context(), "everything")
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "trigger-elicitation-request", "serve declares elicitation")
	assert.Contains(t, names, "trigger-url-elicitation", "serve declares URL mode")
	const tool = "mcp__everything__trigger-elicitation-request"

	// No client listens to the events, so nobody can learn of the
	// question: declined at once, and the log says why.
	resp, err := d.Client.Call(t.Context(), tool, json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Contains(t, resp.Result.Text(), "User declined to provide the requested information.")
	assert.Contains(t, d.log.String(), "declined an elicitation: nobody could answer it, as no client listens to serve's events")
	events := d.Events()

	// Accept.
	done := callAsync(d, tool, `{}`)
	e := nextElicitation(t, events)
	assert.Equal(t, "everything", e.Server)
	assert.Equal(t, "form", e.Mode)
	assert.Equal(t, "Please provide inputs for the following fields:", e.Message)
	assert.Contains(t, string(e.RequestedSchema), `"firstLine"`)
	pending, err := d.Client.Elicitations(t.Context())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "integer": 500}})
	require.ErrorIs(t, err, api.ErrInvalidAnswer)
	assert.ErrorContains(t, err, "integer: at most 100, got 500")
	sent, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "email": "ada@example.com"}})
	require.NoError(t, err)
	assert.Equal(t, 42.0, sent.Content["integer"])
	assert.Equal(t, "It was a dark and stormy night.", sent.Content["firstLine"])
	resp = <-done
	text := resp.Result.Text()
	assert.Contains(t, text, "User provided the requested information!")
	assert.Contains(t, text, "- Name: Ada")
	assert.Contains(t, text, "- Email: ada@example.com")
	assert.Contains(t, text, "- Favorite Integer: 42")
	assert.Contains(t, text, `"untitledMultipleSelectEnum": [`)

	// Decline and cancel.
	for action, want := range map[string]string{"decline": "User declined to provide the requested information.", "cancel": "User cancelled the elicitation dialog."} {
		done = callAsync(d, tool, `{}`)
		e = nextElicitation(t, events)
		_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: action})
		require.NoError(t, err)
		assert.Contains(t, (<-done).Result.Text(), want)
	}

	// Nobody answers: cancelled after the timeout.
	done = callAsync(d, tool, `{}`)
	e = nextElicitation(t, events)
	assert.Equal(t, 2*time.Second, e.Expires.Sub(e.Created))
	got := servetest.Until(t, events, "elicitation_answered", func(ev api.Event) bool { return ev.Kind == wire.KindElicitationAnswered })
	var answered wire.ElicitationAnswered
	require.NoError(t, got[len(got)-1].Decode(&answered))
	assert.Equal(t, wire.ElicitationAnswered{ID: e.ID, Server: "everything", Action: "cancel", Reason: "timeout"}, answered)
	assert.Contains(t, (<-done).Result.Text(), "User cancelled the elicitation dialog.")
	pending, err = d.Client.Elicitations(t.Context())
	require.NoError(t, err)
	assert.Empty(t, pending)

	// Each end is in the audit log, with who answered or why nobody did,
	// and nothing of the question or the answer.
	type ended struct{ mode, action, by, reason string }
	var got5 []ended
	var servers []string
	require.Eventually(t, func() bool {
		got5, servers = nil, nil
		es, err := auditRecords(t, home)
		if err != nil {
			return false
		}
		for _, e := range es {
			if e.Kind == audit.KindElicitation {
				servers = append(servers, e.Server)
				got5 = append(got5, ended{e.Mode, e.Action, e.By, e.Reason})
			}
		}
		return len(got5) >= 5
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"everything", "everything", "everything", "everything", "everything"}, servers)
	unnamed := UnnamedClient
	assert.Equal(t, ended{"form", "decline", "", "nobody to answer"}, got5[0])
	assert.Equal(t, ended{"form", "accept", unnamed, ""}, got5[1])
	assert.ElementsMatch(t, []ended{{"form", "decline", unnamed, ""}, {"form", "cancel", unnamed, ""}}, got5[2:4])
	assert.Equal(t, ended{"form", "cancel", "", "timeout"}, got5[4])
	b, err := os.ReadFile(filepath.Join(audit.Dir(home), audit.FileName))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "Ada")
	assert.NotContains(t, string(b), "Please provide")
}

// auditRecords reads the audit log of home.
func auditRecords(t *testing.T, home string) ([]audit.Entry, error) {
	s, err := audit.Open(t.Context(), home, audit.Options{})
	if err != nil {
		return nil, err
	}
	return s.Read(t.Context())
}

// URL mode through serve: the API shows the URL and its host; serve opens
// nothing, and a client's accept goes back without content.
func TestURLElicitationThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	conf := servetest.Config(servetest.Local("ts", testServerBin, "--ask"))
	conf["permission"] = map[string]any{"allow": []string{"mcp__ts"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	d.WaitPhase("ts", "ready")
	events := d.Events()
	done := callAsync(d, "mcp__ts__ask_url", `{"url":"https://login.example.com/authorize?state=1","message":"Sign in"}`)
	e := nextElicitation(t, events)
	assert.Equal(t, "url", e.Mode)
	assert.Equal(t, "https://login.example.com/authorize?state=1", e.URL)
	assert.Equal(t, "login.example.com", e.Host)
	assert.Empty(t, e.RequestedSchema)
	_, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"action":"accept"}`, (<-done).Result.Text())

	// A server that cancels its request takes it off the list.
	done = callAsync(d, "mcp__ts__ask", `{"cancelAfterMs":100}`)
	e = nextElicitation(t, events)
	got := servetest.Until(t, events, "elicitation_answered", func(ev api.Event) bool { return ev.Kind == wire.KindElicitationAnswered })
	var answered wire.ElicitationAnswered
	require.NoError(t, got[len(got)-1].Decode(&answered))
	assert.Equal(t, wire.ElicitationAnswered{ID: e.ID, Server: "ts", Reason: "the server cancelled its request"}, answered)
	assert.Equal(t, "cancelled the elicitation", (<-done).Result.Text())
}

// A TS-SDK example server that elicits over streamable HTTP works through
// serve: its form is answered through the API, an answer that does not fit
// refused first, and the default of the field left out is filled in.
func TestTypeScriptFormExampleThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	node := npmFile(t, ".bin/node")
	example := npmFile(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/elicitationFormExample.js")
	port := freePort(t)
	cmd := exec.Command(node, example)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), fmt.Sprintf("PORT=%d", port)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, waitFor, 20*time.Millisecond, "the example never listened on %s", addr)

	home := servetest.ShortHome(t)
	conf := servetest.Config(map[string]any{"name": "forms", "type": "remote", "url": "http://" + addr + "/mcp"})
	conf["permission"] = map[string]any{"allow": []string{"mcp__forms"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	d.WaitPhase("forms", "ready")
	events := d.Events()

	done := callAsync(d, "mcp__forms__register_user", `{}`)
	e := nextElicitation(t, events)
	assert.Equal(t, "forms", e.Server)
	assert.Equal(t, "Please provide your registration information:", e.Message)
	_, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept",
		Content: map[string]any{"username": "ad", "email": "ada@example.com", "password": "correct horse"}})
	assert.ErrorContains(t, err, "username: at least 3 characters, got 2")
	sent, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept",
		Content: map[string]any{"username": "ada", "email": "ada@example.com", "password": "correct horse", "newsletter": true}})
	require.NoError(t, err)
	assert.Equal(t, "developer", sent.Content["role"], "the default of the omitted role")
	text := (<-done).Result.Text()
	assert.True(t, strings.HasPrefix(text, "Registration successful!"), text)
	assert.Contains(t, text, "Username: ada")
	assert.Contains(t, text, "Newsletter: Yes")
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A 2026-07-28 server asks through input_required rather than
// elicitation/create; a client of serve's API cannot tell: the question
// is an elicitation_requested event, answered as any other (defaults
// filled in, a bad answer refused first), and the call gets its result.
func TestModernElicitationThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	ts := servetest.Local("ts", testServerBin, "--ask", "--modern")
	ts["protocol"] = "2026-07-28"
	conf := servetest.Config(ts)
	conf["permission"] = map[string]any{"allow": []string{"mcp__ts"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	d.WaitPhase("ts", "ready")
	events := d.Events()

	done := callAsync(d, "mcp__ts__ask", `{"message":"Who are you?"}`)
	e := nextElicitation(t, events)
	assert.Equal(t, "ts", e.Server)
	assert.Equal(t, "form", e.Mode)
	assert.Equal(t, "Who are you?", e.Message)
	_, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "count": 50}})
	require.ErrorIs(t, err, api.ErrInvalidAnswer)
	sent, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada"}})
	require.NoError(t, err)
	assert.Equal(t, "green", sent.Content["color"])
	resp := <-done
	require.False(t, resp.Result.IsError, resp.Result.Text())
	assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","count":3,"color":"green"}}`, resp.Result.Text())

	// Two rounds: two questions, one call.
	done = callAsync(d, "mcp__ts__ask_twice", `{}`)
	e = nextElicitation(t, events)
	_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada"}})
	require.NoError(t, err)
	e = nextElicitation(t, events)
	assert.Equal(t, "Are you sure, Ada?", e.Message)
	_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"ok": false}})
	require.NoError(t, err)
	assert.Equal(t, "Ada: false", (<-done).Result.Text())
}
