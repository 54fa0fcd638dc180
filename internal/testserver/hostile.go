package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Hostile behaviours (see the package documentation).
const (
	// FloodStart and FloodCall are the values of --stdout-flood-no-newline:
	// flood stdout at start, before reading anything, or in answer to the
	// first tools/call.
	FloodStart = "start"
	FloodCall  = "call"

	// AttackErrorBody answers POST initialize with HTTP 500 and a flood of a
	// body. AttackSSELine floods an SSE stream with one line: the standalone
	// GET stream once a tools/call was answered (streamable HTTP), or the
	// /sse stream at once (--sse).
	AttackErrorBody = "error-body"
	AttackSSELine   = "sse-line"
)

// floodChunk is what a flood writes at a time.
var floodChunk = bytes.Repeat([]byte{'x'}, 64<<10)

// defaultEndlessPageSize is the page size of --endless-pages without
// --page-size.
const defaultEndlessPageSize = 10

// hostile is the state of the hostile behaviours of one Server.
type hostile struct {
	calledOnce sync.Once
	called     chan struct{} // closed by the first tools/call
}

func newHostile() *hostile { return &hostile{called: make(chan struct{})} }

func (h *hostile) sawCall() { h.calledOnce.Do(func() { close(h.called) }) }

// flood writes prefix and then 'x' bytes without a newline to w:
// --flood-bytes of them, or until a write fails or ctx ends when that is 0.
// flush, if not nil, runs after each write.
func (s *Server) flood(ctx context.Context, w io.Writer, prefix string, flush func()) error {
	if _, err := io.WriteString(w, prefix); err != nil {
		return fmt.Errorf("flood: %w", err)
	}
	left := s.cfg.FloodBytes
	for s.cfg.FloodBytes == 0 || left > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := floodChunk
		if s.cfg.FloodBytes > 0 && left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		if _, err := w.Write(chunk); err != nil {
			return fmt.Errorf("flood: %w", err)
		}
		if flush != nil {
			flush()
		}
		left -= int64(len(chunk))
	}
	return nil
}

// endlessPage answers tools/list for --endless-pages: a page of fresh tools
// and a cursor that was never sent before, however far the client follows.
func (s *Server) endlessPage(id json.RawMessage, params json.RawMessage) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(params, &p)
	page, _ := strconv.Atoi(strings.TrimPrefix(p.Cursor, "page-"))
	size := s.cfg.PageSize
	if size <= 0 {
		size = defaultEndlessPageSize
	}
	tools := make([]map[string]any, size)
	for i := range tools {
		tools[i] = map[string]any{
			"name":        fmt.Sprintf("page%d_tool%d", page, i),
			"description": "One of endlessly many tools.",
			"inputSchema": map[string]any{"type": "object"},
		}
	}
	return json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"result":  map[string]any{"tools": tools, "nextCursor": fmt.Sprintf("page-%d", page+1)},
	})
}

// interceptHTTP serves what the hostile flags and the protocol probe
// change on a streamable HTTP endpoint and hands the rest to next: the
// server/discover probe (legacyDiscover unless --modern), tools/list with
// --endless-pages, initialize with --http-attack error-body, and the
// standalone GET stream with --http-attack sse-line.
func (s *Server) interceptHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && s.cfg.HTTPAttack == AttackSSELine {
			s.floodStream(w, r, s.hostile.called)
			return
		}
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
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(body, &base)
		if len(base.ID) > 0 && base.Method != "" {
			s.logRequest(base.Method)
		}
		switch {
		case base.Method == string(mcp.MethodInitialize) && s.cfg.ModernOnly:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(mcp.NewJSONRPCError(mcp.NewRequestId(decodeID(base.ID)), mcp.METHOD_NOT_FOUND, "Method initialize not found", nil))
			return
		case base.Method == string(mcp.MethodServerDiscover) && !s.cfg.Modern:
			resp := s.legacyDiscover(base.ID)
			if resp == nil {
				<-r.Context().Done() // --discover silent
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(resp)
			return
		case base.Method == string(mcp.MethodInitialize) && s.cfg.HTTPAttack == AttackErrorBody:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			_ = s.flood(r.Context(), w, "internal error: ", nil)
			return
		case base.Method == string(mcp.MethodToolsList) && s.cfg.EndlessPages,
			base.Method == string(mcp.MethodResourcesList) && s.cfg.EndlessResourcePages:
			page := s.endlessPage
			if base.Method == string(mcp.MethodResourcesList) {
				page = s.endlessResourcePage
			}
			b, err := page(base.ID, base.Params)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// floodStream answers an SSE GET with an open stream that, once start is
// closed, carries one data line of --flood-bytes (or endless) 'x's.
func (s *Server) floodStream(w http.ResponseWriter, r *http.Request, start <-chan struct{}) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	select {
	case <-start:
	case <-r.Context().Done():
		return
	}
	_ = s.flood(r.Context(), w, "data: ", func() { _ = rc.Flush() })
}

// interceptSSE is interceptHTTP for the legacy SSE transport: with
// --http-attack sse-line the /sse stream is one endless line.
func (s *Server) interceptSSE(next http.Handler) http.Handler {
	if s.cfg.HTTPAttack != AttackSSELine {
		return next
	}
	now := make(chan struct{})
	close(now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.floodStream(w, r, now)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// logRequest appends method to --request-log, if set.
func (s *Server) logRequest(method string) {
	if s.cfg.RequestLog == "" {
		return
	}
	if err := appendLine(s.cfg.RequestLog, method); err != nil {
		fmt.Fprintln(s.cfg.Stderr, err)
	}
}

// decodeID is a request's raw id as a value for mcp.NewRequestId.
func decodeID(raw json.RawMessage) any {
	var id any
	_ = json.Unmarshal(raw, &id)
	return id
}

// legacyDiscover is how a server that is not --modern answers the
// server/discover request id: method-not-found, or as --discover says (an
// empty result; nil for no answer; an exit). The answer is one encoded
// message.
func (s *Server) legacyDiscover(rawID json.RawMessage) []byte {
	var id any
	_ = json.Unmarshal(rawID, &id)
	var msg any
	switch s.cfg.Discover {
	case DiscoverSilent:
		return nil
	case DiscoverExit:
		fmt.Fprintln(s.cfg.Stderr, "exiting on server/discover")
		s.cfg.Exit(1)
		return nil
	case DiscoverEmpty:
		msg = map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "result": map[string]any{}}
	default:
		msg = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.METHOD_NOT_FOUND, "Method server/discover not found", nil)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil
	}
	return b
}
