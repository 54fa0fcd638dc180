package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/freecode/freecode/wire"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The gateway's completion/complete: a host's request for the values of
// an argument of a listed prompt or resource template goes to
// GatewayOptions.Complete, under the names the host sees.

// errGatewayNoCompletions is the error of a completion/complete the
// gateway gets while it declares no completions.
var errGatewayNoCompletions = errors.New("no server behind the gateway offers completions")

// SetCompletions says whether some server behind the gateway completes
// arguments, and reports whether that changed. The gateway declares the
// completions capability in the initialize (and server/discover) results
// it sends from then on; a host that initialized before learns of the
// change when it initializes again (the protocol has no notification of
// capabilities). Without GatewayOptions.Complete it declares none,
// whatever SetCompletions says.
func (g *Gateway) SetCompletions(on bool) (changed bool) {
	return g.completions.Swap(on) != on
}

// completionOptions are the mcp-go options that route completion/complete
// to GatewayOptions.Complete: mcp-go answers "method not found" without
// them, and its capability is fixed when the server is made, so it is
// always there and declareCompletions takes it out of the results.
func (g *Gateway) completionOptions() []server.ServerOption {
	if g.opts.Complete == nil {
		return nil
	}
	c := gatewayCompleter{g: g}
	return []server.ServerOption{server.WithCompletions(), server.WithPromptCompletionProvider(c), server.WithResourceCompletionProvider(c)}
}

// declareCompletions leaves the completions capability in caps only while
// the gateway offers them (SetCompletions).
func (g *Gateway) declareCompletions(caps *mcpgo.ServerCapabilities) {
	if g.opts.Complete == nil || !g.completions.Load() {
		caps.Completions = nil
	}
}

// gatewayCompleter is mcp-go's completion provider of the gateway.
type gatewayCompleter struct{ g *Gateway }

// CompletePromptArgument completes an argument of the listed prompt name.
func (c gatewayCompleter) CompletePromptArgument(ctx context.Context, name string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	return c.complete(ctx, wire.CompletionRef{Type: wire.RefPrompt, Name: name}, arg, cc)
}

// CompleteResourceArgument completes an argument of the listed resource
// template uri.
func (c gatewayCompleter) CompleteResourceArgument(ctx context.Context, uri string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	return c.complete(ctx, wire.CompletionRef{Type: wire.RefResource, URI: uri}, arg, cc)
}

// complete asks GatewayOptions.Complete; the answer is already bounded
// (the upstream session kept at most MaxCompletionValues values). mcp-go
// models no _meta of the result: the server's is not passed on.
func (c gatewayCompleter) complete(ctx context.Context, ref wire.CompletionRef, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	if !c.g.completions.Load() {
		return nil, fmt.Errorf("completion/complete: %w", errGatewayNoCompletions)
	}
	res, err := c.g.opts.Complete(ctx, ref, wire.CompletionArgument{Name: arg.Name, Value: arg.Value}, cc.Arguments)
	if err != nil {
		return nil, err
	}
	return &mcpgo.Completion{Values: res.Values, Total: res.Total, HasMore: res.HasMore}, nil
}
