package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLookupScenario(t *testing.T) {
	for _, name := range []string{"initialize", "tools_call", "sse-retry", "auth/metadata-default", "auth/client-credentials-basic"} {
		sc, err := lookupScenario(name)
		require.NoError(t, err, name)
		require.Equal(t, name, sc.Name)
	}
	_, err := lookupScenario("")
	require.ErrorContains(t, err, "MCP_CONFORMANCE_SCENARIO")
	// A scenario without a case of its own runs the default flow.
	sc, err := lookupScenario("auth/iss-something-new")
	require.NoError(t, err)
	require.True(t, sc.Default)
	require.True(t, sc.Auth)
}

func TestCheckResult(t *testing.T) {
	call := toolCall{Tool: "add_numbers", WantText: "is 8"}
	tests := []struct {
		name    string
		res     *wire.CallResult
		wantErr string
	}{
		{"expected text", wireResult(t, mcpgo.NewToolResultText("The sum of 5 and 3 is 8")), ""},
		{"text among other content", wireResult(t, &mcpgo.CallToolResult{Content: []mcpgo.Content{
			mcpgo.NewImageContent("AA==", "image/png"), mcpgo.NewTextContent("it is 8"),
		}}), ""},
		{"tool error", wireResult(t, mcpgo.NewToolResultError("bad a")), `reported an error: "bad a"`},
		{"wrong text", wireResult(t, mcpgo.NewToolResultText("is 9")), `does not contain "is 8"`},
		{"no result", nil, "empty result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkResult(call, tt.res)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// wireResult is res as a session returns it: its wire form, decoded.
func wireResult(t *testing.T, res *mcpgo.CallToolResult) *wire.CallResult {
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var w struct {
		Content []json.RawMessage `json:"content"`
		IsError bool              `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(b, &w))
	out := &wire.CallResult{IsError: w.IsError}
	for _, block := range w.Content {
		c, err := wire.DecodeContent(block)
		require.NoError(t, err)
		out.Content = append(out.Content, c)
	}
	return out
}

// startServer serves an in-process MCP server over streamable HTTP that
// offers add_numbers, which answers with sum(a, b)'s result text, and returns
// its URL.
func startServer(t *testing.T, sum func(a, b float64) float64) string {
	t.Helper()
	s := server.NewMCPServer("conformance-test", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("add_numbers",
		mcpgo.WithNumber("a", mcpgo.Required()),
		mcpgo.WithNumber("b", mcpgo.Required()),
	), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		a, err := req.RequireFloat("a")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		b, err := req.RequireFloat("b")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		return mcpgo.NewToolResultText(fmt.Sprintf("The sum of %g and %g is %g", a, b, sum(a, b))), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func TestRun(t *testing.T) {
	add := func(a, b float64) float64 { return a + b }
	tests := []struct {
		name       string
		sum        func(a, b float64) float64
		args       []string
		env        string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{name: "initialize", sum: add, env: "initialize", wantOut: "scenario initialize: ok"},
		{name: "tools_call", sum: add, env: "tools_call", wantOut: "tools/call add_numbers: ok"},
		{name: "flag overrides env", sum: add, args: []string{"-scenario", "tools_call"}, env: "initialize",
			wantOut: "scenario tools_call: ok"},
		{name: "wrong result", sum: func(a, b float64) float64 { return a - b }, env: "tools_call",
			wantStatus: 1, wantErr: `result text "The sum of 5 and 3 is 2" does not contain "The sum of 5 and 3 is 8"`},
		{name: "tool not listed", sum: add, env: "sse-retry",
			wantStatus: 1, wantErr: `server did not list tool "test_reconnection" (listed: [add_numbers])`},
		{name: "no scenario", sum: add, wantStatus: 2, wantErr: "no scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := startServer(t, tt.sum)
			var stdout, stderr bytes.Buffer
			status := run(append(tt.args, url), tt.env, "", &stdout, &stderr)
			require.Equal(t, tt.wantStatus, status, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			require.Contains(t, stdout.String(), tt.wantOut)
			require.Contains(t, stderr.String(), tt.wantErr)
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	hs := httptest.NewServer(nil)
	url := hs.URL
	hs.Close() // nothing listens there any more
	var stdout, stderr bytes.Buffer
	status := run([]string{"-timeout", "2s", url}, "initialize", "", &stdout, &stderr)
	require.Equal(t, 1, status)
	require.Contains(t, stderr.String(), "conformance-client: scenario initialize: connect:")
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(nil, "initialize", "", &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage: conformance-client")
}

// protectedServer serves, behind an in-process OAuth authorization server
// and protected resource, an MCP server that offers test-tool (answering
// "test"), as the suite's authorization scenarios do.
func protectedServer(t *testing.T, opts testauth.Options) *testauth.Server {
	t.Helper()
	s := server.NewMCPServer("conformance-auth-test", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("test-tool"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("test"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	opts.Handler = h
	return testauth.New(t, opts)
}

// The authorization scenarios run through package mcp's remote session:
// discovery, registration (or the context's pre-registered client), the
// in-band sign-in through the loopback callback, and the bearer token.
func TestRunAuth(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		opts     testauth.Options
		context  string
		check    func(t *testing.T, s *testauth.Server)
	}{
		{name: "dynamic registration", scenario: "auth/metadata-default",
			opts: testauth.Options{ChallengeScope: []string{"mcp:tools"}},
			check: func(t *testing.T, s *testauth.Server) {
				c := s.Counts()
				require.Equal(t, 1, c.Registrations)
				require.Equal(t, 1, c.CodeExchanges)
				require.Equal(t, "mcp:tools", s.AuthorizeRequests()[0].Scope)
			}},
		{name: "pre-registered client from the context", scenario: "auth/pre-registration",
			opts: testauth.Options{NoRegistration: true,
				Clients: []testauth.Client{{ID: "pre-id", Secret: "pre-secret", AuthMethod: "client_secret_basic"}}},
			context: `{"name":"auth/pre-registration","client_id":"pre-id","client_secret":"pre-secret"}`,
			check: func(t *testing.T, s *testauth.Server) {
				require.Zero(t, s.Counts().Registrations)
				require.Equal(t, "pre-id", s.AuthorizeRequests()[0].ClientID)
				require.Equal(t, "client_secret_basic", s.TokenRequests()[0].AuthMethod)
			}},
		{name: "client credentials", scenario: "auth/client-credentials-basic",
			opts: testauth.Options{NoRegistration: true,
				Clients: []testauth.Client{{ID: "cc-id", Secret: "cc-secret", Grants: []string{"client_credentials"}}}},
			context: `{"name":"auth/client-credentials-basic","client_id":"cc-id","client_secret":"cc-secret"}`,
			check: func(t *testing.T, s *testauth.Server) {
				c := s.Counts()
				require.Equal(t, 1, c.ClientCredentials)
				require.Zero(t, c.Authorizations, "no browser for a headless grant")
			}},
		{name: "client id metadata document", scenario: "auth/basic-cimd",
			opts: testauth.Options{CIMD: true},
			check: func(t *testing.T, s *testauth.Server) {
				require.Zero(t, s.Counts().Registrations)
				require.Equal(t, suiteClientMetadataURL, s.AuthorizeRequests()[0].ClientID)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := protectedServer(t, tt.opts)
			var stdout, stderr bytes.Buffer
			status := run([]string{s.URL}, tt.scenario, tt.context, &stdout, &stderr)
			require.Equal(t, 0, status, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			require.Contains(t, stdout.String(), "tools/call test-tool: ok")
			require.Positive(t, s.Counts().Authorized)
			tt.check(t, s)
			for _, secret := range s.Secrets() {
				require.NotContains(t, stdout.String()+stderr.String(), secret)
			}
		})
	}
}

func TestOAuthConfig(t *testing.T) {
	sc, err := lookupScenario("auth/pre-registration")
	require.NoError(t, err)
	cfg, unsupported, err := oauthConfig(sc, `{"name":"auth/pre-registration","client_id":"id","client_secret":"s"}`)
	require.NoError(t, err)
	require.Equal(t, auth.Config{ClientID: "id", ClientSecret: "s", ClientMetadataURL: suiteClientMetadataURL}, cfg)
	require.Empty(t, unsupported)

	cfg, _, err = oauthConfig(sc, "")
	require.NoError(t, err)
	require.Equal(t, auth.Config{ClientMetadataURL: suiteClientMetadataURL}, cfg)

	_, _, err = oauthConfig(sc, `{"name":"auth/other"}`)
	require.ErrorContains(t, err, `MCP_CONFORMANCE_CONTEXT is for scenario "auth/other", not "auth/pre-registration"`)
	_, _, err = oauthConfig(sc, `[`)
	require.ErrorContains(t, err, "MCP_CONFORMANCE_CONTEXT is not a JSON object")

	jwt, err := lookupScenario("auth/client-credentials-jwt")
	require.NoError(t, err)
	cfg, unsupported, err = oauthConfig(jwt, `{"name":"auth/client-credentials-jwt","client_id":"id","private_key_pem":"-----BEGIN","signing_algorithm":"ES256"}`)
	require.NoError(t, err)
	require.Equal(t, auth.GrantClientCredentials, cfg.Grant)
	require.Equal(t, []string{"private_key_pem (private_key_jwt client authentication)"}, unsupported)
}
