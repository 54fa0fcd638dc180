package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
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

// Runner runs tool calls; *orchestrator.Orchestrator implements it.
type Runner interface {
	Run(ctx context.Context, calls []orchestrator.Call) []orchestrator.Outcome
}

// Backend is the daemon behind the status, restart and logs endpoints. Its
// errors wrap ErrNotFound (no such server: 404) or ErrConflict (409) when
// they mean that; any other error is answered 500. Its methods are called
// concurrently.
type Backend interface {
	// Status returns the current status snapshot.
	Status() wire.Status
	// Restart restarts one server.
	Restart(name string) error
	// Logs returns, at once, a server's stderr lines after the cursor (the
	// zero cursor: all it keeps), of the session named in the answer, with
	// the cursor after them (Logs.Cursor).
	Logs(name string, after wire.LogCursor) (wire.Logs, error)
	// WaitLogs is Logs once there is something after the cursor: a line, or
	// another session. It returns ctx's error when ctx ends first.
	WaitLogs(ctx context.Context, name string, after wire.LogCursor) (wire.Logs, error)
	// Tools returns the tools one server has registered, with its phase.
	Tools(name string) (wire.ServerTools, error)
}

// FeatureBackend is the daemon behind the resources and prompts
// endpoints: what the servers offer beside tools. Its errors wrap
// ErrNotFound (no such server, prompt or resource: 404), ErrConflict (the
// server is not ready, or does not offer it: 409), ErrBadRequest (wrong
// prompt arguments, a URI the server refuses: 400), ErrTimeout (504) or
// registry.ErrTransport (502). Its methods are called concurrently.
type FeatureBackend interface {
	// Resources returns the resources and templates of server name, or of
	// every server that has them when name is "".
	Resources(name string) (wire.Resources, error)
	// ReadResource reads uri of server name.
	ReadResource(ctx context.Context, name, uri string) (wire.ResourceRead, error)
	// Subscribe subscribes to updates of uri of server name (on), or
	// ends that; updates go out as wire.ResourceUpdated events.
	Subscribe(ctx context.Context, name, uri string, on bool) error
	// Prompts returns the prompts of server name, or of every server that
	// has them when name is "".
	Prompts(name string) (wire.Prompts, error)
	// GetPrompt gets prompt of server name with args.
	GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (wire.PromptResult, error)
}

// Options configure NewServer. Backend, Bus, Defs, Runner and Approvals are
// required.
type Options struct {
	Backend Backend
	// Features serves the resources and prompts endpoints; nil answers
	// them with 404.
	Features FeatureBackend

	// Bus feeds GET /v1/events: the bus the registry, the controller and
	// Approvals publish on.
	Bus       *event.Bus
	Defs      *defs.DefsCache
	Runner    Runner
	Approvals *Approvals
	// Elicitations feeds GET and POST /v1/elicitations: the servers'
	// requests for input that serve holds. Nil: a new one on Bus, which
	// nothing asks.
	Elicitations *Elicitations

	// ReadTimeout, IdleTimeout and MaxConns bound connections (defaults
	// DefaultReadTimeout, DefaultIdleTimeout, DefaultMaxConns).
	ReadTimeout time.Duration
	IdleTimeout time.Duration
	MaxConns    int
	Logger      logr.Logger
}

// Server is the local API's HTTP handler.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	calls atomic.Uint64 // numbers call ids
}

// NewServer returns the API handler. It panics when a required option is
// missing, which is a programming error.
func NewServer(opts Options) *Server {
	if opts.Backend == nil || opts.Bus == nil || opts.Defs == nil || opts.Runner == nil || opts.Approvals == nil {
		panic("api.NewServer: Backend, Bus, Defs, Runner and Approvals are required")
	}
	if opts.Elicitations == nil {
		opts.Elicitations = NewElicitations(opts.Bus, 0)
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
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/status", s.status)
	s.mux.HandleFunc("GET /v1/tools", s.tools)
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

// errorStatus is the one mapping from errors to HTTP status codes: of the
// backend's and the approvals' errors, and of a tool call's outcome, for
// which it also names the failure's Kind.
func errorStatus(err error) (code int, kind string) {
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

// writeErr answers err with its status code (errorStatus) and message.
func writeErr(w http.ResponseWriter, err error) {
	code, _ := errorStatus(err)
	writeError(w, code, err.Error())
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Backend.Status())
}

func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	d := defs.Dialect(r.URL.Query().Get("dialect"))
	if d == "" {
		d = defs.DialectJSONSchema
	}
	if !slices.Contains(defs.Dialects(), d) {
		names := make([]string, 0, 3)
		for _, x := range defs.Dialects() {
			names = append(names, string(x))
		}
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown dialect %q (want one of %s)", d, strings.Join(names, ", ")))
		return
	}
	list := s.opts.Defs.Defs(d)
	tools := list.Tools
	if tools == nil || r.URL.Query().Get("summary") == "1" {
		// A summary: everything but the definitions themselves.
		tools = []defs.Def{}
	}
	writeJSON(w, http.StatusOK, Tools{Dialect: string(d), Version: list.Version, Tools: tools, Count: len(list.Tools),
		Problems: list.Problems, EstimatedTokens: list.EstimatedTokens, Deferral: list.Deferral})
}

// clearLoaded empties the set of tools tool_search loaded: a new
// conversation starts from the always-loaded tools.
func (s *Server) clearLoaded(w http.ResponseWriter, r *http.Request) {
	s.opts.Defs.ResetLoaded()
	w.WriteHeader(http.StatusNoContent)
}

// maxCallTimeoutMS bounds the timeout query parameter of a call: a day, as
// config.cue bounds callTimeout.
const maxCallTimeoutMS = 86400000

// callParams reads the call endpoint's query: callId, the caller's own id
// for the call (it names the call's approval, so that the caller can tell
// its approvals from others'), and timeout, in milliseconds.
func callParams(r *http.Request) (callID string, timeout time.Duration, err error) {
	q := r.URL.Query()
	if callID = q.Get("callId"); callID != "" {
		if len(callID) > 64 || strings.Trim(callID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "" {
			return "", 0, errors.New("callId must be 1 to 64 letters, digits, '_', '-' or '.'")
		}
	}
	if t := q.Get("timeout"); t != "" {
		ms, err := strconv.ParseInt(t, 10, 64)
		if err != nil || ms < 1 || ms > maxCallTimeoutMS {
			return "", 0, fmt.Errorf("timeout must be a whole number of milliseconds from 1 to %d, not %q", maxCallTimeoutMS, t)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	return callID, timeout, nil
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	callID, timeout, err := callParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read arguments: "+err.Error())
		return
	}
	if callID == "" {
		callID = "api-" + strconv.FormatUint(s.calls.Add(1), 10)
	}
	ctx := r.Context()
	if s.opts.Bus != nil {
		// The bus never blocks a publisher: the notices cannot hold up the
		// server's other answers.
		ctx = registry.WithProgress(ctx, func(p registry.Progress) {
			s.opts.Bus.Publish(wire.CallProgress{CallID: callID, Tool: id, Progress: p.Progress, Total: p.Total, Message: p.Message})
		})
	}
	out := s.opts.Runner.Run(ctx, []orchestrator.Call{{ID: callID, Tool: id, Args: body, Timeout: timeout}})
	if len(out) != 1 {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("orchestrator returned %d outcomes for one call", len(out)))
		return
	}
	oc := out[0]
	resp := CallResponse{Tool: id, Result: oc.Result, Attempts: oc.Attempts, DurationMS: oc.Duration.Milliseconds()}
	if resp.Result.Content == nil {
		resp.Result.Content = []registry.Content{}
	}
	code := http.StatusOK
	if oc.Err != nil {
		resp.Error = oc.Err.Error()
		code, resp.Kind = errorStatus(oc.Err)
	}
	writeJSON(w, code, resp)
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Approvals.Pending())
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
	if err := s.opts.Approvals.Answer(r.PathValue("id"), *body.Approve); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ApprovalAnswered{ID: r.PathValue("id"), Approved: *body.Approve})
}

func (s *Server) elicitations(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Elicitations.Pending())
}

func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	var body wire.ElicitationAnswer
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Action == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"action": "accept", "content": {...}}, {"action": "decline"} or {"action": "cancel"}`)
		return
	}
	ans, err := s.opts.Elicitations.Answer(r.PathValue("id"), body)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.opts.Backend.Restart(name); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"restarting": name})
}

func (s *Server) serverTools(w http.ResponseWriter, r *http.Request) {
	st, err := s.opts.Backend.Tools(r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if st.Tools == nil {
		st.Tools = []wire.Tool{}
	}
	if r.URL.Query().Get("all") != "true" {
		st.Hidden = nil // asked for by `freecode mcp tools --all` only
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	logs, err := s.opts.Backend.Logs(name, wire.LogCursor{})
	if err != nil {
		writeErr(w, err)
		return
	}
	logs.Server = name
	if logs.Lines == nil {
		logs.Lines = []string{}
	}
	if f := r.URL.Query().Get("follow"); f == "" || f == "0" || f == "false" {
		writeJSON(w, http.StatusOK, logs)
		return
	}
	// Followed by cursor: every read asks for the lines after the last one
	// sent, so each line goes out once, under the session that wrote it.
	sw := startStream(w)
	cur := wire.LogCursor{Session: -1} // no session announced yet
	for {
		if logs.Session != cur.Session && sw.event(wire.KindLogSession, map[string]int64{"session": logs.Session}) != nil {
			return
		}
		for _, l := range logs.Lines {
			if sw.event(wire.KindLogLine, l) != nil {
				return
			}
		}
		cur = logs.Cursor()
		for {
			// A wait that outlasts defaultKeepalive sends a keepalive
			// comment and waits again.
			wctx, cancel := context.WithTimeout(r.Context(), defaultKeepalive)
			logs, err = s.opts.Backend.WaitLogs(wctx, name, cur)
			cancel()
			if r.Context().Err() != nil {
				return
			}
			if err == nil {
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				_ = sw.event(wire.KindLogError, err.Error())
				return
			}
			if sw.comment("keepalive") != nil {
				return
			}
		}
	}
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	msgs, cancel := s.opts.Bus.Subscribe(64)
	defer cancel()
	sw := startStream(w)
	if sw.event(wire.KindSubscribed, struct{}{}) != nil {
		return
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
		case m, ok := <-msgs:
			if !ok {
				return
			}
			if m.Missed > 0 {
				if sw.event(wire.KindMissed, map[string]uint64{"missed": m.Missed}) != nil {
					return
				}
			}
			// Every event's JSON is its wire form.
			if sw.event(m.Event.Kind(), m.Event) != nil {
				return
			}
		}
	}
}
