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
//     the server's URL.
//
// The same rules hold for the addresses a host name resolves to (an IPv6
// address that carries an IPv4 one, ::ffff:a.b.c.d, ::a.b.c.d or NAT64's
// 64:ff9b::a.b.c.d, counts as that IPv4 address): the dial refuses a
// connection to such an address ([guardDial]), and where no dial of
// FreeCode's sees the endpoint's address (a proxy resolves the name, or
// the transport is the caller's own) the name is resolved and checked
// before the request goes out ([guardedTransport]).

// Dial settings of the transport FreeCode makes when it is given none
// (those of http.DefaultTransport).
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// embeddedIPv4 is the IPv4 address an IPv6 address carries: an
// IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) or NAT64
// (64:ff9b::a.b.c.d, RFC 6052) address; a itself otherwise.
func embeddedIPv4(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if !a.Is6() {
		return a
	}
	b := a.As16()
	head := [12]byte(b[:12])
	if head == ([12]byte{}) || head == ([12]byte{0x00, 0x64, 0xff, 0x9b}) {
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// forbiddenAddr reports whether a is never to be contacted: link-local,
// unspecified, multicast, or a cloud instance metadata service outside
// the link-local ranges; also as the IPv4 address it carries.
func forbiddenAddr(a netip.Addr) bool {
	a = a.Unmap()
	return forbidden(a) || forbidden(embeddedIPv4(a))
}

func forbidden(a netip.Addr) bool {
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

// loopbackAddr reports whether a is a loopback address (127.0.0.0/8,
// ::1), also as the IPv4 address it carries.
func loopbackAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || embeddedIPv4(a).IsLoopback()
}

// addrRefused is why the endpoint policy refuses a connection to a, an
// address an endpoint's host resolved to, for a server that is
// (loopbackServer) or is not on a loopback host; plainHTTP: the endpoint
// is http. It is "" for an address the policy admits.
func addrRefused(a netip.Addr, loopbackServer, plainHTTP bool) string {
	loopback := loopbackAddr(a)
	switch {
	case forbiddenAddr(a):
		return "a link-local or metadata address"
	case loopback && !loopbackServer:
		return "on this machine (loopback) and the server is not"
	case plainHTTP && !loopback:
		return "not a loopback address, and the endpoint is not https"
	}
	return ""
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
	return ok && loopbackAddr(a)
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

// dialFor, in the context of a request's dial, says what the connection
// is for. The Transport dials with the context of the request that wants
// the connection, and reuses a connection only for requests with the same
// scheme, target and proxy.
type dialFor struct {
	plainHTTP bool   // the request is http
	proxy     string // host:port of the proxy the request goes through; "" for none
}

type dialForKey struct{}

// guardDial wraps a transport's dial so that a connection the endpoint
// policy refuses ([addrRefused]: link-local or metadata; loopback for a
// server not on loopback; other than loopback for http) is closed before
// a byte is sent on it, whatever host name resolved to it. The dial to a
// proxy (the user's, from the environment or the transport) refuses only
// link-local and metadata addresses: a proxy on this machine is fine, and
// the endpoint behind it is checked before the request ([guardedTransport]).
func guardDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), loopbackServer bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		ta, ok := conn.RemoteAddr().(*net.TCPAddr)
		if !ok {
			return conn, nil
		}
		a, ok := netip.AddrFromSlice(ta.IP)
		if !ok {
			return conn, nil
		}
		a = a.Unmap()
		dest, _ := ctx.Value(dialForKey{}).(dialFor)
		var why string
		if dest.proxy != "" && addr == dest.proxy {
			if forbiddenAddr(a) {
				why = "a link-local or metadata address"
			}
		} else {
			why = addrRefused(a, loopbackServer, dest.plainHTTP)
		}
		if why != "" {
			_ = conn.Close()
			return nil, fmt.Errorf("%w: %s resolves to %s, %s", ErrEndpointRefused, addr, a, why)
		}
		return conn, nil
	}
}

// guardedTransport applies the endpoint policy to the addresses of each
// request's host where no dial of FreeCode's sees them: when a proxy
// makes the connection (it resolves the name), or when the transport is
// not an *http.Transport FreeCode cloned with a guarded dial (the
// caller's own RoundTripper, or one that dials TLS itself). It resolves
// the host with the request's context and refuses the request, before
// anything is sent, if any address is refused ([addrRefused]).
type guardedTransport struct {
	base http.RoundTripper
	// own is base when it is the clone whose every dial is guarded
	// ([guardDial]); nil otherwise.
	own            *http.Transport
	loopbackServer bool
}

func (g *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	plain := strings.EqualFold(req.URL.Scheme, "http")
	resolve := g.own == nil
	var proxy string
	if g.own != nil && g.own.Proxy != nil {
		pu, err := g.own.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("proxy for %s: %w", redactURL(req.URL), err)
		}
		if pu != nil {
			resolve = true
			proxy = proxyAddr(pu)
		}
	}
	if resolve {
		if err := checkResolved(req.Context(), req.URL.Hostname(), g.loopbackServer, plain); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	ctx := context.WithValue(req.Context(), dialForKey{}, dialFor{plainHTTP: plain, proxy: proxy})
	return g.base.RoundTrip(req.WithContext(ctx))
}

// checkResolved resolves host and applies the endpoint policy to each of
// its addresses. Its error wraps ErrEndpointRefused for a refused address;
// one that cannot be resolved is not sent either.
func checkResolved(ctx context.Context, host string, loopbackServer, plainHTTP bool) error {
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("resolve %s to check where it points: %w", host, err)
	}
	for _, ia := range addrs {
		a, ok := netip.AddrFromSlice(ia.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if why := addrRefused(a, loopbackServer, plainHTTP); why != "" {
			return fmt.Errorf("%w: %s resolves to %s, %s", ErrEndpointRefused, host, a, why)
		}
	}
	return nil
}

// proxyAddr is the host:port the Transport dials for proxy u.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
