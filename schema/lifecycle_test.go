package schema

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLifecycle: lifecycle and idleTimeout are resolved server, then the
// mcp section, then the defaults; neither is part of the spec.
func TestLifecycle(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"lifecycle": "on-demand", "idleTimeout": 60000, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "lifecycle": "always"},
		{"name": "b", "type": "local", "command": ["x"], "idleTimeout": 1500},
		{"name": "c", "type": "remote", "url": "https://example.com/mcp"}
	]}}`), LoadOptions{})
	require.NoError(t, err)
	a, b, c := cfg.MCP.Servers[0], cfg.MCP.Servers[1], cfg.MCP.Servers[2]
	require.Equal(t, LifecycleAlways, a.Lifecycle)
	require.False(t, a.OnDemand())
	require.Equal(t, time.Minute, a.IdleTimeout)
	require.True(t, b.OnDemand())
	require.Equal(t, 1500*time.Millisecond, b.IdleTimeout)
	require.True(t, c.OnDemand())
	require.Equal(t, time.Minute, c.IdleTimeout)
	other := a
	other.Lifecycle, other.IdleTimeout = LifecycleOnDemand, time.Hour
	require.Equal(t, a.SpecHash(), other.SpecHash(), "when a server runs is not what runs")

	cfg, err = v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, LifecycleAlways, cfg.MCP.Servers[0].Lifecycle)
	require.Equal(t, DefaultIdleTimeout, cfg.MCP.Servers[0].IdleTimeout)
}

func TestLifecycleInvalid(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct{ doc, msg string }{
		{`{"mcp": {"lifecycle": "lazy"}}`, `c.json:1:10: mcp.lifecycle: lifecycle must be "always" (the server runs while configured) or "on-demand" (started by its first use, stopped when idle), not "lazy"`},
		{`{"mcp": {"idleTimeout": 0}}`, "c.json:1:10: mcp.idleTimeout: idleTimeout must be a whole number of milliseconds from 1 to 86400000 (a day)"},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "lifecycle": "sometimes"}]}}`, `mcp.servers[0].lifecycle (server "a"): lifecycle must be "always"`},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "idleTimeout": 86400001}]}}`, `mcp.servers[0].idleTimeout (server "a"): idleTimeout must be a whole number of milliseconds from 1 to 86400000 (a day)`},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "idleTimeout": 1.5}]}}`, `mcp.servers[0].idleTimeout (server "a"): idleTimeout must be`},
	} {
		_, err := v.Parse("c.json", []byte(tc.doc), LoadOptions{})
		require.ErrorContains(t, err, tc.msg, tc.doc)
	}
}
