package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

// What a server sends that FreeCode does not interpret arrives unchanged
// (names aside) wherever FreeCode shows or passes it on: the API of a
// running serve (through api.Client), the CLI's --json with and without a
// serve, and the gateway's answers to a host, in-process and attached to
// serve. The server is the test server's --rich fixture; the host is
// FreeCode's own MCP client, which keeps each object as it was sent.
func TestServerFieldsArriveUnchanged(t *testing.T) {
	bin := buildTestServer(t)
	home := shortHome(t)
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(cfg(local("rich", bin, "--rich")), false)

	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("freecode", args...)
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "freecode %v:\n%s", args, stderr.String())
		return out
	}
	viaCLI := func(via string) {
		t.Helper()
		var tools []fields
		require.NoError(t, json.Unmarshal(cli("mcp", "tools", "rich", "--json"), &tools))
		richTool(t, "mcp tools --json "+via, find(t, tools, "name", testserver.RichTool))

		var rs struct {
			Servers []struct {
				Resources []fields `json:"resources"`
				Templates []fields `json:"templates"`
			} `json:"servers"`
		}
		require.NoError(t, json.Unmarshal(cli("mcp", "resources", "rich", "--json"), &rs))
		require.Len(t, rs.Servers, 1)
		richResource(t, "mcp resources --json "+via, find(t, rs.Servers[0].Resources, "uri", testserver.RichURI))
		richTemplate(t, "mcp resources --json "+via, find(t, rs.Servers[0].Templates, "uriTemplate", testserver.RichTemplate))

		var ps struct {
			Servers []struct {
				Prompts []fields `json:"prompts"`
			} `json:"servers"`
		}
		require.NoError(t, json.Unmarshal(cli("mcp", "prompts", "rich", "--json"), &ps))
		require.Len(t, ps.Servers, 1)
		richPrompt(t, "mcp prompts --json "+via, find(t, ps.Servers[0].Prompts, "name", testserver.RichPrompt))

		var call fields
		require.NoError(t, json.Unmarshal(cli("mcp", "call", "mcp__rich__rich", "--json"), &call))
		require.JSONEq(t, `"`+via+`"`, string(call["via"]))
		richResult(t, "mcp call --json "+via, call)

		var read struct {
			Contents []fields `json:"contents"`
		}
		require.NoError(t, json.Unmarshal(cli("mcp", "read", "rich", testserver.RichURI, "--json"), &read))
		require.Len(t, read.Contents, 1)
		richContents(t, "mcp read --json "+via, read.Contents[0])

		var got fields
		require.NoError(t, json.Unmarshal(cli("mcp", "prompt", "rich", testserver.RichPrompt, "topic=x", "--json"), &got))
		richPromptResult(t, "mcp prompt --json "+via, got)
	}

	// No serve: one-shot sessions, and a gateway that runs the server.
	viaCLI("one-shot")
	viaGateway(t, home, "gateway")

	// A running serve: its API, the CLI through it, and a gateway
	// attached to it.
	p := startServe(t, home)
	p.waitPhase("rich", "ready")
	ctx := t.Context()
	st, err := p.client.ServerTools(ctx, "rich")
	require.NoError(t, err)
	richTool(t, "GET /v1/servers/rich/tools", find(t, st.Tools, "name", testserver.RichTool))
	rs, err := p.client.Resources(ctx, "rich")
	require.NoError(t, err)
	require.Len(t, rs.Servers, 1)
	richResource(t, "GET /v1/resources", find(t, rs.Servers[0].Resources, "uri", testserver.RichURI))
	richTemplate(t, "GET /v1/resources", find(t, rs.Servers[0].Templates, "uriTemplate", testserver.RichTemplate))
	ps, err := p.client.Prompts(ctx, "rich")
	require.NoError(t, err)
	require.Len(t, ps.Servers, 1)
	richPrompt(t, "GET /v1/prompts", find(t, ps.Servers[0].Prompts, "name", testserver.RichPrompt))
	call, err := p.client.Call(ctx, "mcp__rich__rich", nil)
	require.NoError(t, err)
	richResult(t, "POST /v1/tools/mcp__rich__rich/call", asFields(t, call.Result))
	read, err := p.client.ReadResource(ctx, "rich", testserver.RichURI)
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	richContents(t, "GET /v1/resources/read", asFields(t, read.Contents[0]))
	pr, err := p.client.GetPrompt(ctx, "rich", testserver.RichPrompt, map[string]string{"topic": "x"})
	require.NoError(t, err)
	richPromptResult(t, "POST /v1/prompts/rich/rich", asFields(t, pr))

	viaCLI("serve")
	viaGateway(t, home, "attached gateway")
}

// viaGateway runs `freecode mcp serve` for home under FreeCode's own MCP
// client as the host, and checks what it lists and answers.
func viaGateway(t *testing.T, home, via string) {
	t.Helper()
	spec := controller.MCPSpec(schema.MCP{}.Resolve(schema.Server{Name: "gw", Type: schema.Local, Enabled: true, Timeout: waitFor,
		Command: []string{"freecode", "mcp", "serve"}, Env: map[string]string{"FREECODE_HOME": home}}))
	ctx := t.Context()
	sess, err := mcp.Connect(ctx, spec, mcp.Options{})
	require.NoError(t, err, via)
	defer func() { require.NoError(t, sess.Close()) }()

	var tool json.RawMessage
	for _, tl := range sess.Tools() {
		if tl.Name == "rich__rich" {
			tool = tl.Raw
		}
	}
	require.NotNil(t, tool, "%s: tools/list has no rich__rich", via)
	richTool(t, via+" tools/list", asFields(t, tool))
	f := sess.Features()
	var res, tmpl, prompt json.RawMessage
	for _, r := range f.Resources {
		if r.URI == "freecode://rich/"+testserver.RichURI {
			res = r.Raw
		}
	}
	for _, r := range f.Templates {
		if r.URITemplate == "freecode://rich/"+testserver.RichTemplate {
			tmpl = r.Raw
		}
	}
	for _, p := range f.Prompts {
		if p.Name == "rich__"+testserver.RichPrompt {
			prompt = p.Raw
		}
	}
	richResource(t, via+" resources/list", asFields(t, res))
	richTemplate(t, via+" resources/templates/list", asFields(t, tmpl))
	richPrompt(t, via+" prompts/list", asFields(t, prompt))

	out, err := sess.CallTool(ctx, "rich__rich", nil, nil)
	require.NoError(t, err, via)
	richResult(t, via+" tools/call", asFields(t, out))
	contents, err := sess.ReadResource(ctx, "freecode://rich/"+testserver.RichURI)
	require.NoError(t, err, via)
	require.Len(t, contents, 1)
	richContents(t, via+" resources/read", asFields(t, contents[0].Raw))
	got, err := sess.GetPrompt(context.WithoutCancel(ctx), "rich__"+testserver.RichPrompt, map[string]string{"topic": "x"})
	require.NoError(t, err, via)
	require.JSONEq(t, testserver.RichPromptResMeta, string(withoutPeerInfo(t, got.Meta)), "%s prompts/get: _meta", via)
}

// fields is a JSON object by key.
type fields map[string]json.RawMessage

// asFields is v's JSON as fields.
func asFields(t *testing.T, v any) fields {
	t.Helper()
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	var f fields
	require.NoError(t, json.Unmarshal(b, &f), "%s", b)
	return f
}

// find is the element of list whose key is value.
func find[T any](t *testing.T, list T, key, value string) fields {
	t.Helper()
	var all []fields
	b, err := json.Marshal(list)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &all))
	for _, f := range all {
		var v string
		if json.Unmarshal(f[key], &v) == nil && v == value {
			return f
		}
	}
	t.Fatalf("no element with %s %q in %s", key, value, b)
	return nil
}

// same checks that the fields of got named in want are want's, as JSON.
func same(t *testing.T, where string, got fields, want map[string]string) {
	t.Helper()
	for k, v := range want {
		require.Contains(t, got, k, "%s: %s is missing", where, k)
		g := got[k]
		if k == "_meta" {
			g = withoutPeerInfo(t, g)
		}
		require.JSONEq(t, v, string(g), "%s: %s", where, k)
	}
}

// withoutPeerInfo is a result's _meta without the answering server's own
// io.modelcontextprotocol/serverInfo, which the 2026-07-28 revision puts
// on every result: through the gateway at that revision it is the
// gateway's, as it must be, and not the server's field.
func withoutPeerInfo(t *testing.T, meta json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(meta, &m))
	delete(m, "io.modelcontextprotocol/serverInfo")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func richTool(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"title": `"` + testserver.RichToolTitle + `"`, "icons": testserver.RichIcons,
		"outputSchema": testserver.RichOutputSchema, "annotations": testserver.RichAnnotations, "_meta": testserver.RichToolMeta})
}

func richResource(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"title": `"Rich resource"`, "icons": testserver.RichIcons, "_meta": testserver.RichResourceMeta})
}

func richTemplate(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"icons": testserver.RichIcons, "_meta": testserver.RichTemplateMeta})
}

func richPrompt(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"title": `"Rich prompt"`, "icons": testserver.RichIcons, "_meta": testserver.RichPromptMeta})
}

func richResult(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"structuredContent": testserver.RichStructured, "_meta": testserver.RichResultMeta})
}

func richContents(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"text": mustJSON(t, testserver.RichContentsText), "_meta": testserver.RichContentsMeta})
}

func richPromptResult(t *testing.T, where string, got fields) {
	t.Helper()
	same(t, where, got, map[string]string{"_meta": testserver.RichPromptResMeta})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Every verb that reaches a server prints the same text whichever engine
// its route opens: a one-shot engine of the server, or the running serve.
// Both go through one implementation per verb; this keeps them so.
func TestVerbsPrintAlikeOneShotAndThroughServe(t *testing.T) {
	bin := buildTestServer(t)
	home := shortHome(t)
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(cfg(local("rich", bin, "--rich")), false)

	verbs := [][]string{
		{"mcp", "tools", "rich"},
		{"mcp", "tools", "rich", "--all"},
		{"mcp", "tools"},
		{"mcp", "call", "mcp__rich__rich"},
		{"mcp", "resources", "rich"},
		{"mcp", "resources"},
		{"mcp", "prompts", "rich"},
		{"mcp", "prompts"},
		{"mcp", "read", "rich", testserver.RichURI},
		{"mcp", "prompt", "rich", testserver.RichPrompt, "topic=x"},
	}
	run := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, args := range verbs {
			cmd := exec.Command("freecode", args...)
			cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "freecode %v:\n%s", args, stderr.String())
			require.NotEmpty(t, stdout.String(), "freecode %v", args)
			out[fmt.Sprint(args)] = "stdout:\n" + stdout.String() + "stderr:\n" + stderr.String()
		}
		return out
	}
	oneShot := run()
	p := startServe(t, home)
	p.waitPhase("rich", "ready")
	viaServe := run()
	for _, args := range verbs {
		k := fmt.Sprint(args)
		assert.Equal(t, oneShot[k], viaServe[k], "freecode %s: one-shot (expected) and through serve (actual) differ", k)
	}
}
