package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// protectedEcho is an OAuth-protected streamable HTTP MCP server with one
// tool, echo.
func protectedEcho(t *testing.T, opts testauth.Options) *testauth.Server {
	t.Helper()
	s := server.NewMCPServer("protected", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	opts.Handler = h
	return testauth.New(t, opts)
}

// followRedirects is a browser that approves at once: it GETs the
// authorization URL and follows the redirect to the loopback callback.
func followRedirects(t testing.TB) func(ctx context.Context, authURL string) error {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	return func(ctx context.Context, authURL string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("ended on HTTP %d", resp.StatusCode)
		}
		return nil
	}
}

// remoteSpec is a streamable HTTP server at url, with a connect timeout
// generous enough for a sign-in on a loaded machine.
func remoteSpec(name, url string) Spec {
	return Spec{Name: name, Type: Remote, URL: url, Transport: TransportStreamableHTTP, Timeout: 20 * time.Second,
		Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()}
}

// With Options.Tokens every request of a remote session is authorized by
// the server's OAuth client: without a sign-in the start fails naming
// it; with an in-band one (Options.Interaction) the session connects, and
// a later session finds the stored tokens.
func TestRemoteAuthorization(t *testing.T) {
	srv := protectedEcho(t, testauth.Options{ChallengeScope: []string{"mcp:tools"}})
	spec := remoteSpec("guarded", srv.URL)
	store, err := auth.OpenStore(t.TempDir() + "/auth")
	require.NoError(t, err)

	_, err = Connect(context.Background(), spec, Options{Logger: testLogger(t)})
	require.ErrorContains(t, err, "HTTP 401", "no token store: requests go out as they are")

	_, err = Connect(context.Background(), spec, Options{Logger: testLogger(t), Tokens: store})
	require.ErrorIs(t, err, auth.ErrNeedsLogin)

	in := &auth.Interaction{Out: io.Discard, Open: followRedirects(t)}
	s := connectWith(t, spec, Options{Logger: testLogger(t), Tokens: store, Interaction: in})
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`), nil)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	require.JSONEq(t, `{"type":"text","text":"echo: hi"}`, string(blockOf(t, res.Content[0])))
	require.Equal(t, 1, srv.Counts().CodeExchanges)
	require.Equal(t, "mcp:tools", srv.AuthorizeRequests()[0].Scope)

	// A headless session of the same server uses the stored tokens.
	s2 := connectWith(t, spec, Options{Logger: testLogger(t), Tokens: store})
	_, err = s2.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"again"}`), nil)
	require.NoError(t, err)
	require.Equal(t, 1, srv.Counts().Authorizations, "one sign-in for both sessions")
}

// connectWith connects srv with opts and closes the session at cleanup.
func connectWith(t *testing.T, srv Spec, opts Options) *Session {
	t.Helper()
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}
