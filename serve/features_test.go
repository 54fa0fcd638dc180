package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// apiStatus is the HTTP status of an API error (0 if err is not one).
func apiStatus(err error) int {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// The resources and prompts endpoints serve what the sessions list, read
// and get through them, answer bad requests with the status that says
// what is wrong, and announce real changes as events.
func TestRunResourcesAndPrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	conf := servetest.Config(servetest.Local("ts", testServerBin, "--resources", "2", "--prompts"), servetest.Local("plain", testServerBin))
	conf["permission"] = map[string]any{"allow": []string{"mcp__ts"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	ts := d.WaitPhase("ts", "ready")
	d.WaitPhase("plain", "ready")
	assert.Equal(t, 3, ts.Resources)
	assert.Equal(t, 1, ts.ResourceTemplates)
	assert.Equal(t, 2, ts.Prompts)
	ctx := t.Context()

	res, err := d.Client.Resources(ctx, "")
	require.NoError(t, err)
	require.Len(t, res.Servers, 1, "only servers with resources")
	sr := res.Servers[0]
	assert.Equal(t, "ts", sr.Server)
	assert.Equal(t, wire.PhaseReady, sr.Phase)
	require.Len(t, sr.Resources, 3)
	assert.Equal(t, testserver.BinaryURI, sr.Resources[0].URI)
	assert.Equal(t, "application/octet-stream", sr.Resources[0].MimeType)
	assert.Equal(t, []wire.ResourceTemplate{{URITemplate: testserver.ItemTemplate, Name: "item", Description: sr.Templates[0].Description, MimeType: "text/plain"}}, sr.Templates)
	plain, err := d.Client.Resources(ctx, "plain")
	require.NoError(t, err)
	assert.Empty(t, plain.Servers[0].Resources)
	_, err = d.Client.Resources(ctx, "nobody")
	assert.ErrorIs(t, err, api.ErrNotFound)

	read, err := d.Client.ReadResource(ctx, "ts", testserver.BinaryURI)
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	assert.True(t, read.Contents[0].Binary())
	assert.Equal(t, testserver.BinaryContents(), read.Contents[0].Blob)
	read, err = d.Client.ReadResource(ctx, "ts", "test://items/7")
	require.NoError(t, err)
	assert.Equal(t, "item 7", *read.Contents[0].Text)
	_, err = d.Client.ReadResource(ctx, "ts", "test://nothing")
	assert.Equal(t, http.StatusNotFound, apiStatus(err), "%v", err)
	_, err = d.Client.ReadResource(ctx, "plain", testserver.TextURI(0))
	assert.Equal(t, http.StatusConflict, apiStatus(err), "%v", err)
	assert.ErrorContains(t, err, `server "plain" offers no resources`)
	_, err = d.Client.ReadResource(ctx, "ts", "")
	assert.Equal(t, http.StatusBadRequest, apiStatus(err), "%v", err)
	assert.ErrorContains(t, err, "a read needs a server and a URI")

	prompts, err := d.Client.Prompts(ctx, "")
	require.NoError(t, err)
	require.Len(t, prompts.Servers, 1)
	require.Len(t, prompts.Servers[0].Prompts, 2)
	assert.Equal(t, wire.Prompt{Name: "greet", Title: "Greeting", Description: "Greets someone by name.", Arguments: []wire.PromptArgument{
		{Name: "name", Description: "Who to greet", Required: true}, {Name: "greeting", Description: "The word to greet with (default Hello)"}}},
		prompts.Servers[0].Prompts[0])
	got, err := d.Client.GetPrompt(ctx, "ts", "greet", map[string]string{"name": "Ada"})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	assert.JSONEq(t, `{"type":"text","text":"Hello, Ada!"}`, string(got.Messages[0].Content))
	_, err = d.Client.GetPrompt(ctx, "ts", "greet", nil)
	assert.Equal(t, http.StatusBadRequest, apiStatus(err), "%v", err)
	assert.EqualError(t, err, `server "ts": prompt "greet" needs the argument "name"; its arguments: name (required), greeting`)
	_, err = d.Client.GetPrompt(ctx, "ts", "gret", nil)
	assert.Equal(t, http.StatusNotFound, apiStatus(err), "%v", err)
	_, err = d.Client.GetPrompt(ctx, "plain", "greet", nil)
	assert.Equal(t, http.StatusConflict, apiStatus(err), "%v", err)

	// Arguments are strings.
	conn := &http.Client{Transport: &http.Transport{DialContext: func(ctx2 context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx2, "unix", api.SocketPath(home))
	}}}
	defer conn.CloseIdleConnections()
	resp, err := conn.Post("http://serve/v1/prompts/ts/greet", "application/json", strings.NewReader(`{"name": 3}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), `argument \"name\" must be a string (prompt arguments are strings), not 3`)

	// A real change is announced; a re-list that finds none is not.
	events := d.Events()
	_, err = d.Client.Call(ctx, "mcp__ts__relist", json.RawMessage(`{}`))
	require.NoError(t, err)
	_, err = d.Client.Call(ctx, "mcp__ts__set_resource", json.RawMessage(`{"uri": "test://new", "text": "fresh"}`))
	require.NoError(t, err)
	seen := servetest.Until(t, events, "resources changed", func(ev api.Event) bool { return ev.Kind == wire.KindResourcesChanged })
	var rc wire.ResourcesChanged
	require.NoError(t, seen[len(seen)-1].Decode(&rc))
	assert.Equal(t, "ts", rc.Source)
	for _, ev := range seen {
		assert.NotEqual(t, wire.KindPromptsChanged, ev.Kind, "the prompts did not change")
	}
	read, err = d.Client.ReadResource(ctx, "ts", "test://new")
	require.NoError(t, err)
	assert.Equal(t, "fresh", *read.Contents[0].Text)
	assert.Equal(t, 4, d.WaitPhase("ts", "ready").Resources)
}

// server-everything through serve: its resources, templates and prompts
// are listed, and the resource_links of a tool result read back through
// GET /v1/resources/read.
func TestRunEverythingResourceLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	node := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules/.bin/node")
	script := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("npm servers not installed (make deps): %v", err)
		}
	}
	home := servetest.ShortHome(t)
	ev := servetest.Local("everything", node, script, "stdio")
	ev["timeout"] = 20000
	conf := servetest.Config(ev)
	conf["permission"] = map[string]any{"allow": []string{"mcp__everything"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	st := d.WaitPhase("everything", "ready")
	assert.Equal(t, 7, st.Resources)
	assert.Equal(t, 2, st.ResourceTemplates)
	assert.Equal(t, 4, st.Prompts)
	ctx := t.Context()

	res, err := d.Client.Resources(ctx, "everything")
	require.NoError(t, err)
	var uris []string
	for _, r := range res.Servers[0].Resources {
		uris = append(uris, r.URI)
	}
	assert.Contains(t, uris, "demo://resource/static/document/instructions.md")
	prompts, err := d.Client.Prompts(ctx, "everything")
	require.NoError(t, err)
	var names []string
	for _, p := range prompts.Servers[0].Prompts {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"args-prompt", "completable-prompt", "resource-prompt", "simple-prompt"}, names)
	_, err = d.Client.GetPrompt(ctx, "everything", "args-prompt", map[string]string{"state": "Texas"})
	assert.EqualError(t, err, `server "everything": prompt "args-prompt" needs the argument "city"; its arguments: city (required), state`)
	pr, err := d.Client.GetPrompt(ctx, "everything", "args-prompt", map[string]string{"city": "Austin"})
	require.NoError(t, err)
	assert.Contains(t, string(pr.Messages[0].Content), "Austin")

	resp, err := d.Client.Call(ctx, "mcp__everything__get-resource-links", json.RawMessage(`{"count": 2}`))
	require.NoError(t, err)
	var links []string
	for _, c := range resp.Result.Content {
		if c.Type == "resource_link" {
			links = append(links, c.URI)
		}
	}
	require.Equal(t, []string{"demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2"}, links)
	read, err := d.Client.ReadResource(ctx, "everything", links[0])
	require.NoError(t, err)
	require.True(t, read.Contents[0].Binary())
	assert.Contains(t, string(read.Contents[0].Blob), "Resource 1: This is a base64 blob")
	read, err = d.Client.ReadResource(ctx, "everything", links[1])
	require.NoError(t, err)
	assert.Contains(t, *read.Contents[0].Text, "Resource 2: This is a plaintext resource")
}

// A subscription is serve's: updates of the resource come as
// resource_updated events, also after a restart of the server (whose new
// session is asked again), until it is ended.
func TestRunResourceSubscription(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	conf := servetest.Config(servetest.Local("ts", testServerBin, "--resources", "2"), servetest.Local("plain", testServerBin))
	conf["permission"] = map[string]any{"allow": []string{"mcp__ts"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	first := d.WaitPhase("ts", "ready")
	d.WaitPhase("plain", "ready")
	ctx := t.Context()
	updated := func(uri string) func(api.Event) bool {
		return func(ev api.Event) bool {
			var u wire.ResourceUpdated
			return ev.Kind == wire.KindResourceUpdated && ev.Decode(&u) == nil && u.Server == "ts" && u.URI == uri
		}
	}
	set := func(uri, text string) {
		t.Helper()
		_, err := d.Client.Call(ctx, "mcp__ts__set_resource", json.RawMessage(`{"uri": "`+uri+`", "text": "`+text+`"}`))
		require.NoError(t, err)
	}

	require.NoError(t, d.Client.Subscribe(ctx, "ts", testserver.TextURI(0), true))
	res, err := d.Client.Resources(ctx, "ts")
	require.NoError(t, err)
	assert.Equal(t, []string{testserver.TextURI(0)}, res.Servers[0].Subscriptions)
	events := d.Events()
	// The server sends its notifications in order: the update of text/1,
	// not subscribed to, would come before that of text/0.
	set(testserver.TextURI(1), "not watched")
	set(testserver.TextURI(0), "watched")
	seen := servetest.Until(t, events, "resource_updated", updated(testserver.TextURI(0)))
	for _, ev := range seen {
		assert.False(t, updated(testserver.TextURI(1))(ev), "an update of a resource not subscribed to")
	}

	require.NoError(t, d.Client.Restart(ctx, "ts"))
	d.WaitStatus("ts restarted", func(st wire.Status) bool {
		s, _ := servetest.Server(st, "ts")
		return s.Phase == "ready" && s.PID != first.PID
	})
	set(testserver.TextURI(0), "after the restart")
	servetest.Until(t, events, "resource_updated after a restart", updated(testserver.TextURI(0)))

	require.NoError(t, d.Client.Subscribe(ctx, "ts", testserver.TextURI(0), false))
	res, err = d.Client.Resources(ctx, "ts")
	require.NoError(t, err)
	assert.Empty(t, res.Servers[0].Subscriptions)
	err = d.Client.Subscribe(ctx, "plain", "test://x", true)
	assert.Equal(t, http.StatusConflict, apiStatus(err), "%v", err)
	err = d.Client.Subscribe(ctx, "nobody", "test://x", true)
	assert.Equal(t, http.StatusNotFound, apiStatus(err), "%v", err)
}
