package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// authBenchRounds is how often BenchmarkAuthorizedCall measures each path.
const authBenchRounds = 5

// BenchmarkAuthorizedCall compares one tools/call over streamable HTTP to
// the same in-process MCP server reached two ways: directly, and behind
// an OAuth protected resource (internal/testauth) by a session with a
// token store, signed in beforehand. The difference is what authorization
// costs a call: the auth Transport (token from the store, file change
// check, the header) and the resource's token check. freecode-bench reads
// it (scenario "auth").
func BenchmarkAuthorizedCall(b *testing.B) {
	s := server.NewMCPServer("bench", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	b.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	open := httptest.NewServer(h)
	b.Cleanup(open.Close)
	protected := testauth.New(b, testauth.Options{Handler: h})

	store, err := auth.OpenStore(b.TempDir() + "/auth")
	if err != nil {
		b.Fatal(err)
	}
	in := &auth.Interaction{Out: io.Discard, Open: followRedirects(b)}
	connect := func(url string, opts Options) *Session {
		sess, err := Connect(context.Background(), remoteSpec("bench", url), opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sess.Close() })
		return sess
	}
	plain := connect(open.URL+"/mcp", Options{})
	authorized := connect(protected.URL, Options{Tokens: store, Interaction: in})

	args := json.RawMessage(`{"text":"hi"}`)
	call := func(b *testing.B, sess *Session) {
		for b.Loop() {
			if _, err := sess.CallTool(context.Background(), "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The two take turns, so that a shared machine's changing load hits
	// both alike; go test names the repeats unauthorized#01 and so on.
	for range authBenchRounds {
		b.Run("unauthorized", func(b *testing.B) { call(b, plain) })
		b.Run("authorized", func(b *testing.B) { call(b, authorized) })
	}
	if protected.Counts().Authorizations != 1 {
		b.Fatalf("%d sign-ins, want 1", protected.Counts().Authorizations)
	}
}
