package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"syscall"
)

// ErrUnreachable is wrapped, beside ErrTransport, by the errors that say a
// remote server could not be reached at all: no connection (refused,
// reset, timed out, no route, unknown host), a connection closed before
// any answer, or a gateway in front of it answering 502, 503 or 504; and
// by the loss of an established remote session's connection. An error of
// the server's own (any other HTTP status, a JSON-RPC error, a limit) does
// not wrap it. The *UnreachableError in the chain says why, briefly.
var ErrUnreachable = errors.New("MCP server unreachable")

// UnreachableError is the cause, in an error's chain, that makes it match
// ErrUnreachable.
type UnreachableError struct {
	// Reason is short and names no URL: "connection refused", "the
	// connection was closed", "HTTP 503 Service Unavailable".
	Reason string
}

func (e *UnreachableError) Error() string { return "unreachable: " + e.Reason }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// unreachableCause returns the *UnreachableError for err, a failure of an
// HTTP request to a remote server, if it is one of not reaching it; else
// nil.
func unreachableCause(err error) error {
	if reason := unreachableReason(err); reason != "" {
		return &UnreachableError{Reason: reason}
	}
	return nil
}

func unreachableReason(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case err == nil, isAuthFlow(err):
		// An authorization server that cannot be reached says nothing of
		// the MCP server's endpoint (and probing that would not see it).
		return ""
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host not found"
		}
		return "host name lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.ETIMEDOUT):
		return "connection timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), closedBeforeAnswer(err):
		return "the connection was closed"
	case errors.As(err, &opErr):
		if opErr.Timeout() {
			return "connection timed out"
		}
		if opErr.Err != nil {
			return opErr.Err.Error()
		}
		return "network error"
	}
	return ""
}

// closedBeforeAnswer reports whether err is net/http's errServerClosedIdle
// (unexported, so known by its text): the server closed a new connection
// before it sent a byte, which net/http tells apart from an EOF.
func closedBeforeAnswer(err error) bool {
	if err == nil {
		return false
	}
	if err.Error() == "http: server closed idle connection" {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return closedBeforeAnswer(u.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(u.Unwrap(), closedBeforeAnswer)
	}
	return false
}

// gatewayUnavailable reports whether an HTTP status is a gateway's or
// proxy's answer that the server behind it is not there (RFC 9110 §15.6):
// the endpoint is as unreachable as if it refused the connection.
func gatewayUnavailable(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// Probe asks whether a remote server's endpoint answers at all, without
// opening a session: it sends one OPTIONS request to srv.URL, with none of
// srv.Headers and no authorization, over a new connection of a transport
// set up as a session's (Options.TLSClientConfig, the proxy from the
// environment), and follows no redirect. OPTIONS is safe (RFC 9110 §9.3.7):
// no server starts a session, an SSE stream or an authorization for it,
// whereas a GET opens an SSE stream and frameworks route HEAD to GET
// handlers. Any HTTP answer but a gateway's 502, 503 or 504 — 405, 401 and
// redirects included — means the endpoint answers: nil. Otherwise the
// error wraps ErrTransport and ErrUnreachable (an *UnreachableError says
// why) and shows the URL as written. ctx bounds it.
func Probe(ctx context.Context, srv Spec, opts Options) error {
	if srv.Type != Remote {
		return fmt.Errorf("server %q: only a remote server can be probed", srv.Name)
	}
	mask := newURLMask(srv)
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server %q: url %q is not an http(s) URL", srv.Name, mask.configured())
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if opts.TLSClientConfig != nil {
		base.TLSClientConfig = opts.TLSClientConfig.Clone()
	}
	// A probe proves the server accepts connections again; nothing of it
	// is kept for later.
	base.DisableKeepAlives = true
	defer base.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, u.String(), nil)
	if err != nil {
		return fmt.Errorf("server %q: probe: %w", srv.Name, err)
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		reason := unreachableReason(err)
		switch {
		case reason != "":
		case ctx.Err() != nil:
			reason = "no answer in time"
		default:
			reason = mask.err(err)
		}
		return newError(fmt.Sprintf("server %q: cannot reach %s: %s", srv.Name, mask.configured(), reason),
			ErrTransport, &UnreachableError{Reason: reason}, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBodyBytes))
	_ = resp.Body.Close()
	if gatewayUnavailable(resp.StatusCode) {
		cause := &UnreachableError{Reason: "HTTP " + resp.Status}
		return newError(fmt.Sprintf("server %q: %s answers HTTP %s", srv.Name, mask.configured(), resp.Status), ErrTransport, cause)
	}
	return nil
}
