package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// shutdownGrace bounds a graceful HTTP shutdown; then connections are closed.
const shutdownGrace = 2 * time.Second

// URL is the endpoint a client connects to for a server listening on addr in
// mode: http://HOST:PORT/mcp (streamable) or http://HOST:PORT/sse (sse).
func URL(addr net.Addr, mode string) string { return urlUnder(addr, mode, "") }

// urlUnder is URL with the endpoints under basePath (Config.BasePath).
func urlUnder(addr net.Addr, mode, basePath string) string {
	if mode == ModeSSE {
		return "http://" + addr.String() + basePath + "/sse"
	}
	return "http://" + addr.String() + basePath + "/mcp"
}

// StreamableHandler is the stateful streamable HTTP endpoint ServeHTTP
// serves, as a handler for a test to mount itself (behind an
// OAuth-protected resource, say), with what closes its sessions.
func (s *Server) StreamableHandler() (http.Handler, func(context.Context)) {
	h := server.NewStreamableHTTPServer(s.mcp, server.WithStateful(true))
	return s.interceptHTTP(h), h.CloseSessions
}

// ServeHTTP serves MCP on ln until ctx ends, in mode ModeStreamable
// (stateful streamable HTTP at /mcp; notifications such as list_changed go
// out on the standalone GET stream) or ModeSSE (legacy SSE at /sse and
// /message), each under Config.BasePath. It closes ln and returns nil after
// ctx ends, or the serve error.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, mode string) error {
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	var closeSessions func(context.Context)
	switch mode {
	case ModeStreamable, "":
		h := server.NewStreamableHTTPServer(s.mcp,
			server.WithEndpointPath(s.cfg.BasePath+"/mcp"),
			server.WithStateful(true),
		)
		mux := http.NewServeMux()
		mux.Handle(s.cfg.BasePath+"/mcp", s.interceptHTTP(h))
		hs.Handler = mux
		closeSessions = h.CloseSessions
	case ModeSSE:
		h := server.NewSSEServer(s.mcp, server.WithBaseURL("http://"+ln.Addr().String()), server.WithStaticBasePath(s.cfg.BasePath))
		hs.Handler = s.interceptSSE(h)
		closeSessions = func(context.Context) { h.CloseSessions() }
	default:
		return fmt.Errorf("http mode %q: want %q or %q", mode, ModeStreamable, ModeSSE)
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	closeSessions(sctx)
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}
