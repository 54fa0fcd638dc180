package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostConfig: each host's snippet is in that host's own format, and
// reads back as the launch it was made of.
func TestHostConfig(t *testing.T) {
	stdio := Launch{Name: "freecode", Command: "/usr/local/bin/freecode", Args: []string{"mcp", "serve"}, Env: map[string]string{"FREECODE_HOME": "/h"}}
	web := Launch{Name: "freecode", URL: "http://127.0.0.1:8765/mcp", TokenFile: "/h/gateway/token"}
	headers := map[string]any{
		"claude": map[string]any{"Authorization": "Bearer ${FREECODE_GATEWAY_TOKEN}"},
		"cursor": map[string]any{"Authorization": "Bearer ${env:FREECODE_GATEWAY_TOKEN}"},
		"vscode": map[string]any{"Authorization": "Bearer ${input:freecode-gateway-token}"},
	}
	for _, host := range []string{"claude", "cursor", "vscode"} {
		t.Run(host, func(t *testing.T) {
			key := "mcpServers"
			if host == "vscode" {
				key = "servers"
			}
			s, where, err := HostConfig(host, stdio)
			require.NoError(t, err)
			assert.NotEmpty(t, where)
			var v map[string]map[string]map[string]any
			require.NoError(t, json.Unmarshal([]byte(s), &v), s)
			e := v[key]["freecode"]
			assert.Equal(t, "/usr/local/bin/freecode", e["command"])
			assert.Equal(t, []any{"mcp", "serve"}, e["args"])
			assert.Equal(t, map[string]any{"FREECODE_HOME": "/h"}, e["env"])

			s, where, err = HostConfig(host, web)
			require.NoError(t, err)
			var doc map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(s), &doc), s)
			var servers map[string]map[string]any
			require.NoError(t, json.Unmarshal(doc[key], &servers), s)
			e = servers["freecode"]
			assert.Equal(t, web.URL, e["url"])
			assert.Equal(t, headers[host], e["headers"], "the snippet refers to the token, holds none")
			assert.Contains(t, where, web.TokenFile, "where says how to get the token")
			if host == "vscode" {
				assert.Contains(t, string(doc["inputs"]), `"password": true`)
			}
			if host != "cursor" {
				assert.Equal(t, "http", e["type"])
			}
		})
	}
	s, _, err := HostConfig("codex", stdio)
	require.NoError(t, err)
	var c struct {
		Servers map[string]struct {
			Command string            `toml:"command"`
			Args    []string          `toml:"args"`
			Env     map[string]string `toml:"env"`
			URL     string            `toml:"url"`
			Var     string            `toml:"bearer_token_env_var"`
			Startup int               `toml:"startup_timeout_sec"`
			Tool    int               `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	require.NoError(t, toml.Unmarshal([]byte(s), &c), s)
	assert.Equal(t, stdio.Command, c.Servers["freecode"].Command)
	assert.Equal(t, stdio.Args, c.Servers["freecode"].Args)
	assert.Equal(t, stdio.Env, c.Servers["freecode"].Env)
	assert.Equal(t, 30, c.Servers["freecode"].Startup, "Codex waits out the gateway's StartupWait")
	assert.Zero(t, c.Servers["freecode"].Tool, "no call timeout given, none written")
	stdio.CallTimeout = 5 * time.Minute
	s, _, err = HostConfig("codex", stdio)
	require.NoError(t, err)
	require.NoError(t, toml.Unmarshal([]byte(s), &c), s)
	assert.Equal(t, 660, c.Servers["freecode"].Tool, "Codex waits out a retried call of callTimeout, and a minute")
	stdio.CallTimeout = time.Millisecond
	s, _, err = HostConfig("codex", stdio)
	require.NoError(t, err)
	require.NoError(t, toml.Unmarshal([]byte(s), &c), s)
	assert.Equal(t, 60, c.Servers["freecode"].Tool, "never less than Codex's own minute")
	s, _, err = HostConfig("codex", web)
	require.NoError(t, err)
	assert.NotContains(t, s, "Bearer", "Codex reads the token from the environment")
	require.NoError(t, toml.Unmarshal([]byte(s), &c), s)
	assert.Equal(t, web.URL, c.Servers["freecode"].URL)
	assert.Equal(t, TokenEnvVar, c.Servers["freecode"].Var)

	_, _, err = HostConfig("emacs", stdio)
	assert.ErrorContains(t, err, "want one of claude, cursor, vscode, codex")
}
