package schema

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCallTimeoutAndArgumentLimit(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"callTimeout": 60000, "maxArgumentBytes": 2048, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "callTimeout": 1000},
		{"name": "b", "type": "local", "command": ["x"]}
	]}}`), LoadOptions{})
	require.NoError(t, err)
	a, b := cfg.MCP.Servers[0], cfg.MCP.Servers[1]
	require.Equal(t, time.Second, a.Settings.CallTimeout)
	require.True(t, a.Settings.OwnCallTimeout)
	require.Equal(t, time.Minute, b.Settings.CallTimeout)
	require.False(t, b.Settings.OwnCallTimeout)
	require.Equal(t, time.Minute, cfg.MCP.Defaults.CallTimeout)
	require.Equal(t, 2048, cfg.MCP.MaxArgumentBytes)
	noCall := a
	noCall.Settings.CallTimeout = 0
	require.Equal(t, noCall.SpecHash(), a.SpecHash(), "a call timeout is not part of what runs")

	cfg, err = v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, DefaultCallTimeout, cfg.MCP.Defaults.CallTimeout)
	require.Equal(t, DefaultCallTimeout, cfg.MCP.Servers[0].Settings.CallTimeout)
	require.Equal(t, DefaultMaxArgumentBytes, cfg.MCP.MaxArgumentBytes)
	require.Equal(t, DefaultCallTimeout, MCP{}.Resolve(Server{}).Settings.CallTimeout)
}

// TestResolve is the table of Resolve, the one place a server's defaults
// are applied: the mcp section unset or set, times the server's own value
// unset or set.
func TestResolve(t *testing.T) {
	top := MCP{written: written{callTimeout: time.Minute, maxOutputTokens: 5000}}
	own := Server{Timeout: time.Second, Limits: Limits{MaxListItems: 7},
		written: written{callTimeout: 2 * time.Second, maxOutputTokens: 100000}}
	ownLimits := Limits{}.WithDefaults()
	ownLimits.MaxListItems = 7
	for _, tc := range []struct {
		name string
		mcp  MCP
		srv  Server
		want Server
	}{
		{"neither", MCP{}, Server{}, Server{Timeout: DefaultTimeout, Limits: Limits{}.WithDefaults(), Lifecycle: LifecycleAlways, IdleTimeout: DefaultIdleTimeout,
			Settings: Settings{CallTimeout: DefaultCallTimeout, MaxOutputTokens: DefaultMaxOutputTokens}}},
		{"mcp only", top, Server{}, Server{Timeout: DefaultTimeout, Limits: Limits{}.WithDefaults(), Lifecycle: LifecycleAlways, IdleTimeout: DefaultIdleTimeout,
			Settings: Settings{CallTimeout: time.Minute, MaxOutputTokens: 5000}}},
		{"server only", MCP{}, own, Server{Timeout: time.Second, Limits: ownLimits, written: own.written, Lifecycle: LifecycleAlways, IdleTimeout: DefaultIdleTimeout,
			Settings: Settings{CallTimeout: 2 * time.Second, MaxOutputTokens: 100000, OwnCallTimeout: true, OwnOutputCap: true}}},
		{"both", top, own, Server{Timeout: time.Second, Limits: ownLimits, written: own.written, Lifecycle: LifecycleAlways, IdleTimeout: DefaultIdleTimeout,
			Settings: Settings{CallTimeout: 2 * time.Second, MaxOutputTokens: 100000, OwnCallTimeout: true, OwnOutputCap: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.mcp.Resolve(tc.srv)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, tc.mcp.Resolve(got), "resolving again changes nothing")
		})
	}

	m := top
	m.resolve()
	require.Equal(t, Settings{CallTimeout: time.Minute, MaxOutputTokens: 5000}, m.Defaults)
	require.Equal(t, DefaultMaxArgumentBytes, m.MaxArgumentBytes)
	require.Equal(t, Limits{}.WithDefaults(), m.Limits)
}

func TestCallLimitsBounded(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct{ doc, msg string }{
		{`{"mcp": {"callTimeout": 0}}`, "c.json:1:10: mcp.callTimeout: callTimeout must be a whole number of milliseconds from 1 to 86400000 (a day)"},
		{`{"mcp": {"callTimeout": 86400001}}`, "c.json:1:10: mcp.callTimeout: callTimeout must be"},
		{`{"mcp": {"callTimeout": "5s"}}`, "c.json:1:10: mcp.callTimeout: callTimeout must be"},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "callTimeout": 1.5}]}}`, `mcp.servers[0].callTimeout (server "a"): callTimeout must be`},
		{`{"mcp": {"maxArgumentBytes": 100}}`, "c.json:1:10: mcp.maxArgumentBytes: maxArgumentBytes must be a whole number of bytes from 1024 to 4194304"},
		{`{"mcp": {"maxArgumentBytes": 4194305}}`, "mcp.maxArgumentBytes: maxArgumentBytes must be"},
		{`{"mcp": {"maxArgumentByte": 4096}}`, `unknown field "maxArgumentByte" (did you mean "maxArgumentBytes"?)`},
	} {
		_, err := v.Parse("c.json", []byte(tc.doc), LoadOptions{})
		require.ErrorContains(t, err, tc.msg, tc.doc)
	}
}

func TestMaxOutputTokens(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"maxOutputTokens": 5000, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "maxOutputTokens": 100000},
		{"name": "b", "type": "local", "command": ["x"]}
	]}}`), LoadOptions{})
	require.NoError(t, err)
	a, b := cfg.MCP.Servers[0], cfg.MCP.Servers[1]
	require.Equal(t, Settings{CallTimeout: DefaultCallTimeout, MaxOutputTokens: 100000, OwnOutputCap: true}, a.Settings)
	require.Equal(t, Settings{CallTimeout: DefaultCallTimeout, MaxOutputTokens: 5000}, b.Settings)
	require.Equal(t, 5000, cfg.MCP.Defaults.MaxOutputTokens)
	noCap := a
	noCap.Settings = Settings{}
	require.Equal(t, noCap.SpecHash(), a.SpecHash(), "an output cap is not part of what runs")
	require.Equal(t, DefaultMaxOutputTokens, MCP{}.Resolve(Server{}).Settings.MaxOutputTokens)

	for _, tc := range []struct{ doc, msg string }{
		{`{"mcp": {"maxOutputTokens": 999}}`, "c.json:1:10: mcp.maxOutputTokens: maxOutputTokens must be a whole number of estimated tokens (bytes / 4) from 1000 to 1000000"},
		{`{"mcp": {"maxOutputTokens": 1000001}}`, "mcp.maxOutputTokens: maxOutputTokens must be"},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "maxOutputTokens": 2.5}]}}`, `mcp.servers[0].maxOutputTokens (server "a"): maxOutputTokens must be`},
		{`{"mcp": {"maxOutputToken": 4096}}`, `unknown field "maxOutputToken" (did you mean "maxOutputTokens"?)`},
	} {
		_, err := v.Parse("c.json", []byte(tc.doc), LoadOptions{})
		require.ErrorContains(t, err, tc.msg, tc.doc)
	}
}

func TestToolBudgetAndAlwaysLoad(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, DefaultToolBudget, cfg.MCP.ToolBudget, "absent: the default")
	require.Empty(t, cfg.MCP.AlwaysLoaded())

	cfg, err = v.Parse("c.json", []byte(`{"mcp": {"toolBudget": 0, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "alwaysLoad": true},
		{"name": "b", "type": "local", "command": ["x"], "alwaysLoad": false}
	]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, 0, cfg.MCP.ToolBudget, "0 is kept: never defer")
	require.Equal(t, []string{"a"}, cfg.MCP.AlwaysLoaded())
	a := cfg.MCP.Servers[0]
	plain := a
	plain.AlwaysLoad = false
	require.Equal(t, plain.SpecHash(), a.SpecHash(), "alwaysLoad is not part of what runs")

	for _, tc := range []struct{ doc, msg string }{
		{`{"mcp": {"toolBudget": -1}}`, "c.json:1:10: mcp.toolBudget: toolBudget must be a whole number of estimated tokens (bytes / 4) from 0 (never defer tools) to 10000000"},
		{`{"mcp": {"toolBudget": 1.5}}`, "mcp.toolBudget: toolBudget must be"},
		{`{"mcp": {"toolBudget": "big"}}`, "mcp.toolBudget: toolBudget must be"},
		{`{"mcp": {"servers": [{"name": "a", "type": "local", "command": ["x"], "alwaysLoad": "yes"}]}}`, `mcp.servers[0].alwaysLoad (server "a"): alwaysLoad must be true or false`},
		{`{"mcp": {"toolbudget": 4096}}`, `unknown field "toolbudget" (did you mean "toolBudget"?)`},
	} {
		_, err := v.Parse("c.json", []byte(tc.doc), LoadOptions{})
		require.ErrorContains(t, err, tc.msg, tc.doc)
	}
}
