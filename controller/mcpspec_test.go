package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

func TestMCPSpec(t *testing.T) {
	bounds := mcp.Limits{MaxMessageBytes: schema.MaxMaxMessageBytes, MaxListItems: schema.MaxMaxListItems,
		MaxListPages: schema.MaxMaxListPages, MaxListBytes: schema.MaxMaxListBytes}
	for _, tc := range []struct {
		name string
		srv  schema.Server
		want mcp.Spec
	}{{
		name: "local, defaults applied (by schema)",
		srv: schema.Server{Name: "fs", Type: schema.Local, Command: []string{"npx", "-y", "server", "tok-1"},
			Env: map[string]string{"K": "v"}, Enabled: true, Shown: "npx -y server ${TOKEN}", Source: schema.SourceUser},
		want: mcp.Spec{Name: "fs", Type: mcp.Local, Command: []string{"npx", "-y", "server", "tok-1"},
			Env: map[string]string{"K": "v"}, Timeout: schema.DefaultTimeout,
			Limits: mcp.Limits{MaxMessageBytes: schema.DefaultMaxMessageBytes, MaxListItems: schema.DefaultMaxListItems,
				MaxListPages: schema.DefaultMaxListPages, MaxListBytes: schema.DefaultMaxListBytes},
			MaxLimits: bounds, Shown: "npx -y server ${TOKEN}"},
	}, {
		name: "remote, configured values kept",
		srv: schema.Server{Name: "web", Type: schema.Remote, URL: "https://h.example/v1/tok-1/mcp",
			Headers: map[string]string{"Authorization": "Bearer x"}, Transport: schema.TransportSSE,
			Timeout: 30 * time.Second, Limits: schema.Limits{MaxMessageBytes: schema.MinMaxMessageBytes, MaxListPages: 3},
			Shown: "https://h.example/v1/${TOKEN}/mcp"},
		want: mcp.Spec{Name: "web", Type: mcp.Remote, URL: "https://h.example/v1/tok-1/mcp",
			Headers: map[string]string{"Authorization": "Bearer x"}, Transport: mcp.TransportSSE,
			Timeout: 30 * time.Second,
			Limits: mcp.Limits{MaxMessageBytes: schema.MinMaxMessageBytes, MaxListItems: schema.DefaultMaxListItems,
				MaxListPages: 3, MaxListBytes: schema.DefaultMaxListBytes},
			MaxLimits: bounds, Shown: "https://h.example/v1/${TOKEN}/mcp"},
	}, {
		name: "remote with an oauth object",
		srv: schema.Server{Name: "gh", Type: schema.Remote, URL: "https://h.example/mcp", Transport: schema.TransportAuto,
			OAuth: &schema.OAuth{ClientID: "id-1", ClientSecret: "s3cret", Scopes: []string{"repo"}, Grant: schema.GrantClientCredentials,
				CallbackPort: 8976, ClientMetadataURL: "https://freecode.example/client.json"}},
		want: mcp.Spec{Name: "gh", Type: mcp.Remote, URL: "https://h.example/mcp", Transport: mcp.TransportAuto,
			OAuth: mcp.OAuth{ClientID: "id-1", ClientSecret: "s3cret", Scopes: []string{"repo"}, Grant: mcp.GrantClientCredentials,
				CallbackPort: 8976, ClientMetadataURL: "https://freecode.example/client.json"},
			Timeout: schema.DefaultTimeout,
			Limits: mcp.Limits{MaxMessageBytes: schema.DefaultMaxMessageBytes, MaxListItems: schema.DefaultMaxListItems,
				MaxListPages: schema.DefaultMaxListPages, MaxListBytes: schema.DefaultMaxListBytes},
			MaxLimits: bounds},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// The servers MCPSpec is given are resolved, as every
			// server of a schema.Config is.
			require.Equal(t, tc.want, MCPSpec(schema.MCP{}.Resolve(tc.srv)))
		})
	}
	// The two type vocabularies agree.
	require.Equal(t, string(schema.Local), string(mcp.Local))
	require.Equal(t, string(schema.Remote), string(mcp.Remote))
	require.Equal(t, string(schema.TransportAuto), string(mcp.TransportAuto))
	require.Equal(t, string(schema.TransportStreamableHTTP), string(mcp.TransportStreamableHTTP))
	require.Equal(t, string(schema.TransportSSE), string(mcp.TransportSSE))
	require.Equal(t, string(schema.GrantAuthorizationCode), string(mcp.GrantAuthorizationCode))
	require.Equal(t, string(schema.GrantClientCredentials), string(mcp.GrantClientCredentials))
}
