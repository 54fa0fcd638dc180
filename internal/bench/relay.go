package bench

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/freecode/freecode/mcp"
)

// RelayArg, as the first argument of the bench binary, makes it Relay.
const RelayArg = "relay"

// Relay is the floor of any gateway: an mcp-go stdio server whose one tool,
// echo, is a plain mcp-go client's call of the test server's echo — one
// more process hop and nothing else (no rules, no validation, no
// registry). It serves stdin and stdout until stdin ends.
func Relay(ctx context.Context, testServer string) error {
	c, err := client.NewStdioMCPClient(testServer, nil)
	if err != nil {
		return fmt.Errorf("relay: start %s: %w", testServer, err)
	}
	defer c.Close()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "relay", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("relay: initialize: %w", err)
	}
	s := server.NewMCPServer("relay", "0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewToolWithRawSchema("echo", "Relays echo.", []byte(`{"type":"object"}`)),
		func(ctx context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			fwd := mcpgo.CallToolRequest{}
			fwd.Params.Name, fwd.Params.Arguments = "echo", r.Params.Arguments
			return c.CallTool(ctx, fwd)
		})
	return server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
}
