package auth_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// mcpServer is a real mcp-go streamable HTTP server with one tool.
func mcpServer(t *testing.T) http.Handler {
	s := server.NewMCPServer("protected", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// session opens an mcp-go client over c's Transport, with the standalone
// GET stream on, as the remote session runs it.
func session(t *testing.T, e *env, c *auth.Client, url string) (*client.Client, error) {
	hc := &http.Client{Transport: c.Transport(e.base)}
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc),
		//lint:ignore SA1019 the remote session uses it for list_changed on the pinned protocol.
		transport.WithContinuousListening())
	require.NoError(t, err)
	cl := client.NewClient(tr, client.WithProtocolVersion(mcpgo.LATEST_LEGACY_PROTOCOL_VERSION))
	t.Cleanup(func() { _ = cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Start(context.Background()); err != nil {
		return nil, err
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "0"}
	if _, err := cl.Initialize(ctx, req); err != nil {
		return nil, err
	}
	return cl, nil
}

// TestMCPGoSession runs a real mcp-go client and server through the
// Transport: without credentials the sentinel survives mcp-go's error
// wrapping; with an in-band authorization the session initializes, lists
// and calls with one sign-in, the GET stream included.
func TestMCPGoSession(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{Handler: mcpServer(t), ChallengeScope: []string{"mcp:tools"}})

	headless := e.client("remote", srv, nil)
	_, err := session(t, e, headless, srv.URL)
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	assert.Contains(t, err.Error(), "run `freecode mcp login remote`")

	b := newBrowser(t)
	in := b.interaction(io.Discard)
	c := e.client("remote", srv, func(o *auth.Options) { o.Interaction = &in })
	cl, err := session(t, e, c, srv.URL)
	require.NoError(t, err)
	ctx := context.Background()
	tools, err := cl.ListTools(ctx, mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	call := mcpgo.CallToolRequest{}
	call.Params.Name = "echo"
	call.Params.Arguments = map[string]any{"text": "hi"}
	res, err := cl.CallTool(ctx, call)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "echo: hi", res.Content[0].(mcpgo.TextContent).Text)
	assert.Equal(t, 1, srv.Counts().Authorizations)
	assert.Equal(t, int32(1), b.opens.Load())

	// The headless client of the same server now finds the tokens.
	cl2, err := session(t, e, headless, srv.URL)
	require.NoError(t, err)
	_, err = cl2.ListTools(ctx, mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	assert.Equal(t, 1, srv.Counts().Authorizations)
}
