package serve

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
)

// CallLimits hands the orchestrator the settings schema resolved, as they
// are: the mcp section's for the built-ins, each running server's for its
// own tools; a held entry that shares a running server's name does not
// replace its settings.
func TestCallLimits(t *testing.T) {
	require.Equal(t, schema.DefaultMaxArgumentBytes, orchestrator.DefaultMaxArgumentBytes, "a Limits built without a config means the documented default")

	v, err := schema.NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"callTimeout": 60000, "maxOutputTokens": 5000, "maxArgumentBytes": 2048, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "callTimeout": 1000, "maxOutputTokens": 20000},
		{"name": "b", "type": "local", "command": ["x"]}
	]}}`), schema.LoadOptions{})
	require.NoError(t, err)
	held := cfg.MCP.Servers[1]
	held.Settings.CallTimeout, held.Hold = time.Hour, &schema.Hold{Kind: schema.HoldUntrusted, Server: "b"}
	cfg.MCP.Servers = append(cfg.MCP.Servers, held)

	lim := CallLimits(cfg, "/outputs")
	require.Equal(t, orchestrator.Limits{MaxArgumentBytes: 2048, OutputDir: "/outputs",
		Default: orchestrator.SourceLimits{CallTimeout: time.Minute, MaxOutputTokens: 5000},
		Sources: map[string]orchestrator.SourceLimits{
			"a": {CallTimeout: time.Second, MaxOutputTokens: 20000, OwnOutputCap: true},
			"b": {CallTimeout: time.Minute, MaxOutputTokens: 5000},
		}}, lim)
	require.Equal(t, time.Second, lim.TimeoutOf("a"))
	require.Equal(t, time.Minute, lim.TimeoutOf("builtin"))

	// Before any config: the defaults.
	r := rulesHolder{outputs: "/outputs"}
	require.Equal(t, orchestrator.Limits{MaxArgumentBytes: schema.DefaultMaxArgumentBytes, OutputDir: "/outputs",
		Default: orchestrator.SourceLimits{CallTimeout: schema.DefaultCallTimeout, MaxOutputTokens: schema.DefaultMaxOutputTokens},
		Sources: map[string]orchestrator.SourceLimits{}}, r.limits())
}
