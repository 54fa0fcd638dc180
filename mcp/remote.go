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
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/schema"
)

// cancelNoticeWait bounds sending notifications/cancelled for an abandoned
// remote call.
const cancelNoticeWait = 2 * time.Second

// remoteConn is what a remote session keeps besides its client.
type remoteConn struct {
	rec  *statusRecorder
	base *http.Transport // closed with the session
}

func (s *Session) connectRemote(cctx context.Context) error {
	// Set before anything can log or fail: every message of this session
	// shows the URL as written.
	s.mask = newURLMask(s.srv)
	s.log = maskLogger(s.log, s.mask)
	u, err := url.Parse(s.srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server %q: url %q is not an http(s) URL", s.srv.Name, s.mask.configured())
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if s.opts.TLSClientConfig != nil {
		base.TLSClientConfig = s.opts.TLSClientConfig.Clone()
	}
	rec := &statusRecorder{base: base, server: s.srv.Name, lost: s.reportLost, mask: s.mask,
		maxMessage: s.lim.MaxMessageBytes, over: s.overLimit}
	s.remote = &remoteConn{rec: rec, base: base}
	// mcp-go's transports send every request (POST, the GET stream, the SSE
	// stream and its endpoint, DELETE) through this client, so the redirect
	// policy covers them all.
	httpClient := &http.Client{
		Transport:     rec,
		CheckRedirect: s.checkRedirect,
	}
	// mcp-go's transports log through slog; route that into our logger.
	slogger := slog.New(logr.ToSlogHandler(s.log.V(1)))

	switch s.srv.Transport {
	case schema.TransportStreamableHTTP:
		err = s.connectStreamable(cctx, httpClient, slogger)
	case schema.TransportSSE:
		err = s.connectSSE(cctx, httpClient, slogger)
	case schema.TransportAuto, "":
		err = s.connectStreamable(cctx, httpClient, slogger)
		// The MCP spec's backwards compatibility rule: a 4xx answer to
		// POST initialize means a server of the older HTTP+SSE transport.
		if errors.Is(err, transport.ErrLegacySSEServer) {
			status := ""
			if st := rec.lastStatus(); st != nil {
				status = st.status
			}
			s.log.V(1).Info("endpoint refused streamable HTTP; trying SSE", "status", status)
			if cerr := s.client.Close(); cerr != nil {
				s.log.V(1).Info("closing streamable HTTP transport", "err", s.mask.err(cerr))
			}
			s.client = nil
			rec.reset()
			err = s.connectSSE(cctx, httpClient, slogger)
		}
	default:
		return fmt.Errorf("server %q: unknown transport %q", s.srv.Name, s.srv.Transport)
	}
	if err == nil {
		select {
		case lost := <-s.lost:
			// Lost while connecting: a refused redirect of the GET stream,
			// which runs beside the handshake, or the SSE stream's end.
			return lost
		default:
		}
		rec.established.Store(true)
	}
	return err
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
func (s *Session) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	from := via[0].URL
	if sameOrigin(from, req.URL) {
		return nil
	}
	err := &RedirectError{Server: s.srv.Name, To: s.mask.requestURL(req.URL),
		Downgrade: strings.EqualFold(from.Scheme, "https") && strings.EqualFold(req.URL.Scheme, "http")}
	s.reportLost(newError(err.Error(), err))
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

func (s *Session) connectStreamable(cctx context.Context, hc *http.Client, slogger *slog.Logger) error {
	tr, err := transport.NewStreamableHTTP(s.srv.URL,
		transport.WithHTTPHeaders(s.srv.Headers),
		transport.WithHTTPBasicClient(hc),
		// The standalone GET stream carries tools/list_changed on the
		// protocol revision we pin. No WithHTTPTimeout: it would cut that
		// stream.
		//lint:ignore SA1019 deprecated only for protocol 2026-07-28, which we do not speak yet.
		transport.WithContinuousListening(),
		transport.WithHTTPLogger(slogger),
	)
	if err != nil {
		return newError(fmt.Sprintf("server %q: %s", s.srv.Name, s.mask.err(err)), err)
	}
	s.client = client.NewClient(&remoteTransport{Interface: tr}, client.WithProtocolVersion(ProtocolVersion))
	return s.handshake(cctx)
}

func (s *Session) connectSSE(cctx context.Context, hc *http.Client, slogger *slog.Logger) error {
	wait := time.Until(deadlineOf(cctx))
	if wait <= 0 {
		return s.connectError(cctx, "initialize", context.Cause(cctx))
	}
	tr, err := transport.NewSSE(s.srv.URL,
		transport.WithHeaders(s.srv.Headers),
		transport.WithHTTPClient(hc),
		transport.WithEndpointTimeout(wait),
		transport.WithSSELogger(slogger),
	)
	if err != nil {
		return newError(fmt.Sprintf("server %q: %s", s.srv.Name, s.mask.err(err)), err)
	}
	s.client = client.NewClient(&remoteTransport{Interface: tr}, client.WithProtocolVersion(ProtocolVersion))
	s.client.OnConnectionLost(func(err error) {
		s.reportLost(newError(fmt.Sprintf("server %q: SSE stream lost: %s", s.srv.Name, s.mask.err(err)), ErrTransport, err))
	})
	return s.handshake(cctx)
}

func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(schema.DefaultTimeout)
	}
	return d
}

// isConnectionLoss reports whether err means the remote connection is gone
// for good, as opposed to one failed request.
func isConnectionLoss(err error) bool {
	var opErr *net.OpError
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
			r.lost(newError(fmt.Sprintf("server %q: connection lost: %s", r.server, r.mask.err(err)), ErrTransport, err))
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

// requestIDSlotKey keys the context value through which remoteTransport
// tells CallTool the JSON-RPC id of its tools/call request.
type requestIDSlotKey struct{}

type requestIDSlot struct {
	mu sync.Mutex // guards id, set
	id mcpgo.RequestId
	ok bool
}

func (s *requestIDSlot) store(id mcpgo.RequestId) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.ok = id, true
}

func (s *requestIDSlot) load() (mcpgo.RequestId, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.ok
}

// remoteTransport wraps mcp-go's HTTP transports to learn request ids: over
// HTTP mcp-go sends no notifications/cancelled, which the 2025 revisions of
// the spec still ask for (a dropped connection is not a cancellation), so
// CallTool sends it itself. It forwards the optional interfaces mcp-go looks
// for.
type remoteTransport struct {
	transport.Interface
}

var (
	_ transport.BidirectionalInterface = (*remoteTransport)(nil)
	_ transport.HTTPConnection         = (*remoteTransport)(nil)
)

func (t *remoteTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if slot, ok := ctx.Value(requestIDSlotKey{}).(*requestIDSlot); ok && req.Method == string(mcpgo.MethodToolsCall) {
		slot.store(req.ID)
	}
	return t.Interface.SendRequest(ctx, req)
}

func (t *remoteTransport) SetRequestHandler(h transport.RequestHandler) {
	if b, ok := t.Interface.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(h)
	}
}

func (t *remoteTransport) SetProtocolVersion(v string) {
	if h, ok := t.Interface.(transport.HTTPConnection); ok {
		h.SetProtocolVersion(v)
	}
}

func (t *remoteTransport) SetConnectionLostHandler(f func(error)) {
	if c, ok := t.Interface.(interface{ SetConnectionLostHandler(func(error)) }); ok {
		c.SetConnectionLostHandler(f)
	}
}

func (t *remoteTransport) RequiresLegacyProtocol() bool {
	l, ok := t.Interface.(interface{ RequiresLegacyProtocol() bool })
	return ok && l.RequiresLegacyProtocol()
}

// sendCancelled tells a remote server that the call whose id slot holds was
// abandoned. It does not wait: the notice is best effort, bounded by
// cancelNoticeWait and the session's end.
func (s *Session) sendCancelled(slot *requestIDSlot, reason error) {
	id, ok := slot.load()
	if !ok {
		return
	}
	n := mcpgo.JSONRPCNotification{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		Notification: mcpgo.Notification{
			Method: string(mcpgo.MethodNotificationCancelled),
			Params: mcpgo.NotificationParams{
				AdditionalFields: map[string]any{"requestId": id, "reason": reason.Error()},
			},
		},
	}
	if !s.startBackground() {
		return
	}
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, cancelNoticeWait)
		defer cancel()
		if err := s.client.GetTransport().SendNotification(ctx, n); err != nil {
			s.log.V(1).Info("sending notifications/cancelled failed", "err", s.mask.err(err))
		}
	}()
}
