package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewaySetToolsOnlyOnChange: SetTools reports a change only when the
// set differs, whatever the order.
func TestGatewaySetToolsOnlyOnChange(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil }})
	a := wire.Tool{Name: "s__a", InputSchema: json.RawMessage(`{"type":"object"}`)}
	b := wire.Tool{Name: "s__b", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	assert.True(t, g.SetTools([]wire.Tool{a, b}))
	assert.False(t, g.SetTools([]wire.Tool{b, a}), "the same set in another order")
	b.Description = "now described"
	assert.True(t, g.SetTools([]wire.Tool{a, b}))
	assert.Len(t, g.srv.ListTools(), 2)
}

// TestGatewayLeavesOutWhatMCPGoRefuses: a server's tool whose schema has an
// x-mcp-header annotation mcp-go refuses is left out; before, mcp-go's
// SetTools panicked and took the gateway down.
func TestGatewayLeavesOutWhatMCPGoRefuses(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil }})
	bad := wire.Tool{Name: "s__bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`)}
	good := wire.Tool{Name: "s__good"}
	assert.NotPanics(t, func() { g.SetTools([]wire.Tool{bad, good}) })
	tools := g.srv.ListTools()
	assert.Contains(t, tools, "s__good")
	assert.NotContains(t, tools, "s__bad")
}

// countingSession is an initialized host session that keeps the
// notifications it is sent.
type countingSession struct {
	ch chan mcpgo.JSONRPCNotification
}

func (s countingSession) Initialize()                                           {}
func (s countingSession) Initialized() bool                                     { return true }
func (s countingSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification { return s.ch }
func (s countingSession) SessionID() string                                     { return "counting" }

// drain returns how many notifications of method were sent so far
// (delivery is synchronous), and forgets them.
func (s countingSession) drain(method string) int {
	n := 0
	for {
		select {
		case m := <-s.ch:
			if m.Method == method {
				n++
			}
		default:
			return n
		}
	}
}

// TestGatewayResourceChangeNotifiesOnce: a change of the resources, or of
// the templates, sends the host one resources/list_changed; setting the
// same lists again sends none.
func TestGatewayResourceChangeNotifiesOnce(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil }})
	s := countingSession{ch: make(chan mcpgo.JSONRPCNotification, 16)}
	require.NoError(t, g.srv.RegisterSession(t.Context(), s))
	const changed = string(mcpgo.MethodNotificationResourcesListChanged)
	rs := []wire.Resource{{URI: "freecode://a/test://x", Name: "a__x"}}
	ts := []wire.ResourceTemplate{{URITemplate: "freecode://a/test://items/{id}", Name: "a__items"}}
	g.SetResources(rs, ts)
	s.drain(changed)

	rs = append(rs, wire.Resource{URI: "freecode://a/test://y", Name: "a__y"})
	assert.True(t, g.SetResources(rs, ts))
	assert.Equal(t, 1, s.drain(changed), "a new resource")
	ts[0].Description = "now described"
	assert.True(t, g.SetResources(rs, ts))
	assert.Equal(t, 1, s.drain(changed), "a changed template")
	assert.False(t, g.SetResources(rs, ts))
	assert.Zero(t, s.drain(changed), "the same lists")
	assert.Len(t, g.srv.ListResources(), 2)
}

// TestGatewayListsTheServersObjects: what mcp-go models of a server's own
// tool, resource, template and prompt beyond the gateway's fields
// (outputSchema raw, icons, _meta) is listed; a changed icon is a change,
// the same objects again are none; an object that does not decode as
// mcp-go's lists the gateway's fields (and what decodes of the rest).
func TestGatewayListsTheServersObjects(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil }})
	const icons = `[{"src":"https://x/a.png","mimeType":"image/png"}]`
	const meta = `{"anthropic/maxResultSizeChars":500000,"example.com/n":12345678901234567}`
	out := `{"type":"object","$defs":{"x":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/x"}}}`
	raw := func(icon string) json.RawMessage {
		return json.RawMessage(`{"name":"own","inputSchema":{"$ref":"#/x"},"outputSchema":` + out + `,"icons":` + icon + `,"_meta":` + meta + `}`)
	}
	tool := wire.Tool{Name: "s__own", Title: "T", InputSchema: json.RawMessage(`{"type":"object"}`), Raw: raw(icons)}
	assert.True(t, g.SetTools([]wire.Tool{tool}))
	assert.False(t, g.SetTools([]wire.Tool{tool}), "the same object")
	got, err := json.Marshal(g.srv.GetTool("s__own").Tool)
	require.NoError(t, err)
	var f map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got, &f))
	assert.JSONEq(t, `"s__own"`, string(f["name"]), "the gateway's name")
	assert.JSONEq(t, `{"type":"object"}`, string(f["inputSchema"]), "the gateway's schema")
	assert.JSONEq(t, out, string(f["outputSchema"]))
	assert.JSONEq(t, icons, string(f["icons"]))
	assert.JSONEq(t, meta, string(f["_meta"]))
	tool.Raw = raw(`[{"src":"https://x/b.png"}]`)
	assert.True(t, g.SetTools([]wire.Tool{tool}), "a changed icon")

	// A schema mcp-go's type cannot hold: the rest is still listed.
	tool.Raw = json.RawMessage(`{"name":"own","inputSchema":{"type":"object","properties":[]},"icons":` + icons + `,"_meta":` + meta + `}`)
	assert.True(t, g.SetTools([]wire.Tool{tool}))
	got, err = json.Marshal(g.srv.GetTool("s__own").Tool)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(got, &f))
	assert.JSONEq(t, icons, string(f["icons"]))
	assert.JSONEq(t, meta, string(f["_meta"]))

	res := wire.Resource{URI: "freecode://a/test://x", Name: "a__x", Raw: json.RawMessage(`{"uri":"test://x","icons":` + icons + `,"_meta":` + meta + `}`)}
	assert.True(t, g.SetResources([]wire.Resource{res}, nil))
	assert.False(t, g.SetResources([]wire.Resource{res}, nil))
	got, err = json.Marshal(g.srv.ListResources()["freecode://a/test://x"].Resource)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(got, &f))
	assert.JSONEq(t, `"freecode://a/test://x"`, string(f["uri"]))
	assert.JSONEq(t, icons, string(f["icons"]))
	assert.JSONEq(t, meta, string(f["_meta"]))
	res.Raw = json.RawMessage(`{"uri":"test://x","icons":[]}`)
	assert.True(t, g.SetResources([]wire.Resource{res}, nil), "changed icons")

	p := wire.Prompt{Name: "a__p", Raw: json.RawMessage(`{"name":"p","icons":` + icons + `,"_meta":` + meta + `}`)}
	assert.True(t, g.SetPrompts([]wire.Prompt{p}))
	assert.False(t, g.SetPrompts([]wire.Prompt{p}))
	got, err = json.Marshal(g.srv.ListPrompts()["a__p"].Prompt)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(got, &f))
	assert.JSONEq(t, icons, string(f["icons"]))
	assert.JSONEq(t, meta, string(f["_meta"]))
}
