package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// The endpoint policy: which URLs the authorization of one server may
// send requests to. Every URL comes from the server or its authorization
// server (a challenge's resource_metadata, protected resource metadata,
// authorization server metadata, a redirect), so none is trusted for
// where it points:
//
//   - https, or http to a loopback host only when the MCP server itself is
//     on a loopback host (local development, tests);
//   - a loopback host (127.0.0.0/8, ::1, localhost) only when the MCP
//     server is on one;
//   - never a link-local address (169.254.0.0/16, fe80::/10), the
//     unspecified address or a cloud metadata address or name, whatever
//     the server's URL; the dialer refuses those addresses too, when a
//     host name resolves to one.

// Dial settings of the transport FreeCode makes when it is given none
// (those of http.DefaultTransport).
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// forbiddenAddr reports whether a is never to be contacted: link-local,
// unspecified, multicast, or a cloud instance metadata service outside
// the link-local ranges.
func forbiddenAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() {
		return true
	}
	switch a {
	case netip.AddrFrom4([4]byte{100, 100, 100, 200}), // Alibaba Cloud
		netip.AddrFrom4([4]byte{168, 63, 129, 16}), // Azure WireServer
		netip.MustParseAddr("fd00:ec2::254"):       // AWS IMDS over IPv6
		return true
	}
	return false
}

// metadataHost reports whether host names a cloud instance metadata
// service.
func metadataHost(host string) bool {
	switch strings.ToLower(strings.TrimSuffix(host, ".")) {
	case "metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal":
		return true
	}
	return false
}

// hostAddr parses a URL host name that is an IP address literal.
func hostAddr(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// isLoopback reports whether host (a URL's Hostname) is a loopback
// address or the name localhost (RFC 6761: "localhost" and its subdomains
// resolve to loopback).
func isLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, ok := hostAddr(host)
	return ok && a.IsLoopback()
}

// checkEndpoint applies the endpoint policy to u for a server that is
// (loopbackServer) or is not on a loopback host. Its error wraps
// ErrEndpointRefused.
func checkEndpoint(u *url.URL, loopbackServer bool) error {
	if u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrEndpointRefused, redactURL(u))
	}
	host := u.Hostname()
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return fmt.Errorf("%w: %s: scheme %q is not https", ErrEndpointRefused, redactURL(u), u.Scheme)
	}
	if metadataHost(host) {
		return fmt.Errorf("%w: %s is a cloud metadata service", ErrEndpointRefused, redactURL(u))
	}
	if a, ok := hostAddr(host); ok && forbiddenAddr(a) {
		return fmt.Errorf("%w: %s is a link-local, metadata or unspecified address", ErrEndpointRefused, redactURL(u))
	}
	loopback := isLoopback(host)
	switch {
	case loopback && !loopbackServer:
		return fmt.Errorf("%w: %s is on this machine (loopback) and the server is not", ErrEndpointRefused, redactURL(u))
	case scheme == "http" && !loopback:
		return fmt.Errorf("%w: %s is not https", ErrEndpointRefused, redactURL(u))
	}
	return nil
}

// checkEndpointURL is checkEndpoint for a URL string.
func (c *Client) checkEndpointURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrEndpointRefused, redactRawURL(raw))
	}
	return checkEndpoint(u, c.loopbackServer())
}

// loopbackServer reports whether the MCP server is on a loopback host.
func (c *Client) loopbackServer() bool { return isLoopback(c.resourceURL.Hostname()) }

// maxRedirects is how many redirects one metadata request follows.
const maxRedirects = 10

// checkRedirect is the redirect policy of every request to an
// authorization server or metadata endpoint. A request with a body (the
// token, registration and revocation endpoints' POSTs) is never
// redirected: a 307 or 308 would send the code, the PKCE verifier or the
// client secret on to wherever the server pointed. A GET (metadata)
// follows a redirect within its origin that the endpoint policy admits;
// any other redirect is not followed, and the 3xx answer is what the
// request gets (for metadata: "not here", as a 4xx). The probe of the MCP
// server follows redirects within its origin only.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	return redirectPolicy(req, via, c.loopbackServer())
}

func redirectPolicy(req *http.Request, via []*http.Request, loopbackServer bool) error {
	first := via[0]
	if first.Method != http.MethodGet && first.Method != http.MethodHead && !isProbe(first.Context()) {
		return &RedirectError{Method: first.Method, From: redactURL(first.URL), To: redactURL(req.URL), WithBody: true}
	}
	if len(via) >= maxRedirects {
		return &RedirectError{Method: first.Method, From: redactURL(first.URL), To: redactURL(req.URL), TooMany: true}
	}
	if !sameOrigin(req.URL, first.URL) || checkEndpoint(req.URL, loopbackServer) != nil {
		if isProbe(first.Context()) {
			return &RedirectError{Method: first.Method, From: redactURL(first.URL), To: redactURL(req.URL)}
		}
		return http.ErrUseLastResponse
	}
	return nil
}

// RedirectError reports a redirect the authorization's HTTP client did
// not follow. It wraps ErrRedirectRefused.
type RedirectError struct {
	Method   string
	From, To string // without userinfo, query and fragment
	// WithBody: a token, registration or revocation request, whose
	// redirects are never followed.
	WithBody bool
	TooMany  bool
}

func (e *RedirectError) Error() string {
	if e.TooMany {
		return fmt.Sprintf("%s %s: stopped after %d redirects (at %s)", e.Method, e.From, maxRedirects, e.To)
	}
	if e.WithBody {
		return fmt.Sprintf("%s %s was redirected to %s; FreeCode does not follow redirects of POST requests to an authorization server (they would carry the request's code, verifier or secret on)",
			e.Method, e.From, e.To)
	}
	return fmt.Sprintf("%s %s was redirected to %s, another origin or an address FreeCode does not contact", e.Method, e.From, e.To)
}

func (e *RedirectError) Unwrap() error { return ErrRedirectRefused }

type probeKey struct{}

// withProbe marks the request context of the unauthenticated probe of the
// MCP server, whose redirects within its origin are followed.
func withProbe(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

func isProbe(ctx context.Context) bool { v, _ := ctx.Value(probeKey{}).(bool); return v }

// guardDial wraps a transport's dial so that a connection to a forbidden
// address ([forbiddenAddr]: link-local, metadata) is closed before a byte
// is sent on it, whatever host name resolved to it.
func guardDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if ta, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(ta.IP); ok && forbiddenAddr(a) {
				_ = conn.Close()
				return nil, fmt.Errorf("%w: %s resolves to %s, a link-local or metadata address", ErrEndpointRefused, addr, a.Unmap())
			}
		}
		return conn, nil
	}
}
