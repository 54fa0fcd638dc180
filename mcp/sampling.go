package mcp

import (
	"context"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Sampling (a server asking the client's model for a completion,
// sampling/createMessage) is not supported: a session declares no
// sampling capability, and a server that asks all the same is answered
// at once with errSamplingMessage (code METHOD_NOT_FOUND), rather than
// mcp-go's internal error "no sampling handler configured". The 2026-07-28
// revision deprecates sampling.
const errSamplingMessage = "sampling is not supported: FreeCode declares no sampling capability and offers no model to servers"

// refuseSampling returns h answering sampling/createMessage with the
// error above and passing every other request on.
func refuseSampling(h transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if req.Method == string(mcpgo.MethodSamplingCreateMessage) {
			return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.METHOD_NOT_FOUND, errSamplingMessage, nil), nil
		}
		return h(ctx, req)
	}
}

// The transports that carry server requests, with refuseSampling in
// front of the handler mcp-go's client sets. They embed the transport
// itself, so every other method (and interface, such as
// transport.HTTPConnection) stays the transport's.
type (
	stdioTransport struct{ *transport.Stdio }
	httpTransport  struct{ *transport.StreamableHTTP }
)

func (t stdioTransport) SetRequestHandler(h transport.RequestHandler) {
	t.Stdio.SetRequestHandler(refuseSampling(h))
}

func (t httpTransport) SetRequestHandler(h transport.RequestHandler) {
	t.StreamableHTTP.SetRequestHandler(refuseSampling(h))
}

// newStdioClient and newHTTPClient are mcp-go clients over tr whose
// server requests go through refuseSampling. (The HTTP+SSE transport
// carries no server requests.)
func newStdioClient(tr *transport.Stdio) *client.Client {
	return client.NewClient(stdioTransport{tr})
}

func newHTTPClient(tr *transport.StreamableHTTP) *client.Client {
	return client.NewClient(httpTransport{tr})
}
