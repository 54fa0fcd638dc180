package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/freecode/freecode/mcp/auth"
)

// remoteLink is a remote server: an endpoint reached over streamable HTTP
// or the older HTTP+SSE transport. Every request goes through one
// http.Client: its redirect policy keeps the configured headers on their
// origin, and its RoundTripper is a statusRecorder, which records error
// statuses, bounds bodies and notices the connection's loss, over the
// session's own clone of http.DefaultTransport. When the session signs in
// (signsIn), an OAuth client's Transport wraps the recorder, so that the
// requests it sends again after a 401 are recorded and bounded like any
// other, and an authGate wraps that: the OAuth layer's errors never reach
// the recorder, which would take them for a lost connection; the gate
// ends the session with ErrNeedsLogin instead when the sign-in is gone.
type remoteLink struct {
	env linkEnv

	// Set by open before any request; read-only afterwards.
	rec  *statusRecorder
	base *http.Transport // its idle connections are closed by stop
	auth *auth.Client    // nil when the session does not sign in
}

func (r *remoteLink) open(cctx context.Context, o opener) error {
	srv := r.env.srv
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server %q: url %q is not an http(s) URL", srv.Name, r.env.mask.configured())
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if r.env.opts.TLSClientConfig != nil {
		base.TLSClientConfig = r.env.opts.TLSClientConfig.Clone()
	}
	r.base = base
	r.rec = &statusRecorder{base: base, server: srv.Name, lost: r.env.lostConn, mask: r.env.mask,
		maxMessage: srv.Limits.MaxMessageBytes, over: r.env.over}
	var outer http.RoundTripper = r.rec
	if signsIn(srv, r.env.opts) {
		// The authorization server's requests go over a clone of the
		// session's transport (stop closes its connections through
		// auth.Close), with the auth client's own redirect policy and
		// none of the MCP endpoint's recorder or limits.
		r.auth, err = newAuthClient(srv, r.env.opts, &http.Client{Transport: base, Timeout: auth.DefaultHTTPTimeout}, r.env.log, r.env.mask)
		if err != nil {
			return err
		}
		outer = &authGate{next: r.auth.Transport(r.rec), rec: r.rec, mask: r.env.mask}
	}
	// mcp-go's transports send every request (POST, the GET stream, the SSE
	// stream and its endpoint, DELETE) through this client, so the redirect
	// policy covers them all.
	httpClient := &http.Client{
		Transport:     outer,
		CheckRedirect: r.checkRedirect,
	}
	// mcp-go's transports log through slog; route that into our logger.
	slogger := slog.New(logr.ToSlogHandler(r.env.log.V(1)))

	switch srv.Transport {
	case TransportStreamableHTTP:
		err = r.openStreamable(cctx, o, httpClient, slogger)
	case TransportSSE:
		err = r.openSSE(cctx, o, httpClient, slogger)
	case TransportAuto, "":
		var c *client.Client
		var neg negotiation
		c, neg, err = r.negotiated(cctx, o, httpClient, slogger)
		if err == nil {
			err = o.handshake(cctx, c, neg)
		}
		// The MCP spec's backwards compatibility rule: a 4xx answer to
		// POST initialize means a server of the older HTTP+SSE transport.
		if errors.Is(err, transport.ErrLegacySSEServer) {
			status := ""
			if st := r.rec.lastStatus(); st != nil {
				status = st.status
			}
			r.env.log.V(1).Info("endpoint refused streamable HTTP; trying SSE", "status", status)
			if cerr := c.Close(); cerr != nil {
				r.env.log.V(1).Info("closing streamable HTTP transport", "err", r.env.mask.err(cerr))
			}
			r.rec.reset()
			err = r.openSSE(cctx, o, httpClient, slogger)
		}
	default:
		return fmt.Errorf("server %q: unknown transport %q", srv.Name, srv.Transport)
	}
	if err == nil {
		// Lost while connecting: a refused redirect of the GET stream,
		// which runs beside the handshake, or the SSE stream's end.
		if lost := o.lostWhileConnecting(); lost != nil {
			return lost
		}
		r.rec.established.Store(true)
	}
	return err
}

// explain names the HTTP error status the endpoint answered last, or the
// host that could not be reached; both wrap ErrUnreachable when that is
// what they mean (see unreachableCause, gatewayUnavailable).
func (r *remoteLink) explain(step string, err error) error {
	if r.rec == nil {
		return nil
	}
	name := r.env.srv.Name
	if st := r.rec.lastStatus(); st != nil {
		cut := ""
		if st.cut.Load() {
			cut = fmt.Sprintf(" (the rest of its body, beyond %s, was not read)", formatBytes(maxErrorBodyBytes))
		}
		var gone error
		if gatewayUnavailable(st.code) {
			gone = &UnreachableError{Reason: "HTTP " + st.status}
		}
		return newError(fmt.Sprintf("server %q: %s: HTTP %s from %s%s", name, step, st.status, st.url, cut), ErrTransport, gone, err)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return newError(fmt.Sprintf("server %q: %s: cannot reach %s: %s", name, step, r.env.mask.configured(), r.env.mask.err(opErr)),
			ErrTransport, unreachableCause(err), err)
	}
	if gone := unreachableCause(err); gone != nil {
		return newError(fmt.Sprintf("server %q: %s: no answer from %s: %s", name, step, r.env.mask.configured(), unreachableReason(err)),
			ErrTransport, gone, err)
	}
	return nil
}

func (r *remoteLink) unreachable(err error) error { return unreachableCause(err) }

func (r *remoteLink) lost(err error) bool { return isConnectionLoss(err) }

func (r *remoteLink) stop(bool) error {
	if r.base != nil {
		r.base.CloseIdleConnections()
	}
	if r.auth != nil {
		r.auth.Close()
	}
	return nil
}

// maxRedirects is how many redirects one request follows, as under
// net/http's default policy.
const maxRedirects = 10

// RedirectError reports that a remote server answered a request with a
// redirect the session does not follow: to another origin (scheme, host or
// port), which would receive the configured headers, or from https to
// http, which would send them unencrypted. It wraps ErrTransport: the
// session fails, and so does a start, until the config names the final
// URL.
type RedirectError struct {
	Server string
	// To is the redirect's target as every URL of a session is shown:
	// without userinfo and query, and with the parts it shares with the
	// configured URL (a secret path) as written.
	To string
	// Downgrade is set for a redirect from https to http.
	Downgrade bool
}

func (e *RedirectError) Error() string {
	if e.Downgrade {
		return fmt.Sprintf("server %q: the server redirected to %s (from https to http); FreeCode does not follow "+
			"redirects from https to http for MCP servers (your headers would travel unencrypted); put the final URL in the config", e.Server, e.To)
	}
	return fmt.Sprintf("server %q: the server redirected to %s (another origin); FreeCode does not follow "+
		"cross-origin redirects for MCP servers (they would receive your headers); put the final URL in the config", e.Server, e.To)
}

func (e *RedirectError) Unwrap() error { return ErrTransport }

// checkRedirect is the redirect policy of every request of a remote
// session: follow one to the same origin as the request that started the
// chain (a trailing-slash 307 or 308; net/http then resends the body and
// keeps every header), refuse any other with a *RedirectError. A refusal
// also ends the session, as a lost connection does: one of a request that
// fails no call (the GET stream's) must not go unnoticed.
func (r *remoteLink) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	from := via[0].URL
	if sameOrigin(from, req.URL) {
		return nil
	}
	err := &RedirectError{Server: r.env.srv.Name, To: r.env.mask.requestURL(req.URL),
		Downgrade: strings.EqualFold(from.Scheme, "https") && strings.EqualFold(req.URL.Scheme, "http")}
	r.env.lostConn(newError(err.Error(), err))
	return err
}

// sameOrigin reports whether a and b have one scheme, host and port (an
// absent port is the scheme's default).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && originPort(a) == originPort(b)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// streamableTransport is a streamable HTTP transport; listening opens the
// standalone GET stream, which carries tools/list_changed on the
// 2025-11-25 revision (2026-07-28 has none: subscriptions/listen does it).
func (r *remoteLink) streamableTransport(hc *http.Client, slogger *slog.Logger, listening bool) (*transport.StreamableHTTP, error) {
	srv := r.env.srv
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaders(srv.Headers),
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPLogger(slogger),
	}
	if listening {
		// No WithHTTPTimeout: it would cut that stream.
		//lint:ignore SA1019 deprecated only for protocol 2026-07-28, where it is not used.
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(srv.URL, opts...)
	if err != nil {
		return nil, newError(fmt.Sprintf("server %q: %s", srv.Name, r.env.mask.err(err)), err)
	}
	return tr, nil
}

// negotiated is a client over streamable HTTP in the revision the server
// speaks: the one decided without asking (see opener.protocol), or the
// one a server/discover probe finds, sent over a transport of its own
// (one HTTP request, answered at once by servers of either revision). The
// probe's transport serves the 2026-07-28 revision; the 2025-11-25 one
// needs a transport with the GET stream, which a probe must not open.
func (r *remoteLink) negotiated(cctx context.Context, o opener, hc *http.Client, slogger *slog.Logger) (*client.Client, negotiation, error) {
	version := o.protocol()
	remembered := version != "" && !knownRevision(r.env.srv.Protocol)
	var discovered *transport.JSONRPCResponse
	var probe *transport.StreamableHTTP
	if version == "" {
		var err error
		if probe, err = r.streamableTransport(hc, slogger, false); err != nil {
			return nil, negotiation{}, err
		}
		if err := probe.Start(cctx); err != nil {
			return nil, negotiation{}, newError(fmt.Sprintf("server %q: %s", r.env.srv.Name, r.env.mask.err(err)), err)
		}
		found := o.discover(cctx, probe, nil)
		version, discovered = found.version, found.discovered
		// What the probe was answered (a 400, say) explains no later failure.
		r.rec.reset()
	}
	if version == ModernProtocolVersion {
		tr := probe
		if tr == nil {
			var err error
			if tr, err = r.streamableTransport(hc, slogger, false); err != nil {
				return nil, negotiation{}, err
			}
		}
		return r.env.newClient(tr, hc), negotiation{version: version, discovered: discovered, remembered: remembered}, nil
	}
	if probe != nil {
		// It opened no session: closing it sends nothing.
		if err := probe.Close(); err != nil {
			r.env.log.V(1).Info("closing the probe's transport", "err", r.env.mask.err(err))
		}
	}
	tr, err := r.streamableTransport(hc, slogger, true)
	if err != nil {
		return nil, negotiation{}, err
	}
	return r.env.newClient(tr, hc), negotiation{version: version, remembered: remembered}, nil
}

func (r *remoteLink) openStreamable(cctx context.Context, o opener, hc *http.Client, slogger *slog.Logger) error {
	c, neg, err := r.negotiated(cctx, o, hc, slogger)
	if err != nil {
		return err
	}
	return o.handshake(cctx, c, neg)
}

func (r *remoteLink) openSSE(cctx context.Context, o opener, hc *http.Client, slogger *slog.Logger) error {
	srv := r.env.srv
	wait := time.Until(r.deadlineOf(cctx))
	if wait <= 0 {
		return o.connectError(cctx, stepInitialize, context.Cause(cctx))
	}
	tr, err := transport.NewSSE(srv.URL,
		transport.WithHeaders(srv.Headers),
		transport.WithHTTPClient(hc),
		transport.WithEndpointTimeout(wait),
		transport.WithSSELogger(slogger),
	)
	if err != nil {
		return newError(fmt.Sprintf("server %q: %s", srv.Name, r.env.mask.err(err)), err)
	}
	c := r.env.newClient(tr, nil)
	c.OnConnectionLost(func(err error) {
		r.env.lostConn(newError(fmt.Sprintf("server %q: SSE stream lost: %s", srv.Name, r.env.mask.err(err)), ErrTransport, unreachableCause(err), err))
	})
	// The HTTP+SSE transport belongs to the older revisions.
	return o.handshake(cctx, c, negotiation{version: ProtocolVersion})
}

// deadlineOf is when connecting must be done.
func (r *remoteLink) deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(r.env.timeout)
	}
	return d
}

// isConnectionLoss reports whether err means the remote connection is gone
// for good, as opposed to one failed request.
func isConnectionLoss(err error) bool {
	var opErr *net.OpError
	if isAuthFlow(err) {
		return false // the authorization's own requests, not the server's connection
	}
	return errors.Is(err, transport.ErrSessionTerminated) ||
		errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &opErr)
}

// httpStatus is an HTTP error answer seen by a remote session.
type httpStatus struct {
	method, url, status string
	code                int
	cut                 atomic.Bool // its body was longer than maxErrorBodyBytes
}

// statusRecorder is the remote session's http.RoundTripper. It remembers
// the last HTTP error status, for error messages, and once the session is
// established reports its loss: a network error, or 404 for a request that
// carried the session id. It bounds every response body mcp-go reads (see
// limitBody).
type statusRecorder struct {
	base        http.RoundTripper
	server      string
	lost        func(error)
	mask        *urlMask                              // for the URLs and errors it reports
	maxMessage  int64                                 // the server's MaxMessageBytes
	over        func(limit string, value int64) error // ends the session over a limit
	established atomic.Bool
	last        atomic.Pointer[httpStatus]
}

func (r *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		if r.established.Load() && req.Context().Err() == nil {
			r.lost(newError(fmt.Sprintf("server %q: connection lost: %s", r.server, r.mask.err(err)), ErrTransport, unreachableCause(err), err))
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		st := &httpStatus{method: req.Method, url: r.mask.requestURL(req.URL), status: resp.Status, code: resp.StatusCode}
		r.last.Store(st)
		resp.Body = &cappedBody{rc: resp.Body, ctx: req.Context(), left: maxErrorBodyBytes, cut: &st.cut}
		// A 404 for the GET stream may only mean the server offers none.
		if resp.StatusCode == http.StatusNotFound && r.established.Load() &&
			req.Method == http.MethodPost && req.Header.Get(transport.HeaderKeySessionID) != "" {
			r.lost(newError(fmt.Sprintf("server %q: the server ended the session (HTTP 404)", r.server), ErrTransport, transport.ErrSessionTerminated))
		}
		return resp, nil
	}
	resp.Body = r.limitBody(req, resp)
	return resp, nil
}

// limitBody bounds a successful answer's body, which mcp-go reads whole
// (io.ReadAll, a JSON decoder) or line by line (bufio.Reader.ReadString on
// SSE streams, accumulating an event's data lines): one SSE event, or else
// the whole body, may hold at most the message limit; past it the session
// ends. Reads also fail once the request's context ends, so a body that
// streams without pause cannot outlast the connect timeout.
func (r *statusRecorder) limitBody(req *http.Request, resp *http.Response) io.ReadCloser {
	ends := endAtEOF
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		ends = endAtBlank
	}
	return &limitReadCloser{
		limitReader: limitReader{
			r:    resp.Body,
			ctx:  req.Context(),
			c:    newFrameCounter(r.maxMessage, ends),
			over: func() error { return r.over(limitMessageBytes, r.maxMessage) },
		},
		Closer: resp.Body,
	}
}

func (r *statusRecorder) lastStatus() *httpStatus { return r.last.Load() }

func (r *statusRecorder) reset() { r.last.Store(nil) }

// authGate is the outermost RoundTripper of a session that signs in, over
// the OAuth client's Transport. Its errors are not a lost connection (the
// recorder, below, reports those): once the session is established, one
// that needs a sign-in (ErrNeedsLogin) ends it with that error, as the
// sign-in is gone or refused and nothing will work until a user signs in
// again; a request that wants more scope (a step-up, or
// ErrInsufficientScope) fails alone. While connecting, the connect's
// error says it.
type authGate struct {
	next http.RoundTripper
	rec  *statusRecorder
	mask *urlMask
}

func (g *authGate) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err != nil && errors.Is(err, ErrNeedsLogin) && !isStepUp(err) && g.rec.established.Load() {
		g.rec.lost(authError(g.mask, err))
	}
	return resp, err
}
