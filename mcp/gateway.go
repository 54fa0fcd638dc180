package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The gateway is FreeCode speaking MCP as a server: one endpoint (stdio or
// streamable HTTP) for a host, in front of every configured server. This
// file is its protocol side; what it exposes and how calls run is the
// caller's (package gateway), through GatewayOptions and SetTools.

// GatewayCall is one tools/call of the host.
type GatewayCall struct {
	// Name is the tool's name as the gateway lists it.
	Name string
	// Args is the arguments object ({} when the host sent none).
	Args json.RawMessage
	// Progress passes a progress notice on to the host; nil when the host
	// asked for none. It must not block and may be called until the call
	// returns.
	Progress func(wire.Progress)
}

// GatewayOptions configure NewGateway.
type GatewayOptions struct {
	// Name and Version are what the gateway tells the host it is.
	Name, Version string
	// Instructions returns the gateway's instructions to the host, asked
	// at each initialize ("": none; nil: none).
	Instructions func() string
	// Call runs a call (required). An error is sent to the host as a
	// JSON-RPC error; a refusal the model should read is a result with
	// IsError instead.
	Call func(ctx context.Context, c GatewayCall) (wire.CallResult, error)
	// Read reads a listed resource (a resource's URI, or one a template
	// makes; each part's URI as the host sees it, its _meta passed on from
	// Raw); GetPrompt gets a listed prompt (Server and Prompt are not
	// sent). nil: not offered.
	Read      func(ctx context.Context, uri string) ([]wire.ResourceContent, error)
	GetPrompt func(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error)
	// Complete completes an argument of a listed prompt or resource
	// template (ref names it as the host sees it). nil: not offered; else
	// the gateway declares completions while SetCompletions says some
	// server offers them.
	Complete func(ctx context.Context, ref wire.CompletionRef, arg wire.CompletionArgument, given map[string]string) (wire.Completion, error)
	// ServerOf names the upstream server the calls of a listed tool go to
	// ("" for none), so that Elicit puts a server's question to the host
	// whose call waits on that server. nil: every question goes to the
	// most recently connected host that can show it.
	ServerOf func(name string) string
	// PromptServerOf names the upstream server a listed prompt is got
	// from ("" for none), as ServerOf for tools: a question of that server
	// while a 2026-07-28 host's prompts/get waits on it is put to that
	// host. nil: none.
	PromptServerOf func(name string) string
	// ExchangeTTL bounds how long a 2026-07-28 host's request that asked
	// it a question waits for the host to send it again with the answer
	// (0: DefaultExchangeTTL); see gateway_mrtr.go.
	ExchangeTTL time.Duration
	// HTTPSessionIdleTTL is how long an HTTP host's session lives with no
	// request in flight, a standing GET stream being one (0:
	// DefaultHTTPSessionIdleTTL).
	HTTPSessionIdleTTL time.Duration
	// MaxMessageBytes bounds one message of a stdio host, a line (0:
	// DefaultGatewayMaxMessageBytes); the HTTP endpoint's caller bounds
	// request bodies. MaxRequests bounds a stdio host's requests in flight
	// (0: DefaultGatewayMaxRequests).
	MaxMessageBytes int64
	MaxRequests     int
	Logger          logr.Logger
	// Telemetry, if set and on, gives each host's tools/call a SERVER
	// span under the host's trace context (nil: off; the host's context
	// is carried on to the Engine either way).
	Telemetry *telemetry.Telemetry
}

// DefaultHTTPSessionIdleTTL is how long an HTTP host's session lives with
// no request of its own in flight (a standing GET stream is one): a host
// killed without ending its session is forgotten then, and no question
// goes to it any more. A host that comes back after that starts a new
// session, as the protocol has it (its old one answers 404).
const DefaultHTTPSessionIdleTTL = 10 * time.Minute

// ErrHostCannotElicit is returned by Gateway.Elicit and AskHost when no
// connected host declared the elicitation capability.
var ErrHostCannotElicit = errors.New("the host did not declare the elicitation capability")

// Gateway is the MCP server side of the gateway. It is safe for concurrent
// use; ServeStdio and the HTTP handler may run together. SetTools,
// SetResources and SetPrompts are the exception: each compares under mu
// and hands the new set to mcp-go outside it (mcp-go notifies the hosts
// from there), so each must have one caller at a time — two at once could
// leave mcp-go with the older set of the two.
type Gateway struct {
	opts GatewayOptions
	srv  *server.MCPServer

	mu    sync.Mutex // guards tools, resources, templates, prompts, the *Set flags and hosts
	tools []wire.Tool
	// resources, templates and prompts are the listed features; the Set
	// flags say they were set once (mcp-go declares no list before).
	resources   []wire.Resource
	templates   []wire.ResourceTemplate
	prompts     []wire.Prompt
	featuresSet bool
	promptsSet  bool
	// hosts are the initialized sessions, oldest first.
	hosts []server.ClientSession
	// calls are the tools/calls in flight, oldest first: whose host, to
	// which upstream server.
	calls   []*hostCall
	callSeq uint64

	// progress lets an answer wait for the progress notices before it.
	progress progressWrites

	// stateKey is the HMAC key of the requestStates the gateway gives its
	// 2026-07-28 hosts: random, this process's alone.
	stateKey []byte
	// completions says the gateway declares completions (SetCompletions).
	completions atomic.Bool
}

// hostCall is a tools/call in flight, as Gateway.calls holds it.
type hostCall struct {
	seq    uint64
	host   server.ClientSession
	server string
	// ex is the exchange of a 2026-07-28 host's request (its questions
	// go through it), nil for an older host's.
	ex *exchange
}

// NewGateway returns a gateway listing no tools until SetTools.
func NewGateway(opts GatewayOptions) *Gateway {
	g := &Gateway{opts: opts, stateKey: make([]byte, 32)}
	_, _ = rand.Read(g.stateKey) // crypto/rand.Read does not fail
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcpgo.InitializeRequest, res *mcpgo.InitializeResult) {
		if opts.Instructions != nil && res != nil {
			res.Instructions = opts.Instructions()
		}
		if res != nil {
			g.declareCompletions(&res.Capabilities)
		}
		if s := server.ClientSessionFromContext(ctx); s != nil {
			g.mu.Lock()
			g.hosts = append(slices.DeleteFunc(g.hosts, func(h server.ClientSession) bool { return h.SessionID() == s.SessionID() }), s)
			g.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		g.mu.Lock()
		g.hosts = slices.DeleteFunc(g.hosts, func(h server.ClientSession) bool { return h.SessionID() == s.SessionID() })
		g.mu.Unlock()
	})
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcpgo.DiscoverRequest, res *mcpgo.DiscoverResult) {
		if res != nil {
			g.declareCompletions(&res.Capabilities)
		}
	})
	sopts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(false, true),
		server.WithPromptCapabilities(true),
		server.WithHooks(hooks),
		server.WithRecovery(),
	}
	sopts = append(sopts, g.completionOptions()...)
	g.srv = server.NewMCPServer(opts.Name, opts.Version, sopts...)
	return g
}

// SetTools makes tools the listed set and reports whether it changed: the
// host is sent notifications/tools/list_changed only then. Two lists are
// the same when they hold the same tools, compared field by field and
// byte by byte, whatever their order; so a server restart that brings the
// same tools back sends nothing. It has one caller at a time (see
// Gateway).
//
// Each tool is listed under its Name (the name the host calls it by),
// with its Title, Description, InputSchema (nil: {"type":"object"}) and
// the hints of its Annotations; of Raw, the object its server listed,
// what mcp-go models is listed too (outputSchema, icons, _meta,
// execution): fields mcp-go does not model (a later revision's) are lost
// here, on the gateway alone, as the API and the CLI pass the whole
// object on. ID and ReadOnly are not listed: the annotations say it.
func (g *Gateway) SetTools(tools []wire.Tool) (changed bool) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b wire.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	g.mu.Lock()
	same := slices.EqualFunc(g.tools, tools, sameGatewayTool)
	if !same {
		g.tools = tools
	}
	g.mu.Unlock()
	if same {
		return false
	}
	// SetTools notifies every initialized session; a session that lists
	// the tools after the swap sees the new set, so none misses a change.
	st := make([]server.ServerTool, 0, len(tools))
	for _, t := range tools {
		mt := mcpTool(t)
		// mcp-go panics on a tool whose schema has x-mcp-header
		// annotations it refuses (SEP-2243): such a tool is left out.
		if err := mcpgo.ValidateParamHeaderAnnotations(&mt); err != nil {
			g.opts.Logger.Info("left out a tool the protocol forbids to list", "tool", t.Name, "error", err.Error())
			continue
		}
		st = append(st, server.ServerTool{Tool: mt, Handler: g.handler(t.Name)})
	}
	g.srv.SetTools(st...)
	return true
}

// sameGatewayTool compares what the host is shown of a and b.
func sameGatewayTool(a, b wire.Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Raw, b.Raw)
}

// mcpTool is t for mcp-go: what mcp-go models of the server's tool (Raw:
// outputSchema raw, icons, _meta, execution), with the gateway's name,
// title, description and input schema raw, and the annotations' hints
// typed (mcp-go models no others).
func mcpTool(t wire.Tool) mcpgo.Tool {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var out mcpgo.Tool
	if len(t.Raw) > 0 {
		var extra struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
			Meta         json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(t.Raw, &out) != nil {
			// A tool mcp-go's type cannot hold (a schema of a shape it
			// does not expect): its icons, _meta and output schema still.
			out = mcpgo.Tool{}
			out.Icons, _ = listed(t.Raw)
		}
		_ = json.Unmarshal(t.Raw, &extra)
		// The output schema raw, as the input schema is: mcp-go's typed
		// one keeps only some keywords.
		out.InputSchema, out.OutputSchema = mcpgo.ToolInputSchema{}, mcpgo.ToolOutputSchema{}
		if o := bytes.TrimSpace(extra.OutputSchema); len(o) > 0 && o[0] == '{' {
			out.RawOutputSchema = extra.OutputSchema
		}
		out.Meta = metaOf(extra.Meta)
	}
	out.Name, out.Title, out.Description, out.RawInputSchema = t.Name, t.Title, t.Description, schema
	out.Annotations = mcpgo.ToolAnnotation{}
	if len(t.Annotations) > 0 {
		// Annotations that do not decode are a server's mistake: the
		// tool is listed without them.
		_ = json.Unmarshal(t.Annotations, &out.Annotations)
	}
	return out
}

// handler answers the host's tools/call of name. The host's trace context
// in the request's _meta (traceparent, tracestate) is the parent of the
// call's SERVER span, and goes on with ctx to the Engine and the server.
func (g *Gateway) handler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		if req.Params.Meta != nil {
			ctx = telemetry.ExtractMeta(ctx, req.Params.Meta.AdditionalFields)
		}
		ctx, span := g.opts.Telemetry.StartServer(ctx, telemetry.Request{Method: string(mcpgo.MethodToolsCall), Tool: name})
		res, ir, err := g.bridged(ctx, string(mcpgo.MethodToolsCall), name, req.Params.MultiRoundTripParams,
			func(ctx context.Context) (any, error) { return g.callTool(ctx, name, req) })
		if err != nil {
			span.End(telemetry.ErrorType(ctx, err), 0)
			return nil, err
		}
		if ir != nil {
			span.End("", 0)
			return &mcpgo.CallToolResult{Result: mcpgo.Result{ResultType: mcpgo.ResultTypeInputRequired}, MultiRoundTripResult: *ir}, nil
		}
		out := res.(*mcpgo.CallToolResult)
		if out.IsError {
			span.End(telemetry.ErrorTool, 0)
		} else {
			span.End("", 0)
		}
		return out, nil
	}
}

// callTool runs a call of the host to the tool name: in the handler's
// goroutine for an older host, in its exchange's for a 2026-07-28 one.
func (g *Gateway) callTool(ctx context.Context, name string, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	// The host's bytes, as it sent them: a decoded and re-encoded
	// integer above 2^53 would not be the same number.
	args := req.Params.RawArguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if done := g.track(ctx, g.serverOf(name)); done != nil {
		defer done()
	}
	c := GatewayCall{Name: name, Args: args}
	var progressKey string
	var progressSent atomic.Int64
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		token := req.Params.Meta.ProgressToken
		if raw, err := json.Marshal(token); err == nil {
			progressKey = idKey(raw)
			g.progress.watch(progressKey)
		}
		x := exchangeOf(ctx)
		c.Progress = func(p wire.Progress) {
			if x != nil && x.asking() {
				// The host's first request has been answered
				// (input_required): there is no stream to send on.
				return
			}
			params := map[string]any{"progressToken": token, "progress": p.Progress}
			if p.Total > 0 {
				params["total"] = p.Total
			}
			if p.Message != "" {
				params["message"] = p.Message
			}
			if err := g.srv.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), params); err != nil {
				g.opts.Logger.V(1).Info("progress not passed on to the host", "tool", name, "error", err.Error())
				return
			}
			progressSent.Add(1)
		}
	}
	res, err := g.opts.Call(ctx, c)
	// The answer goes after the notices sent before it (progressWrites);
	// Call has returned, so no more are sent.
	if progressKey != "" {
		g.progress.wait(ctx, progressKey, int(progressSent.Load()))
	}
	if err != nil {
		return nil, err
	}
	out := &mcpgo.CallToolResult{IsError: res.IsError, Content: make([]mcpgo.Content, 0, len(res.Content))}
	for _, c := range res.Content {
		b, err := c.Block()
		if err != nil {
			return nil, fmt.Errorf("tool %q: content block: %w", name, err)
		}
		out.Content = append(out.Content, rawContent{raw: b})
	}
	if len(res.Structured) > 0 {
		out.RawStructuredContent = res.Structured
	}
	out.Meta = metaOf(res.Meta)
	return out, nil
}

// serverOf is the upstream server of the listed tool name ("": none).
func (g *Gateway) serverOf(name string) string {
	if g.opts.ServerOf == nil {
		return ""
	}
	return g.opts.ServerOf(name)
}

// track records a request of the host of ctx waiting on the server
// upstream as in flight, until done is called; nil when there is nothing
// to record. A 2026-07-28 host is recorded with the capabilities its
// request declared, and the request's exchange.
func (g *Gateway) track(ctx context.Context, upstream string) (done func()) {
	host := server.ClientSessionFromContext(ctx)
	if host == nil || upstream == "" {
		return nil
	}
	x := exchangeOf(ctx)
	if x != nil {
		host = requestHost{ClientSession: host, caps: requestCaps(ctx)}
	}
	g.mu.Lock()
	g.callSeq++
	c := &hostCall{seq: g.callSeq, host: host, server: upstream, ex: x}
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.calls = slices.DeleteFunc(g.calls, func(x *hostCall) bool { return x == c })
		g.mu.Unlock()
	}
}

// rawContent is a content block sent verbatim. It embeds TextContent only
// to be an mcpgo.Content; MarshalJSON writes raw alone.
type rawContent struct {
	mcpgo.TextContent
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// ServeStdio serves one host over in and out until in ends (the host
// closed it) or ctx ends. mcp-go keeps one stdio session per process: a
// process serves stdio once at a time.
//
// What the host sends is bounded (hostFrames): a line longer than
// GatewayOptions.MaxMessageBytes ends the connection with a
// *HostLimitError, and once GatewayOptions.MaxRequests requests are
// unanswered — the host does not read its answers, say — in is not read
// until one is answered.
//
// The goroutine reading in ends when in ends or fails. ServeStdio waits for
// it, except when it returns for another reason (ctx ended, out failed):
// then a read of in that is under way ends when in next yields, which for a
// host's stdin is when the host writes or exits.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newHostFrames(g.opts.maxMessageBytes(), g.opts.maxRequests())
	f.progress = &g.progress
	g.progress.tracking.Store(true)
	pr, pw := io.Pipe()
	pumped := make(chan error, 1)
	go func() { pumped <- f.pump(rctx, in, pw) }()

	s := server.NewStdioServer(g.srv)
	s.SetErrorLogger(logAdapter(g.opts.Logger))
	// The requests of a 2026-07-28 host that wait on its answers end with
	// the connection.
	xs := newExchanges(g.stateKey, g.opts.ExchangeTTL)
	defer xs.close()
	err := s.Listen(withHostRef(ctx, xs, stdioHost()), pr, hostOut{w: out, f: f})
	// mcp-go may leave a read of pr under way, and pump a write to it or
	// a wait for a slot: this ends them.
	pr.CloseWithError(io.EOF)
	cancel()
	var limit *HostLimitError
	if f.stopped.Load() {
		// pump is not reading in: it is returning.
		if perr := <-pumped; errors.As(perr, &limit) {
			return fmt.Errorf("serve stdio: %w", perr)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// HTTPHandler is the streamable HTTP endpoint (stateful sessions, so that
// list_changed reaches a host on its standing GET stream), at path; the
// caller wraps it with its own access checks, and closes it when it stops
// serving.
//
// A session with no request in flight for GatewayOptions.HTTPSessionIdleTTL
// is ended, so that a host killed without ending its own is forgotten (and
// asked nothing). mcp-go's own idle sweeper is not used: it counts a
// standing GET stream as idle, and would end the session of a host that
// listens and says nothing.
func (g *Gateway) HTTPHandler(path string) *GatewayHTTP {
	ttl := g.opts.HTTPSessionIdleTTL
	if ttl <= 0 {
		ttl = DefaultHTTPSessionIdleTTL
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.progress.tracking.Store(true)
	h := &GatewayHTTP{h: server.NewStreamableHTTPServer(g.srv, server.WithEndpointPath(path), server.WithStateful(true)),
		path: path, ttl: ttl, sessions: map[string]*httpSession{}, stop: cancel, swept: make(chan struct{}), log: g.opts.Logger,
		progress: &g.progress, xs: newExchanges(g.stateKey, g.opts.ExchangeTTL)}
	go h.sweep(ctx)
	return h
}

// GatewayHTTP is the gateway's streamable HTTP endpoint. Its sweeper
// goroutine runs until Close.
type GatewayHTTP struct {
	h    *server.StreamableHTTPServer
	path string
	ttl  time.Duration
	log  logr.Logger
	// progress counts the progress notices written to the hosts, so that a
	// call's answer waits for them (see progressCounting).
	progress *progressWrites

	// xs are the exchanges of the 2026-07-28 hosts' requests that asked
	// them questions; a host is told apart by clientOf.
	xs *exchanges

	mu       sync.Mutex // guards sessions
	sessions map[string]*httpSession

	stop  context.CancelFunc
	swept chan struct{} // closed when sweep returns
}

// httpSession is what GatewayHTTP knows of a host's session: whose it is,
// its requests in flight, and when the last one began or ended.
type httpSession struct {
	client   [sha256.Size]byte // clientOf the request that opened it
	inFlight int
	last     time.Time
}

// ServeHTTP serves one request of a host. A session belongs to the
// client that opened it (clientOf: the same credential, from the same
// address, with the same User-Agent): a request of any other client that
// names it is answered 404, as for a session that does not exist, and the
// session goes on for its owner.
func (h *GatewayHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if mcpgo.IsModernProtocol(r.Header.Get(server.HeaderKeyProtocolVersion)) {
		// A 2026-07-28 request belongs to no session: the revision says
		// to ignore an Mcp-Session-Id on it, so one that names another
		// host's session is neither refused nor acted on in it.
		r.Header.Del(server.HeaderKeySessionID)
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	client := clientOf(r)
	tracked := false
	if id != "" {
		var ok bool
		if tracked, ok = h.begin(id, client); !ok {
			h.log.Info("refused a request naming a session another client opened", "remote", r.RemoteAddr, "userAgent", r.UserAgent())
			http.Error(w, "Invalid session ID", http.StatusNotFound)
			return
		}
	}
	defer func() {
		if tracked {
			h.end(id)
		}
		if made := w.Header().Get(server.HeaderKeySessionID); made != "" && made != id {
			// An initialize: the session begins now, its client's.
			h.open(made, client)
		}
	}()
	r = r.WithContext(withHostRef(r.Context(), h.xs, client))
	h.h.ServeHTTP(progressCounting{ResponseWriter: w, p: h.progress}, r)
}

// progressCounting is a response as mcp-go writes it, counting the
// progress notices it carries (progressWrites.wrote), each an SSE event
// mcp-go writes whole in one Write. A call's answer waits for them: mcp-go
// v1.2.1 drops a notice its forwarder took off the queue when the answer
// is written meanwhile, and a host would miss a call's last notices.
// Tokens are counted by value, whoever the host: two hosts' calls with the
// same token at once can make one wait longer (at most progressWait) or
// less (as without the count).
type progressCounting struct {
	http.ResponseWriter
	p *progressWrites
}

func (c progressCounting) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	for line := range bytes.SplitSeq(b[:n], []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			if key := progressToken(data); key != "" {
				c.p.wrote(key)
			}
		}
	}
	return n, err
}

// Flush flushes the response, as mcp-go's streaming requires.
func (c progressCounting) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is the response written to, for http.ResponseController.
func (c progressCounting) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// clientOf identifies the client of a request, to bind the sessions it
// opens to it: the Authorization header (the token it used), the address
// it comes from (without the port: a host opens several connections) and
// its User-Agent. Only a digest is kept.
func clientOf(r *http.Request) [sha256.Size]byte {
	addr := r.RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	return sha256.Sum256([]byte(r.Header.Get("Authorization") + "\x00" + addr + "\x00" + r.UserAgent()))
}

// begin records a request of session id beginning, if the session is
// known (tracked) and belongs to client; ok is false for a session known
// to be another client's.
func (h *GatewayHTTP) begin(id string, client [sha256.Size]byte) (tracked, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil {
		// Unknown here: mcp-go answers it (404, or a new session for an
		// initialize).
		return false, true
	}
	if subtle.ConstantTimeCompare(s.client[:], client[:]) != 1 {
		return false, false
	}
	s.inFlight++
	s.last = time.Now()
	return true, true
}

// end records a request of session id ending.
func (h *GatewayHTTP) end(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil {
		s.inFlight--
		s.last = time.Now()
	}
}

// open records session id beginning, client's.
func (h *GatewayHTTP) open(id string, client [sha256.Size]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[id] = &httpSession{client: client, last: time.Now()}
}

// idle removes and returns the sessions with no request in flight since
// before now minus the TTL.
func (h *GatewayHTTP) idle(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, s := range h.sessions {
		if s.inFlight <= 0 && now.Sub(s.last) > h.ttl {
			out = append(out, id)
			delete(h.sessions, id)
		}
	}
	return out
}

// sweep ends idle sessions until ctx ends: as a host's DELETE would, so
// that mcp-go forgets them and the gateway's host list loses them.
func (h *GatewayHTTP) sweep(ctx context.Context) {
	defer close(h.swept)
	t := time.NewTicker(max(h.ttl/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, id := range h.idle(now) {
				req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.path, nil)
				if err != nil {
					continue
				}
				req.Header.Set(server.HeaderKeySessionID, id)
				rec := &discardResponse{header: http.Header{}}
				h.h.ServeHTTP(rec, req)
				h.log.V(1).Info("ended an idle http session", "idleFor", h.ttl.String(), "status", rec.status)
			}
		}
	}
}

// Close ends the sweeper and every host's session (a standing GET stream
// returns); ctx bounds the wait.
func (h *GatewayHTTP) Close(ctx context.Context) error {
	h.stop()
	<-h.swept
	// The requests waiting on their hosts' answers are cancelled, their
	// upstream calls with them.
	h.xs.close()
	if err := h.h.Shutdown(ctx); err != nil {
		return fmt.Errorf("close the http endpoint: %w", err)
	}
	return nil
}

// discardResponse is the response of a DELETE the sweeper makes: its
// status is kept, its body dropped.
type discardResponse struct {
	header http.Header
	status int
}

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) WriteHeader(status int)      { d.status = status }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }

// HostQuestion is an elicitation the gateway puts to its host.
type HostQuestion struct {
	Message string
	// Schema is the requested schema (a flat object of primitive
	// properties); nil asks for no content, only accept or decline.
	Schema json.RawMessage
}

// AskHost puts q to the host of the call whose ctx this is (a tools/call
// handler's context, as GatewayOptions.Call gets it). It returns
// ErrHostCannotElicit when that host did not declare the capability.
//
// For a host on 2026-07-28 (the request's exchange is in ctx) the
// question goes as an input request under the key "approval", answered
// by the host's retry (see gateway_mrtr.go); a host that does not retry
// in time is taken to have cancelled.
func AskHost(ctx context.Context, q HostQuestion) (ElicitResult, error) {
	if x := exchangeOf(ctx); x != nil {
		if !canElicitForm(requestHost{caps: requestCaps(ctx)}) {
			return ElicitResult{}, ErrHostCannotElicit
		}
		params, err := formParams(q)
		if err != nil {
			return ElicitResult{}, err
		}
		return askExchange(ctx, x, "approval", params)
	}
	srv := server.ServerFromContext(ctx)
	s := server.ClientSessionFromContext(ctx)
	if srv == nil || s == nil || !canElicitForm(s) {
		return ElicitResult{}, ErrHostCannotElicit
	}
	return elicitHost(ctx, srv, q)
}

// Elicit forwards e, an upstream server's elicitation, to a host and
// returns its answer: to the host of the latest call in flight to e.Server
// that can show e's mode (a server asks while a call waits on it) or, when
// no call to e.Server is in flight, to the most recently connected host
// that can. ErrHostCannotElicit when there is none: when calls to
// e.Server are in flight and none of their hosts can show it, no other
// host is asked. The answer is not checked here: the upstream session
// checks it against e's form.
func (g *Gateway) Elicit(ctx context.Context, e *Elicitation) (ElicitResult, error) {
	res, _, err := g.ElicitBy(ctx, e)
	return res, err
}

// ElicitBy is Elicit, and also names the host that was asked (as
// GatewayHost does; "" when it gave no name or none was asked).
func (g *Gateway) ElicitBy(ctx context.Context, e *Elicitation) (_ ElicitResult, by string, _ error) {
	can := canElicitForm
	if e.Mode == ElicitURL {
		can = canElicitURL
	}
	host, x := g.hostFor(e.Server, can)
	if host == nil {
		return ElicitResult{}, "", ErrHostCannotElicit
	}
	by = hostName(host)
	if x != nil {
		// A 2026-07-28 host: the question goes in the answer to its
		// request (input_required), under the key the server gave it if
		// it asked that way (it is the only question of the round).
		params := mcpgo.ElicitationParams{Mode: mcpgo.ElicitationModeURL, Message: fmt.Sprintf("%s asks: %s", e.Server, e.Message),
			URL: e.URL, ElicitationID: e.ElicitationID}
		if e.Mode != ElicitURL {
			q := HostQuestion{Message: params.Message}
			if e.Form != nil {
				q.Schema = e.Form.Schema
			}
			var err error
			if params, err = formParams(q); err != nil {
				return ElicitResult{}, by, err
			}
		}
		key := "elicitation"
		if e.InputKey != "" && e.InputKey != "approval" {
			key = e.InputKey
		}
		res, err := elicitExchange(ctx, x, key, params, g.opts.Logger.WithValues("server", e.Server))
		return res, by, err
	}
	ctx = g.srv.WithContext(ctx, host)
	if e.Mode == ElicitURL {
		res, err := g.srv.RequestURLElicitation(ctx, host, e.ElicitationID, e.URL, fmt.Sprintf("%s asks: %s", e.Server, e.Message))
		if err != nil {
			return ElicitResult{}, by, fmt.Errorf("ask the host: %w", err)
		}
		return ElicitResult{Action: ElicitAction(res.Action)}, by, nil
	}
	q := HostQuestion{Message: fmt.Sprintf("%s asks: %s", e.Server, e.Message)}
	if e.Form != nil {
		q.Schema = e.Form.Schema
	}
	res, err := elicitHost(ctx, g.srv, q)
	return res, by, err
}

// hostFor is the host a question of upstream goes to (see Elicit), of
// those can accepts, and the exchange of the request it waits on when
// the host is on 2026-07-28; nil when none.
func (g *Gateway) hostFor(upstream string, can func(server.ClientSession) bool) (server.ClientSession, *exchange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	waiting := false
	for _, c := range slices.Backward(g.calls) {
		if c.server != upstream {
			continue
		}
		waiting = true
		if can(c.host) {
			return c.host, c.ex
		}
	}
	if waiting {
		return nil, nil
	}
	for _, h := range slices.Backward(g.hosts) {
		if can(h) {
			return h, nil
		}
	}
	return nil, nil
}

// formParams is q as a form-mode elicitation.
func formParams(q HostQuestion) (mcpgo.ElicitationParams, error) {
	schema := q.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var requested any
	if err := json.Unmarshal(schema, &requested); err != nil {
		return mcpgo.ElicitationParams{}, fmt.Errorf("requested schema: %w", err)
	}
	return mcpgo.ElicitationParams{Mode: mcpgo.ElicitationModeForm, Message: q.Message, RequestedSchema: requested}, nil
}

func elicitHost(ctx context.Context, srv *server.MCPServer, q HostQuestion) (ElicitResult, error) {
	params, err := formParams(q)
	if err != nil {
		return ElicitResult{}, err
	}
	req := mcpgo.ElicitationRequest{Params: params}
	res, err := srv.RequestElicitation(ctx, req)
	if err != nil {
		return ElicitResult{}, fmt.Errorf("ask the host: %w", err)
	}
	out := ElicitResult{Action: ElicitAction(res.Action)}
	if m, ok := res.Content.(map[string]any); ok {
		out.Content = m
	}
	return out, nil
}

// canElicitForm reports whether s declared form-mode elicitation: "form",
// or the capability with no mode at all (which means form).
func canElicitForm(s server.ClientSession) bool {
	ci, ok := s.(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	e := ci.GetClientCapabilities().Elicitation
	return e != nil && (e.Form != nil || e.URL == nil)
}

func canElicitURL(s server.ClientSession) bool {
	ci, ok := s.(server.SessionWithClientInfo)
	return ok && ci.GetClientCapabilities().Elicitation != nil && ci.GetClientCapabilities().Elicitation.URL != nil
}

// logAdapter is a *log.Logger for mcp-go's stdio server that writes to log.
func logAdapter(l logr.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

type logWriter struct{ l logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Info("mcp server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// metaOf is a _meta object for mcp-go (nil: none, or not an object).
// Numbers are kept as written (json.Number), not rounded to float64.
func metaOf(raw json.RawMessage) *mcpgo.Meta {
	m := metaMap(raw)
	if m == nil {
		return nil
	}
	return mcpgo.NewMetaFromMap(m)
}

// metaMap is a _meta object as a map, its numbers as written; nil for
// none or anything but an object.
func metaMap(raw json.RawMessage) map[string]any {
	if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// GatewayHost names the host of a gateway request's session, from the
// clientInfo it sent at initialize ("claude-code 2.1.0"); "" when ctx is
// not a gateway request's or the host sent none. It is what the host says
// it is, bounded to 64 bytes.
func GatewayHost(ctx context.Context) string {
	return hostName(server.ClientSessionFromContext(ctx))
}

// hostName is GatewayHost of the host session h.
func hostName(h server.ClientSession) string {
	s, ok := h.(server.SessionWithClientInfo)
	if !ok {
		return ""
	}
	ci := s.GetClientInfo()
	name := strings.TrimSpace(ci.Name + " " + ci.Version)
	if len(name) > 64 {
		name = strings.ToValidUTF8(name[:64], "")
	}
	return name
}
