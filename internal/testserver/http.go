package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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
		mux.Handle(s.cfg.BasePath+"/mcp", s.rejectDiscover(h))
		hs.Handler = mux
		closeSessions = h.CloseSessions
	case ModeSSE:
		h := server.NewSSEServer(s.mcp, server.WithBaseURL("http://"+ln.Addr().String()), server.WithStaticBasePath(s.cfg.BasePath))
		hs.Handler = h
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

// rejectDiscover answers server/discover with method-not-found unless
// --modern, like servers of the 2025 protocol revisions.
func (s *Server) rejectDiscover(next http.Handler) http.Handler {
	if s.cfg.Modern {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var base struct {
			Method string `json:"method"`
			ID     any    `json:"id"`
		}
		if json.Unmarshal(body, &base) == nil && base.Method == string(mcp.MethodServerDiscover) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(mcp.NewJSONRPCError(mcp.NewRequestId(base.ID), mcp.METHOD_NOT_FOUND, "Method server/discover not found", nil))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
