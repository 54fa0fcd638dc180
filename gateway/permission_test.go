package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
)

// permissionConfig has the test server t with its elicitation tools and a
// deny rule for t's sleep.
func permissionConfig(t *testing.T) string {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(testServer("t", "--ask"))
	cfg["permission"] = map[string]any{"deny": []string{"mcp__t__sleep"}, "ask": []string{"mcp__t__echo"}, "allow": []string{"mcp__t__echo"}}
	writeConfig(t, home, cfg)
	return home
}

// TestRefusalsNameTheRule: a denied call is refused by its rule; a call
// that asks, from a host that declared no elicitation capability, is
// refused naming the permission.allow rule that lets it through; an
// upstream elicitation is declined for that host.
func TestRefusalsNameTheRule(t *testing.T) {
	h := startHost(t, permissionConfig(t), hostOptions{})
	require.Contains(t, h.tools(), "t__note")

	res := h.call("t__sleep", map[string]any{"ms": 0}, false)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, text(res), `denied by rule "mcp__t__sleep" in permission.deny`)

	res = h.call("t__note", map[string]any{"text": "x"}, false)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, text(res), `add "mcp__t__note" to permission.allow in `)

	// An ask rule wins over allow: the way through is that rule.
	res = h.call("t__echo", map[string]any{"text": "x"}, false)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, text(res), `the rule "mcp__t__echo" in permission.ask asks about it (ask wins over allow): remove or narrow that rule`)
	assert.NotContains(t, text(res), "to permission.allow")

	res = h.call("t__ask", map[string]any{"message": "who?"}, false)
	assert.Contains(t, text(res), `"action":"decline"`)
	h.noEvents()
}

// TestAskAndUpstreamElicitationReachTheHost: a host that declared the
// elicitation capability is asked about a call that asks ("server X wants
// to run Y with …: allow?"), and gets the upstream server's own
// elicitations, whose answer goes back completed with the form's
// defaults.
func TestAskAndUpstreamElicitationReachTheHost(t *testing.T) {
	h := startHost(t, permissionConfig(t), hostOptions{env: []string{"ELICIT=accept", `ELICIT_CONTENT={"name":"Ann"}`}})
	require.Contains(t, h.tools(), "t__note")

	h.send(map[string]any{"op": "call", "name": "t__note", "args": map[string]any{"text": "approved"}})
	ev := h.event("elicitation")
	assert.Contains(t, ev["message"], `MCP server "t" wants to run note with {"text":"approved"}`)
	assert.Contains(t, ev["message"], "allow?")
	res := h.answer("call")["result"].(map[string]any)
	assert.Nil(t, res["isError"], "%v", res)

	h.send(map[string]any{"op": "call", "name": "t__ask", "args": map[string]any{"message": "Who are you?"}})
	ev = h.event("elicitation")
	assert.Equal(t, "t asks: Who are you?", ev["message"])
	assert.Contains(t, ev["schema"].(map[string]any)["properties"], "name")
	res = h.answer("call")["result"].(map[string]any)
	assert.Contains(t, text(res), `"action":"accept"`)
	assert.Contains(t, text(res), `"name":"Ann"`)
	assert.Contains(t, text(res), `"count":3`, "the form's defaults fill what the host left out")
}

// TestModernUpstreamElicitationReachesTheHost: a 2026-07-28 upstream asks
// through input_required; the host (2025-11-25) gets an elicitation/create
// as it does for a 2025-11-25 upstream, and its answer, completed with the
// form's defaults, reaches the server.
func TestModernUpstreamElicitationReachesTheHost(t *testing.T) {
	home := servetest.ShortHome(t)
	ts := testServer("t", "--ask", "--modern")
	ts["protocol"] = "2026-07-28"
	writeConfig(t, home, servetest.Config(ts))
	h := startHost(t, home, hostOptions{env: []string{"ELICIT=accept", `ELICIT_CONTENT={"name":"Ann"}`}})
	require.Contains(t, h.tools(), "t__ask")

	h.send(map[string]any{"op": "call", "name": "t__ask", "args": map[string]any{"message": "Who are you?"}})
	ev := h.event("elicitation")
	assert.Equal(t, "t asks: Who are you?", ev["message"])
	res := h.answer("call")["result"].(map[string]any)
	assert.Nil(t, res["isError"], "%v", res)
	assert.Contains(t, text(res), `"name":"Ann"`)
	assert.Contains(t, text(res), `"count":3`, "the form's defaults fill what the host left out")
}

// TestDeclinedAskIsRefused: a host that declines the ask refuses the call.
func TestDeclinedAskIsRefused(t *testing.T) {
	h := startHost(t, permissionConfig(t), hostOptions{env: []string{"ELICIT=decline"}})
	require.Contains(t, h.tools(), "t__note")
	h.send(map[string]any{"op": "call", "name": "t__note", "args": map[string]any{"text": "no"}})
	h.event("elicitation")
	res := h.answer("call")["result"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, text(res), "not approved")
}

func TestNeedsRuleErrorSaysWhatLetsTheCallThrough(t *testing.T) {
	e := &needsRuleError{a: api.Approval{Tool: "read", Reason: "it reads FreeCode's home", Sensitive: true}, configPath: "/h/config.json"}
	assert.Contains(t, e.Error(), "no rule lets such a call run unasked")
	assert.NotContains(t, e.Error(), "permission.allow")
}

// TestUpstreamElicitationGoesToTheCallersHost: with two hosts connected,
// a server's elicitation during a call goes to the host whose call waits
// on that server, not to the host that connected last.
func TestUpstreamElicitationGoesToTheCallersHost(t *testing.T) {
	home := permissionConfig(t)
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	a := startHost(t, home, hostOptions{http: g.url, token: token, env: []string{"ELICIT=accept", `ELICIT_CONTENT={"name":"A"}`}})
	b := startHost(t, home, hostOptions{http: g.url, token: token, env: []string{"ELICIT=accept", `ELICIT_CONTENT={"name":"B"}`}})
	require.Contains(t, a.tools(), "t__ask")
	require.Contains(t, b.tools(), "t__ask")

	a.send(map[string]any{"op": "call", "name": "t__ask", "args": map[string]any{"message": "Who calls?"}})
	assert.Equal(t, "t asks: Who calls?", a.event("elicitation")["message"])
	res := a.answer("call")["result"].(map[string]any)
	assert.Contains(t, text(res), `"name":"A"`)
	b.noEvents()
}

// TestApprovalQuestionShowsWhatFollowsPadding: arguments too long to show
// whole are shown as head and tail with their size, so what a server put
// after padding is in the question and the cut is announced.
func TestApprovalQuestionShowsWhatFollowsPadding(t *testing.T) {
	args := `{"pad":"` + strings.Repeat(" ", 5000) + `","path":"/home/me/.ssh/id_ed25519"}`
	q := approvalQuestion(api.Approval{Tool: "mcp__t__note", Args: json.RawMessage(args), Reason: "asks by default"})
	assert.Contains(t, q, `"path":"/home/me/.ssh/id_ed25519"}`)
	assert.Contains(t, q, "(5,044 bytes; 4,044 not shown)")
	assert.Contains(t, q, "not all shown")
	assert.Less(t, len(q), 1300)

	short := approvalQuestion(api.Approval{Tool: "read", Args: json.RawMessage(`{"path":"a"}`), Reason: "r"})
	assert.Equal(t, `FreeCode wants to run its read tool with {"path":"a"} (r): allow?`, short)
}
