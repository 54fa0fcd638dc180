package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// names lists the values of key of a list of objects.
func names(list any, key string) []string {
	var out []string
	for _, x := range list.([]any) {
		out = append(out, x.(map[string]any)[key].(string))
	}
	return out
}

// TestResourcesPromptsAndInstructions: the resources and prompts of two
// servers that use the same URIs and names are listed apart, read and got
// from the right server; their instructions are merged under a header
// each; a server's list_changed that changed nothing reaches no host, a
// real change does.
func TestResourcesPromptsAndInstructions(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(
		testServer("a", "--resources", "1", "--prompts", "--instructions", "Server a says hi."),
		testServer("b", "--resources", "1", "--prompts", "--instructions", "Server b says hello."))
	cfg["permission"] = map[string]any{"allow": []string{"mcp__a__set_resource"}}
	writeConfig(t, home, cfg)
	h := startHost(t, home, hostOptions{})
	assert.Contains(t, h.conn["instructions"], "## a\n\nServer a says hi.\n\n## b\n\nServer b says hello.\n")

	h.send(map[string]any{"op": "resources"})
	res := h.answer("resources")
	uris := names(res["resources"], "uri")
	assert.Contains(t, uris, "freecode://a/test://text/0")
	assert.Contains(t, uris, "freecode://b/test://text/0")
	assert.Contains(t, names(res["resources"], "name"), "a__binary")
	assert.Contains(t, names(res["templates"], "uriTemplate"), "freecode://b/test://items/{id}")

	h.send(map[string]any{"op": "read", "uri": "freecode://b/test://items/7"})
	read := h.answer("read")["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)
	assert.Equal(t, "item 7", read["text"])
	assert.Equal(t, "freecode://b/test://items/7", read["uri"])

	h.send(map[string]any{"op": "prompts"})
	assert.Subset(t, names(h.answer("prompts")["prompts"], "name"), []string{"a__greet", "a__plain", "b__greet", "b__plain"})
	h.send(map[string]any{"op": "prompt", "name": "b__greet", "args": map[string]any{"name": "Ann"}})
	msgs := h.answer("prompt")["result"].(map[string]any)["messages"].([]any)
	require.NotEmpty(t, msgs)
	assert.Contains(t, msgs[0].(map[string]any)["content"].(map[string]any)["text"], "Ann")

	// relist announces a change that is none: nothing reaches the host;
	// set_resource is a real one.
	h.call("a__relist", nil, false)
	h.call("a__set_resource", map[string]any{"uri": "test://new", "text": "new"}, false)
	h.event("resources_changed")
	h.send(map[string]any{"op": "resources"})
	assert.Contains(t, names(h.answer("resources")["resources"], "uri"), "freecode://a/test://new")
}

// TestInstructionsAreMerged: the host's instructions hold each server's
// own under a header naming it.
func TestInstructionsAreMerged(t *testing.T) {
	got := mergeInstructions(map[string]string{"b": "Server b says hello.", "a": "Server a says hi.", "c": "  "})
	assert.Contains(t, got, "## a\n\nServer a says hi.\n\n## b\n\nServer b says hello.\n")
	assert.NotContains(t, got, "## c")
	assert.Empty(t, mergeInstructions(nil))
}

// TestFrontOneServer: with Options.Server the gateway is that one server:
// its tools, resources, templates and prompts under their own names and
// URIs, its instructions as they are, nothing of the other server's, and
// calls, reads and prompts go to it through the permission rules.
func TestFrontOneServer(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(
		testServer("a", "--resources", "1", "--prompts", "--instructions", "Server a says hi."),
		testServer("b", "--resources", "1", "--prompts", "--instructions", "Server b says hello."))
	cfg["permission"] = map[string]any{"allow": []string{"mcp__a__set_resource"}, "deny": []string{"mcp__a__relist"}}
	writeConfig(t, home, cfg)
	h := startHost(t, home, hostOptions{env: []string{childServer + "=a"}})
	assert.Equal(t, "Server a says hi.", h.conn["instructions"], "the server's own instructions, without the gateway's header")

	tools := h.tools()
	assert.Contains(t, tools, "set_resource")
	assert.Contains(t, tools, "echo")
	for name := range tools {
		assert.NotContains(t, name, "__", "no prefix, and nothing of b's")
	}
	assert.NotContains(t, tools, ToolSearch)

	h.send(map[string]any{"op": "resources"})
	res := h.answer("resources")
	assert.Contains(t, names(res["resources"], "uri"), "test://text/0")
	assert.Contains(t, names(res["resources"], "name"), "binary")
	assert.Equal(t, []string{"test://items/{id}"}, names(res["templates"], "uriTemplate"), "a's template alone")

	h.send(map[string]any{"op": "read", "uri": "test://items/7"})
	read := h.answer("read")["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)
	assert.Equal(t, "item 7", read["text"])
	assert.Equal(t, "test://items/7", read["uri"])

	h.send(map[string]any{"op": "prompts"})
	assert.ElementsMatch(t, []string{"greet", "plain"}, names(h.answer("prompts")["prompts"], "name"))
	h.send(map[string]any{"op": "prompt", "name": "greet", "args": map[string]any{"name": "Ann"}})
	msgs := h.answer("prompt")["result"].(map[string]any)["messages"].([]any)
	require.NotEmpty(t, msgs)
	assert.Contains(t, msgs[0].(map[string]any)["content"].(map[string]any)["text"], "Ann")

	// The rules still hold, by the tool's id.
	denied := h.call("relist", nil, false)
	assert.Equal(t, true, denied["isError"], "a denied tool is refused: %v", denied)
	h.call("set_resource", map[string]any{"uri": "test://new", "text": "new"}, false)
	h.event("resources_changed")
	h.send(map[string]any{"op": "resources"})
	assert.Contains(t, names(h.answer("resources")["resources"], "uri"), "test://new")
}

// complete asks the gateway, as h's host, to complete arg of ref typed so
// far, with the other arguments given (nil: none); it returns the
// completion, or the error.
func (h *host) complete(ref map[string]any, arg, typed string, given map[string]any) (map[string]any, string) {
	h.t.Helper()
	cmd := map[string]any{"op": "complete", "ref": ref, "argument": map[string]any{"name": arg, "value": typed}}
	if given != nil {
		cmd["context"] = map[string]any{"arguments": given}
	}
	h.send(cmd)
	a := h.answer("complete")
	if e, ok := a["error"].(string); ok {
		return nil, e
	}
	return a["result"].(map[string]any)["completion"].(map[string]any), ""
}

func promptRef(name string) map[string]any { return map[string]any{"type": "ref/prompt", "name": name} }
func templateRef(uri string) map[string]any {
	return map[string]any{"type": "ref/resource", "uri": uri}
}

// TestCompletionsThroughTheGateway: the gateway declares completions when
// a server behind it does, and passes a host's completion/complete to the
// server of the prompt or template, under the names the host sees; a
// server without completions says so; fronting one server, the gateway
// declares them as that server does.
func TestCompletionsThroughTheGateway(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(
		testServer("a", "--resources", "1", "--prompts", "--completions"),
		testServer("b", "--resources", "1", "--prompts")))
	h := startHost(t, home, hostOptions{})
	assert.Contains(t, h.conn["capabilities"], "completions")

	c, errMsg := h.complete(promptRef("a__greet"), "name", "Al", nil)
	require.Empty(t, errMsg)
	assert.Equal(t, map[string]any{"values": []any{"Alan", "Alonzo"}}, c)
	c, errMsg = h.complete(promptRef("a__greet"), "greeting", "", map[string]any{"name": "Ada"})
	require.Empty(t, errMsg)
	assert.Equal(t, []any{"Good day", "Hello"}, c["values"], "the context reached the server")
	c, errMsg = h.complete(templateRef("freecode://a/test://items/{id}"), "id", "1", nil)
	require.Empty(t, errMsg)
	assert.Equal(t, map[string]any{"values": []any{"1", "10", "11"}, "total": float64(5), "hasMore": true}, c)

	_, errMsg = h.complete(promptRef("b__greet"), "name", "", nil)
	assert.Contains(t, errMsg, `server "b" offers no completions`)
	_, errMsg = h.complete(promptRef("greet"), "name", "", nil)
	assert.Contains(t, errMsg, `prompt "greet": the gateway's prompts are named <server>__<prompt>`)
	_, errMsg = h.complete(templateRef("test://items/{id}"), "id", "", nil)
	assert.Contains(t, errMsg, "not a resource of the gateway")

	// Fronting a, its names as they are; fronting b, no completions.
	a := startHost(t, home, hostOptions{env: []string{childServer + "=a"}})
	assert.Contains(t, a.conn["capabilities"], "completions")
	c, errMsg = a.complete(templateRef("test://items/{id}"), "id", "2", nil)
	require.Empty(t, errMsg)
	assert.Equal(t, []any{"2"}, c["values"])
	b := startHost(t, home, hostOptions{env: []string{childServer + "=b"}})
	assert.NotContains(t, b.conn["capabilities"], "completions")
	_, errMsg = b.complete(promptRef("greet"), "name", "", nil)
	assert.Contains(t, errMsg, "no server behind the gateway offers completions")
}
