package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

// Bounds of the HTTP endpoint on what hosts send; Options may change the
// Default ones.
const (
	// HTTPHeaderTimeout bounds reading a request's headers.
	HTTPHeaderTimeout = 10 * time.Second
	// DefaultHTTPReadTimeout bounds reading a request's body, once its
	// headers are in. The largest body (mcp.limits.maxMessageBytes, 16 MiB
	// by default) takes milliseconds on loopback and seconds over a slow
	// link: a host still sending after this is stalled or hostile, and
	// gets 408. Answers are not bounded: a GET stream, or a call's
	// stream, stays open.
	DefaultHTTPReadTimeout = 30 * time.Second
	// DefaultHTTPIdleTimeout closes a kept-alive connection that sends no
	// next request.
	DefaultHTTPIdleTimeout = 2 * time.Minute
	// DefaultHTTPMaxConns bounds the connections open at once; more wait
	// to be accepted until one closes. A host holds a few (its GET stream,
	// a call or two).
	DefaultHTTPMaxConns = 256
)

// httpLimits are the HTTP endpoint's bounds in force.
type httpLimits struct {
	body        int64
	read, idle  time.Duration
	conns       int
	maxBodyConf int64 // the highest body limit a config may set
}

func (g *gateway) httpLimits() httpLimits {
	l := httpLimits{body: g.opts.MaxMessageBytes, read: g.opts.HTTPReadTimeout, idle: g.opts.HTTPIdleTimeout,
		conns: g.opts.HTTPMaxConns, maxBodyConf: schema.MaxMaxMessageBytes}
	if l.body <= 0 {
		l.body = mcp.DefaultGatewayMaxMessageBytes
	}
	if l.read <= 0 {
		l.read = DefaultHTTPReadTimeout
	}
	if l.idle <= 0 {
		l.idle = DefaultHTTPIdleTimeout
	}
	if l.conns <= 0 {
		l.conns = DefaultHTTPMaxConns
	}
	return l
}

// boundBody reads a request's body, at most l.body bytes within l.read,
// before next sees it (mcp-go would read any body whole, at any pace): a
// larger one is answered 413, one that does not arrive in time 408, each
// with a JSON-RPC error, and the connection is closed. Requests without a
// body (a GET stream, a DELETE) pass as they are.
func boundBody(l httpLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > l.body {
			w.Header().Set("Connection", "close")
			rpcError(w, http.StatusRequestEntityTooLarge, tooLarge(l))
			return
		}
		rc := http.NewResponseController(w)
		// Set before the first read of the body; the server set none
		// after the headers.
		_ = rc.SetReadDeadline(time.Now().Add(l.read))
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, l.body))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			rpcError(w, http.StatusRequestEntityTooLarge, tooLarge(l))
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			rpcError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s (or could not be read): %v", l.read, err))
			return
		}
		// The answer may stream for as long as it takes: the host's
		// next request on this connection gets its own deadlines.
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		r.ContentLength = int64(buf.Len())
		next.ServeHTTP(w, r)
	})
}

// tooLarge is the message of a 413.
func tooLarge(l httpLimits) string {
	return fmt.Sprintf("the request body is larger than %d bytes (limit mcp.limits.maxMessageBytes of freecode mcp serve); "+
		"if the host's messages are legitimately that large, raise it in the config file with \"mcp\": {\"limits\": {\"maxMessageBytes\": %d}}",
		l.body, min(2*l.body, l.maxBodyConf))
}

// rpcError answers with a JSON-RPC error of no request (its id unknown).
func rpcError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
