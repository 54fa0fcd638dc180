package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
)

// Defaults of Options.
const (
	defaultKeepalive = 15 * time.Second
	writeTimeout     = 10 * time.Second
	maxBodyBytes     = 4 << 20

	// DefaultReadTimeout bounds reading one request, headers and body. The
	// largest body (4 MiB) takes milliseconds over the socket: a client
	// still sending after this is stalled or hostile, and its connection
	// is closed. Streams, approvals and long calls are responses and are
	// not bound by it.
	DefaultReadTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sends no next
	// request. It is longer than the Go client's idle timeout (30 s), so
	// the client gives a connection up before the server does.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns bounds the connections open at once; more wait to be
	// accepted until one closes. serve's clients are a handful of CLI
	// commands and hosts, each with a few streams; the bound keeps file
	// descriptors and memory (about 10 KiB per connection) in check when
	// something opens connections without end.
	DefaultMaxConns = 1024
)

// ServerOptions configure NewServer's connections: ReadTimeout,
// IdleTimeout and MaxConns bound them (defaults DefaultReadTimeout,
// DefaultIdleTimeout, DefaultMaxConns).
type ServerOptions struct {
	ReadTimeout time.Duration
	IdleTimeout time.Duration
	MaxConns    int
	Logger      logr.Logger
}

// Server is the local API's HTTP handler: the HTTP form of an Engine. Each
// handler decodes its request, asks the Engine, and encodes the answer, or
// the error with the status code errorStatus gives it.
type Server struct {
	engine Engine
	opts   ServerOptions
	mux    *http.ServeMux
}

// NewServer returns the API handler over engine. It panics when engine is
// nil, which is a programming error.
func NewServer(engine Engine, opts ServerOptions) *Server {
	if engine == nil {
		panic("api.NewServer: an Engine is required")
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConns < 1 {
		opts.MaxConns = DefaultMaxConns
	}
	s := &Server{engine: engine, opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/status", s.status)
	s.mux.HandleFunc("GET /v1/tools", s.tools)
	s.mux.HandleFunc("GET /v1/lists", s.lists)
	s.mux.HandleFunc("POST /v1/tools/{id}/call", s.call)
	s.mux.HandleFunc("DELETE /v1/tools/loaded", s.clearLoaded)
	s.mux.HandleFunc("GET /v1/approvals", s.approvals)
	s.mux.HandleFunc("POST /v1/approvals/{id}", s.answer)
	s.mux.HandleFunc("GET /v1/elicitations", s.elicitations)
	s.mux.HandleFunc("POST /v1/elicitations/{id}", s.answerElicitation)
	s.mux.HandleFunc("GET /v1/events", s.events)
	s.mux.HandleFunc("POST /v1/servers/{name}/restart", s.restart)
	s.mux.HandleFunc("GET /v1/servers/{name}/logs", s.logs)
	s.mux.HandleFunc("GET /v1/servers/{name}/tools", s.serverTools)
	s.mux.HandleFunc("POST /v1/servers/{name}/complete", s.complete)
	s.mux.HandleFunc("GET /v1/resources", s.resources)
	s.mux.HandleFunc("GET /v1/resources/read", s.readResource)
	s.mux.HandleFunc("POST /v1/resources/subscribe", s.subscribe(true))
	s.mux.HandleFunc("POST /v1/resources/unsubscribe", s.subscribe(false))
	s.mux.HandleFunc("GET /v1/prompts", s.prompts)
	s.mux.HandleFunc("POST /v1/prompts/{server}/{name}", s.getPrompt)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s (see GET /v1/status)", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A write deadline set while answering the previous request of this
	// connection (see writeJSON) must not cut this one's answer.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	// A request is its client's, named by its header or unnamed, never
	// the serving process's (whose ctx the request's derives from).
	r = r.WithContext(context.WithValue(r.Context(), clientKey{}, cleanClientName(r.Header.Get(ClientHeader))))
	// A client's trace context (traceparent) is the parent of what the
	// request does: a gateway's call goes on in the same trace.
	if ctx := telemetry.ExtractHTTP(r.Context(), r.Header); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	s.mux.ServeHTTP(w, r)
}

// Serve answers requests on ln until ctx ends, then stops: open streams end,
// in-flight calls are cancelled, and Serve returns once every handler has
// returned (or after a 5 s grace). It closes ln.
//
// At most MaxConns connections are open at once (the next one is accepted
// when one closes); a request must arrive, headers and body, within
// ReadTimeout, and a connection idle for IdleTimeout is closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: min(10*time.Second, s.opts.ReadTimeout),
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return hctx },
	}
	// A connection that has not sent its first request counts as busy
	// for Shutdown until it is 5 s old (net/http, golang/go#22682): a
	// client that dialled one it then did not need (an HTTP transport
	// racing a dial against a connection coming free does) would hold
	// the shutdown for the whole grace. No handler runs on one, so once
	// the listener is closed they are closed too.
	fresh := newFreshConns()
	srv.ConnState = fresh.track
	srv.RegisterOnShutdown(fresh.closeAll)
	ln = netutil.LimitListener(ln, s.opts.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
	}
	cancel() // ends streams and calls: their request contexts derive from hctx
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("api shutdown: %w", err)
	}
	return nil
}

// freshConns are the server's connections that have not begun a request
// (http.StateNew).
type freshConns struct {
	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool // closeAll ran: a connection accepted since is closed at once
}

func newFreshConns() *freshConns { return &freshConns{conns: map[net.Conn]struct{}{}} }

// track is an http.Server's ConnState.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case st == http.StateNew && f.closed:
		// Accepted just before the listener closed, marked new after
		// closeAll ran (Shutdown runs it beside Serve's last Accept).
		_ = c.Close()
	case st == http.StateNew:
		f.conns[c] = struct{}{}
	default:
		delete(f.conns, c)
	}
}

// closeAll closes every connection that has not begun a request. A request
// whose first bytes are on their way is cut: its client finds serve gone,
// as it would a moment later.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(errorBody{Error: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	// A client that does not read its answer cannot hold the handler or,
	// once it returned, the connection (the deadline also bounds the final
	// flush).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// errorStatus is the one mapping from errors to HTTP status codes: of an
// Engine's errors, and of a tool call's outcome, for which it also names
// the failure's Kind (RunCall).
func errorStatus(err error) (code int, kind string) {
	var ae *Error
	if errors.As(err, &ae) {
		// An answer of the API already (an Engine that is a Client, or a
		// call's outcome): its status stands.
		if ae.Call != nil {
			return ae.Status, ae.Call.Kind
		}
		return ae.Status, ""
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, ""
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, ""
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrInvalidAnswer):
		return http.StatusBadRequest, ""
	case errors.Is(err, ErrTimeout):
		return http.StatusGatewayTimeout, KindTimeout
	case errors.Is(err, orchestrator.ErrUnknownTool):
		return http.StatusNotFound, KindUnknownTool
	case errors.Is(err, orchestrator.ErrDenied):
		return http.StatusForbidden, KindDenied
	case errors.Is(err, orchestrator.ErrNotApproved):
		return http.StatusForbidden, KindNotApproved
	case errors.Is(err, orchestrator.ErrInvalidArgs):
		return http.StatusBadRequest, KindInvalidArgs
	case errors.Is(err, orchestrator.ErrCallTimeout):
		return http.StatusGatewayTimeout, KindTimeout
	case errors.Is(err, registry.ErrTransport):
		return http.StatusBadGateway, KindTransport
	case errors.Is(err, orchestrator.ErrToolPanicked):
		return http.StatusInternalServerError, KindPanicked
	case errors.Is(err, orchestrator.ErrNotStarted), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, KindCanceled
	}
	return http.StatusInternalServerError, KindFailed
}

// ErrorKind is the kind the API gives a call's failure (KindDenied,
// KindNotApproved, ...; KindFailed for anything else), as a
// CallResponse's Kind says it.
func ErrorKind(err error) string {
	_, kind := errorStatus(err)
	if kind == "" {
		return KindFailed
	}
	return kind
}

// writeErr answers err with its status code (errorStatus) and message.
func writeErr(w http.ResponseWriter, err error) {
	code, _ := errorStatus(err)
	writeError(w, code, err.Error())
}

// answer writes v, the engine's answer, with code, or err as writeErr does.
func answer(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, code, v)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.engine.Status(r.Context())
	answer(w, http.StatusOK, st, err)
}

func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	get := s.engine.Tools
	if q.Get("summary") == "1" {
		get = s.engine.ToolsSummary
	}
	t, err := get(r.Context(), q.Get("dialect"))
	answer(w, http.StatusOK, t, err)
}

// clearLoaded empties the set of tools tool_search loaded: a new
// conversation starts from the always-loaded tools.
func (s *Server) clearLoaded(w http.ResponseWriter, r *http.Request) {
	if err := s.engine.ClearLoaded(r.Context()); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// callOptions reads the call endpoint's query: callId, the caller's own id
// for the call, timeout, in milliseconds, and progress=0 (nobody follows
// its progress). The engine checks their values; here only that timeout
// is a number of milliseconds and progress 0 or 1.
func callOptions(r *http.Request) (CallOptions, error) {
	q := r.URL.Query()
	opts := CallOptions{ID: q.Get("callId")}
	switch p := q.Get("progress"); p {
	case "", "1":
	case "0":
		opts.NoProgress = true
	default:
		return CallOptions{}, fmt.Errorf("progress must be 0 or 1, not %q", p)
	}
	if t := q.Get("timeout"); t != "" {
		ms, err := strconv.ParseInt(t, 10, 64)
		if err != nil || ms < 1 {
			return CallOptions{}, fmt.Errorf("timeout must be a whole number of milliseconds from 1 to %d, not %q", maxCallTimeout.Milliseconds(), t)
		}
		// Saturated, not overflowed: the engine refuses what is too long.
		opts.Timeout = time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	return opts, nil
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	opts, err := callOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read arguments: "+err.Error())
		return
	}
	resp, err := s.engine.CallWith(r.Context(), r.PathValue("id"), body, opts)
	// A call that did not complete answers its response, with its status.
	if ae := (*Error)(nil); errors.As(err, &ae) && ae.Call != nil {
		writeJSON(w, ae.Status, ae.Call)
		return
	}
	answer(w, http.StatusOK, resp, err)
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	list, err := s.engine.Approvals(r.Context())
	answer(w, http.StatusOK, list, err)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Approve *bool `json:"approve"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Approve == nil {
		writeError(w, http.StatusBadRequest, `the body must be {"approve": true} or {"approve": false}`)
		return
	}
	id := r.PathValue("id")
	err := s.engine.Answer(r.Context(), id, *body.Approve)
	answer(w, http.StatusOK, ApprovalAnswered{ID: id, Approved: *body.Approve}, err)
}

func (s *Server) elicitations(w http.ResponseWriter, r *http.Request) {
	list, err := s.engine.Elicitations(r.Context())
	answer(w, http.StatusOK, list, err)
}

func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	var body wire.ElicitationAnswer
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}`)
		return
	}
	ans, err := s.engine.AnswerElicitation(r.Context(), r.PathValue("id"), body)
	answer(w, http.StatusOK, ans, err)
}

func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	err := s.engine.Restart(r.Context(), name)
	answer(w, http.StatusAccepted, map[string]string{"restarting": name}, err)
}

func (s *Server) lists(w http.ResponseWriter, r *http.Request) {
	ls, err := s.engine.Lists(r.Context())
	answer(w, http.StatusOK, ls, err)
}

func (s *Server) serverTools(w http.ResponseWriter, r *http.Request) {
	get := s.engine.ServerTools
	if r.URL.Query().Get("all") == "true" {
		get = s.engine.AllServerTools
	}
	st, err := get(r.Context(), r.PathValue("name"))
	answer(w, http.StatusOK, st, err)
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if f := r.URL.Query().Get("follow"); f == "" || f == "0" || f == "false" {
		logs, err := s.engine.Logs(r.Context(), name)
		answer(w, http.StatusOK, logs, err)
		return
	}
	st, err := s.engine.FollowLogs(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.relay(w, r, st)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	st, err := s.engine.Events(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	s.relay(w, r, st, Event{Kind: wire.KindSubscribed, Data: "{}"})
}

// relay sends first, then st's events as server-sent events until st or
// the request ends or the client stops reading; a keepalive comment goes
// out every defaultKeepalive without an event. It closes st.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, st Stream, first ...Event) {
	// One goroutine reads st, owned by relay: it ends once st is closed
	// (below), and relay waits for it.
	events := make(chan Event)
	done := make(chan struct{})
	go func() {
		defer close(events)
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			select {
			case events <- ev:
			case <-done:
				return
			}
		}
	}()
	defer func() {
		close(done)
		st.Close()
		for range events { // until the reader returned
		}
	}()
	sw := startStream(w)
	for _, ev := range first {
		if sw.event(ev.Kind, ev.Data) != nil {
			return
		}
	}
	keep := time.NewTicker(defaultKeepalive)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keep.C:
			if sw.comment("keepalive") != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			if sw.event(ev.Kind, ev.Data) != nil {
				return
			}
		}
	}
}
