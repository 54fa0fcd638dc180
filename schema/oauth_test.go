package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOAuthConfig checks the oauth object: defaults, ${VAR} expansion of
// the client's id and secret, the spec hash, and an error naming the
// server and the field for each bad value.
func TestOAuthConfig(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	data := []byte(`{"mcp": {"servers": [
		{"name": "plain", "type": "remote", "url": "https://h/mcp"},
		{"name": "gh", "type": "remote", "url": "https://h/mcp", "headers": {"X-Tenant": "t"},
		 "oauth": {"clientId": "${ID}", "clientSecret": "${SECRET}", "scopes": ["repo", "read:org"], "callbackPort": 8976}},
		{"name": "ci", "type": "remote", "url": "https://h/mcp",
		 "oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "${SECRET}", "clientMetadataUrl": "https://freecode.example/client.json"}}
	]}}`)
	cfg, err := v.Parse("c.json", data, LoadOptions{LookupEnv: env(map[string]string{"ID": "client-1", "SECRET": "s3cr3t-value"})})
	require.NoError(t, err)
	plain, gh, ci := cfg.MCP.Servers[0], cfg.MCP.Servers[1], cfg.MCP.Servers[2]
	require.Nil(t, plain.OAuth)
	require.True(t, plain.SignsIn(), "no oauth object still means: sign in when the server asks")
	require.Equal(t, &OAuth{ClientID: "client-1", ClientSecret: "s3cr3t-value", Scopes: []string{"repo", "read:org"},
		Grant: GrantAuthorizationCode, CallbackPort: 8976}, gh.OAuth)
	require.Equal(t, GrantClientCredentials, ci.OAuth.Grant)
	require.Equal(t, "https://freecode.example/client.json", ci.OAuth.ClientMetadataURL)

	shown, err := v.Parse("c.json", data, LoadOptions{NoExpand: true})
	require.NoError(t, err)
	require.Equal(t, "${SECRET}", shown.MCP.Servers[1].OAuth.ClientSecret, "display commands see the file as written")

	// Part of the spec: any change restarts the server.
	changed := gh
	o := *gh.OAuth
	o.Scopes = []string{"repo"}
	changed.OAuth = &o
	require.NotEqual(t, gh.SpecHash(), changed.SpecHash())
	secret := gh
	o2 := *gh.OAuth
	o2.ClientSecret = "other"
	secret.OAuth = &o2
	require.NotEqual(t, gh.SpecHash(), secret.SpecHash())
	none := gh
	none.OAuth = nil
	require.NotEqual(t, gh.SpecHash(), none.SpecHash())

	static := Server{Name: "s", Type: Remote, Headers: map[string]string{"authorization": "Bearer x"}}
	require.False(t, static.SignsIn(), "a static Authorization header (any case) means no OAuth")
	require.False(t, Server{Name: "l", Type: Local}.SignsIn())
}

func TestOAuthConfigErrors(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, server, want string
	}{
		{"authorization header beside oauth",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "headers": {"authorization": "Bearer t"}, "oauth": {}}`,
			`c.json:1:121: mcp.servers[0].oauth (server "gh"): oauth and the header "authorization" are both set: remove headers.authorization to sign in with OAuth (` + "`freecode mcp login gh`" + `), or the oauth object to send that static token`},
		{"client credentials without a secret",
			`{"name": "ci", "type": "remote", "url": "https://h/mcp", "oauth": {"grant": "client_credentials", "clientId": "c"}}`,
			`mcp.servers[0].oauth (server "ci"): oauth.grant "client_credentials" needs oauth.clientId and oauth.clientSecret`},
		{"client credentials without anything",
			`{"name": "ci", "type": "remote", "url": "https://h/mcp", "oauth": {"grant": "client_credentials"}}`,
			`oauth.grant "client_credentials" needs oauth.clientId and oauth.clientSecret`},
		{"secret without id",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"clientSecret": "s"}}`,
			`mcp.servers[0].oauth (server "gh"): oauth.clientSecret needs oauth.clientId`},
		{"unknown grant",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"grant": "password"}}`,
			`mcp.servers[0].oauth.grant (server "gh"): oauth.grant must be "authorization_code"`},
		{"port out of range",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"callbackPort": 80}}`,
			`mcp.servers[0].oauth.callbackPort (server "gh"): oauth.callbackPort must be a port from 1024 to 65535`},
		{"scope with a space",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"scopes": ["repo read"]}}`,
			`mcp.servers[0].oauth.scopes (server "gh"): oauth.scopes must be a list of scope tokens`},
		{"metadata URL over http",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"clientMetadataUrl": "http://x.example/c.json"}}`,
			`mcp.servers[0].oauth.clientMetadataUrl (server "gh"): oauth.clientMetadataUrl must be an https:// URL with a path`},
		{"metadata URL without a path",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"clientMetadataUrl": "https://x.example/"}}`,
			`oauth.clientMetadataUrl must be an https:// URL with a path`},
		{"typo",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"clientID": "c"}}`,
			`mcp.servers[0].oauth.clientID (server "gh"): unknown field "clientID" in oauth (did you mean "clientId"?)`},
		{"not an object",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": true}`,
			`mcp.servers[0].oauth (server "gh"): oauth must be an object with any of`},
		{"local server",
			`{"name": "fs", "type": "local", "command": ["x"], "oauth": {}}`,
			`mcp.servers[0].oauth (server "fs"): "oauth" is only for remote servers`},
		{"unset secret variable",
			`{"name": "gh", "type": "remote", "url": "https://h/mcp", "oauth": {"clientId": "c", "clientSecret": "${NOPE}"}}`,
			`mcp.servers[0].oauth.clientSecret (server "gh"): environment variable NOPE is not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Parse("c.json", []byte(`{"mcp": {"servers": [`+tc.server+`]}}`), LoadOptions{LookupEnv: env(nil)})
			var errs Errors
			require.ErrorAs(t, err, &errs)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one error: %v", err)
		})
	}
}

// TestDescribeShowsOAuth: trusting a project shows its servers' oauth
// objects as written.
func TestDescribeShowsOAuth(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("s.json", []byte(`{"mcp": {"servers": [{"name": "gh", "type": "remote", "url": "https://h/mcp",
		"oauth": {"clientId": "${ID}", "clientSecret": "${SECRET}", "scopes": ["repo", "read:org"], "callbackPort": 8976}}]}}`), LoadOptions{NoExpand: true})
	require.NoError(t, err)
	require.Contains(t, Describe(cfg), "    oauth:    grant=authorization_code clientId=${ID} clientSecret=${SECRET} scopes=repo read:org callbackPort=8976\n")
}
