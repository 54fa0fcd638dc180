package gateway

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// questions is a 2026-07-28 host's elicitation handler: it accepts the
// gateway's approvals and answers a server's form with a name, and
// records the messages it was shown.
type questions struct {
	mu   sync.Mutex
	seen []string
}

func (q *questions) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	q.mu.Lock()
	q.seen = append(q.seen, req.Params.Message)
	q.mu.Unlock()
	res := &mcpgo.ElicitationResult{}
	res.Action = mcpgo.ElicitationResponseActionAccept
	if strings.HasPrefix(req.Params.Message, "t asks:") {
		res.Content = map[string]any{"name": "Ann"}
	}
	return res, nil
}

func (q *questions) messages() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.seen...)
}

// modernHost connects an mcp-go client on 2026-07-28, answering with q,
// to the gateway of home over transport ("http": a gateway child serving
// HTTP; "stdio": one the client starts). It is closed at the end of the
// test.
func modernHost(t *testing.T, home, over string, q *questions) *client.Client {
	t.Helper()
	opts := []client.ClientOption{client.WithProtocolVersion(mcpgo.ProtocolVersion20260728), client.WithElicitationHandler(q)}
	var c *client.Client
	var err error
	switch over {
	case "http":
		g := startHTTPGateway(t, home)
		token, terr := LoadToken(home)
		require.NoError(t, terr)
		c, err = client.NewStreamableHttpClient(g.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		require.NoError(t, err)
		for _, o := range opts {
			o(c)
		}
		require.NoError(t, c.Start(t.Context()))
	default:
		c, err = client.NewStdioMCPClientWithOptions(os.Args[0], append(os.Environ(), childEnv+"=1", childHome+"="+home), nil)
		require.NoError(t, err)
		for _, o := range opts {
			o(c)
		}
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(t.Context(), mcpgo.InitializeRequest{})
	require.NoError(t, err)
	return c
}

// TestModernHostIsAskedThroughInputRequired: a host on 2026-07-28 cannot
// be sent elicitation/create; the gateway answers its call with
// input_required instead — the approval its permission rules ask for,
// then an upstream server's form — and the host's retries with the
// answers finish the call, over HTTP and over stdio.
func TestModernHostIsAskedThroughInputRequired(t *testing.T) {
	for _, over := range []string{"http", "stdio"} {
		t.Run(over, func(t *testing.T) {
			home := permissionConfig(t)
			q := &questions{}
			c := modernHost(t, home, over, q)

			res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "t__echo", Arguments: map[string]any{"text": "approved"}}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			assert.Equal(t, "approved", res.Content[0].(mcpgo.TextContent).Text)

			res, err = c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "t__ask", Arguments: map[string]any{"message": "Who are you?"}}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			assert.Contains(t, res.Content[0].(mcpgo.TextContent).Text, `"name":"Ann"`)

			seen := q.messages()
			require.Len(t, seen, 2, "%q", seen)
			assert.Contains(t, seen[0], `wants to run echo`)
			assert.Equal(t, "t asks: Who are you?", seen[1])
		})
	}
}
