package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
)

// TestGatewaySetToolsOnlyOnChange: SetTools reports a change only when the
// set differs, whatever the order.
func TestGatewaySetToolsOnlyOnChange(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (GatewayResult, error) { return GatewayResult{}, nil }})
	a := GatewayTool{Name: "s__a", InputSchema: json.RawMessage(`{"type":"object"}`)}
	b := GatewayTool{Name: "s__b", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	assert.True(t, g.SetTools([]GatewayTool{a, b}))
	assert.False(t, g.SetTools([]GatewayTool{b, a}), "the same set in another order")
	b.Description = "now described"
	assert.True(t, g.SetTools([]GatewayTool{a, b}))
	assert.Len(t, g.srv.ListTools(), 2)
}

// TestGatewayLeavesOutWhatMCPGoRefuses: a server's tool whose schema has an
// x-mcp-header annotation mcp-go refuses is left out; before, mcp-go's
// SetTools panicked and took the gateway down.
func TestGatewayLeavesOutWhatMCPGoRefuses(t *testing.T) {
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(),
		Call: func(context.Context, GatewayCall) (GatewayResult, error) { return GatewayResult{}, nil }})
	bad := GatewayTool{Name: "s__bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`)}
	good := GatewayTool{Name: "s__good"}
	assert.NotPanics(t, func() { g.SetTools([]GatewayTool{bad, good}) })
	tools := g.srv.ListTools()
	assert.Contains(t, tools, "s__good")
	assert.NotContains(t, tools, "s__bad")
}
