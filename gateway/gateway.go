// Package gateway is `freecode mcp serve`: every configured server's tools
// behind one MCP endpoint (stdio, or streamable HTTP) for any host. It
// attaches to the `freecode serve` of the home when one runs, so that every
// host shares one set of running servers, and otherwise runs the servers
// itself (serve.Core) for as long as its host is connected. Either way it
// goes through one api.Engine, and behaves the same: what it lists and
// answers is the Engine's answers, a call's approval and the elicitations
// of the servers its calls wait on are put to the host and answered
// through the Engine.
//
// What it lists is the provider-facing definitions (Engine.Tools) joined
// with the rest of each tool as its server lists it (Engine.ServerTools),
// so every filter and budget that shapes those definitions shapes the
// gateway's list too. MCP tool ids lose their "mcp__" prefix
// (mcp__github__create_issue is listed as github__create_issue), so that a
// host adding its own prefix does not stutter. Calls go through the
// Engine's orchestrator and its permission rules.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
)

// ToolSearch is the id of the built-in that loads deferred tools: listed
// whenever the definitions hold it, with or without Options.Builtins.
const ToolSearch = "tool_search"

// mcpPrefix starts every MCP tool's id.
const mcpPrefix = "mcp__"

// StartupWait bounds how long the gateway waits for the servers' first
// starts before it answers its host: a server slower than that joins the
// list later, with a list_changed.
const StartupWait = 20 * time.Second

// HTTPPath is the path of the streamable HTTP endpoint.
const HTTPPath = "/mcp"

// Options configure Run.
type Options struct {
	// Builtins lists the built-in tools (read, write) too.
	Builtins bool
	// Version is what the gateway tells its host it is.
	Version string
	// Stdin and Stdout are the stdio transport, used when HTTP is nil:
	// the gateway ends when Stdin does.
	Stdin  io.Reader
	Stdout io.Writer
	// HTTP, when set, serves streamable HTTP on it instead, at HTTPPath,
	// to requests bearing Token, until ctx ends.
	HTTP  net.Listener
	Token string
	// Server, when set, fronts that one server alone: its tools, resources,
	// templates and prompts under their own names and URIs (no
	// "<server>__" prefix, no ResourcePrefix), its instructions as they
	// are; the built-ins and tool_search are not listed. The caller checks
	// that the server is configured.
	Server string
	// ConfigPath names the config file in the remedies of refused calls.
	ConfigPath string
	Logger     logr.Logger
	// Telemetry gives each host's tools/call a SERVER span under the
	// host's trace context (nil: off); the context goes on to the engine
	// either way, in process or over serve's socket.
	Telemetry *telemetry.Telemetry

	// What a host may send. MaxMessageBytes bounds one message, a stdio
	// line or an HTTP request body: the config's mcp.limits.maxMessageBytes
	// (0: mcp.DefaultGatewayMaxMessageBytes). MaxRequests bounds a stdio
	// host's requests in flight (0: mcp.DefaultGatewayMaxRequests).
	MaxMessageBytes int64
	MaxRequests     int
	// HTTPReadTimeout bounds reading an HTTP request's body,
	// HTTPIdleTimeout a kept-alive connection with no request, and
	// HTTPMaxConns the connections open at once (0: the Default*).
	HTTPReadTimeout time.Duration
	HTTPIdleTimeout time.Duration
	HTTPMaxConns    int
}

// exposed is the list the gateway answers: the tools, and by listed name
// the tool id each stands for.
type exposed struct {
	tools []wire.Tool
	ids   map[string]string
}

// expose decides what the gateway lists from the definitions ds and the
// tools they define, by id: every MCP tool under its id without "mcp__",
// the built-ins only with builtins, except ToolSearch, always listed when
// present. With only set, the tools of that server alone, under their own
// names, and nothing else.
func expose(ds []defs.Def, tools map[string]wire.Tool, builtins bool, only string) exposed {
	out := exposed{ids: make(map[string]string, len(ds))}
	for _, d := range ds {
		name, isMCP := strings.CutPrefix(d.Name, mcpPrefix)
		if only != "" {
			server, tool, ok := splitID(d.Name)
			if !ok || server != only {
				continue
			}
			name = tool
		} else if !isMCP && !builtins && d.Name != ToolSearch {
			continue
		}
		out.tools = append(out.tools, hostTool(name, d, tools[d.Name]))
		out.ids[name] = d.Name
	}
	return out
}

// hostTool is the tool d defines as the host sees it, named name (its ID
// the tool's id): the
// definition's description and input schema (what every filter and budget
// shaped) with the rest of the tool t as its server lists it: title,
// annotations, and the server's object (outputSchema, icons, _meta); zero
// for a tool no server lists (a built-in).
func hostTool(name string, d defs.Def, t wire.Tool) wire.Tool {
	t.ID, t.Name, t.Description, t.InputSchema = d.Name, name, d.Description, d.InputSchema
	return t
}

// gateway joins an engine to the MCP server side.
type gateway struct {
	eng  engine
	srv  *mcp.Gateway
	opts Options
	// alone reports whether the gateway is its engine's only client (the
	// engine runs in this process): an elicitation none of its hosts can
	// show is declined then, as nobody else could answer it.
	alone func() bool
	// subscribed is closed once watch's event stream is in place; calls
	// wait for it, so that none misses its approval.
	subscribed chan struct{}
	subOnce    sync.Once

	// ids numbers the calls.
	ids *callIDs

	mu sync.Mutex // guards calls, asked and each call's noHost
	// calls are the hosts' calls in flight, by call id.
	calls map[string]*hostCall
	// asked ends the questions put to hosts, by "approval <id>" or
	// "elicitation <id>", when their approval or elicitation ends.
	asked map[string]context.CancelCauseFunc

	// meta is the last known tool of each listed definition, by tool id:
	// a tool still defined while its server's list cannot be read keeps
	// its title and annotations, so that the answered list does not
	// change (and the host hears no list_changed) when nothing did. Only
	// list reads and writes it, and list has one caller at a time (the
	// gateway's relist).
	meta map[string]wire.Tool
	// current holds the last list, for calls to look names up, and
	// instructions the merged instructions of the last list: one-slot
	// channels, taken and put back, so each is its own lock. relist
	// writes them (sync's goroutine, or serve's before it), calls and
	// initialize read them.
	current      chan exposed
	instructions chan string
	// refresh is sync's coalescing trigger (poke).
	refresh chan struct{}
}

// newGateway is the gateway of eng; alone as gateway.alone.
func newGateway(eng engine, alone func() bool, opts Options) *gateway {
	g := &gateway{eng: eng, alone: alone, opts: opts, current: make(chan exposed, 1), refresh: make(chan struct{}, 1), instructions: make(chan string, 1),
		subscribed: make(chan struct{}), calls: map[string]*hostCall{}, asked: map[string]context.CancelCauseFunc{}, meta: map[string]wire.Tool{},
		ids: newCallIDs()}
	g.current <- exposed{}
	g.instructions <- ""
	g.srv = mcp.NewGateway(mcp.GatewayOptions{Name: "freecode", Version: opts.Version, Call: g.call, Logger: opts.Logger.WithName("mcp"),
		MaxMessageBytes: opts.MaxMessageBytes, MaxRequests: opts.MaxRequests, Telemetry: opts.Telemetry,
		Read: g.read, GetPrompt: g.getPrompt, Complete: g.complete, ServerOf: g.serverOf, PromptServerOf: g.promptServerOf, Instructions: func() string {
			s := <-g.instructions
			g.instructions <- s
			return s
		}})
	return g
}

// poke asks sync to look again; it never blocks.
func (g *gateway) poke() {
	select {
	case g.refresh <- struct{}{}:
	default:
	}
}

// lookup returns the tool id a listed name stands for.
func (g *gateway) lookup(name string) (string, bool) {
	e := <-g.current
	g.current <- e
	id, ok := e.ids[name]
	return id, ok
}

// serverOf names the MCP server the calls of a listed tool go to ("" for
// a built-in or an unknown name).
func (g *gateway) serverOf(name string) string {
	id, ok := g.lookup(name)
	if !ok {
		return ""
	}
	server, _, _ := splitID(id)
	return server
}

// relist hands the engine's current list to the MCP side, which tells
// the host only of a real change. It runs on one goroutine at a time
// (serve's before sync starts, then sync's), as mcp.Gateway's Set methods
// and list require.
func (g *gateway) relist(ctx context.Context) {
	ds, tools, f, err := g.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.opts.Logger.Error(err, "cannot list the tools; keeping the last list")
		}
		return
	}
	e := expose(ds, tools, g.opts.Builtins, g.opts.Server)
	<-g.current
	g.current <- e
	if g.srv.SetTools(e.tools) {
		g.opts.Logger.V(1).Info("tools changed", "tools", len(e.tools))
	}
	rs, ts, ps := exposeFeatures(f, g.opts.Server)
	if g.srv.SetResources(rs, ts) {
		g.opts.Logger.V(1).Info("resources changed", "resources", len(rs), "templates", len(ts))
	}
	if g.srv.SetPrompts(ps) {
		g.opts.Logger.V(1).Info("prompts changed", "prompts", len(ps))
	}
	if on := f.completes(g.opts.Server); g.srv.SetCompletions(on) {
		g.opts.Logger.V(1).Info("completions changed", "offered", on)
	}
	<-g.instructions
	if g.opts.Server != "" {
		g.instructions <- f.instructions[g.opts.Server]
	} else {
		g.instructions <- mergeInstructions(f.instructions)
	}
}

// sync keeps the listed set in line with the engine until ctx ends: it
// re-lists on every poke.
func (g *gateway) sync(ctx context.Context) {
	for {
		g.relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-g.refresh:
		}
	}
}

func (g *gateway) call(ctx context.Context, c mcp.GatewayCall) (wire.CallResult, error) {
	id, ok := g.lookup(c.Name)
	if !ok {
		return wire.ErrorResult(fmt.Sprintf("unknown tool %q: the gateway lists no tool of that name (any more)", c.Name)), nil
	}
	res, err := g.run(ctx, id, c.Args, c.Progress)
	if id == ToolSearch {
		// It may have loaded tools into the definitions: look again.
		g.poke()
	}
	if err != nil {
		return wire.CallResult{}, err
	}
	if id == ToolSearch {
		res = searchForHost(res)
	}
	return res, nil
}

// searchForHost renames the tools a tool_search result names (its
// structured "tools" list, and the same ids in its text) to the names the
// host knows them by, without "mcp__". The structured content's other
// fields, and each tool's, are kept as they are.
func searchForHost(r wire.CallResult) wire.CallResult {
	var s map[string]json.RawMessage
	if json.Unmarshal(r.Structured, &s) != nil {
		return r
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(s["tools"], &tools) != nil || len(tools) == 0 {
		return r
	}
	var pairs []string
	for _, t := range tools {
		var id string
		if json.Unmarshal(t["name"], &id) != nil || !strings.HasPrefix(id, mcpPrefix) {
			continue
		}
		name := strings.TrimPrefix(id, mcpPrefix)
		if b, err := json.Marshal(name); err == nil {
			t["name"] = b
		}
		// "1. <id>:" is how the text names a match.
		pairs = append(pairs, ". "+id+":", ". "+name+":")
	}
	if b, err := json.Marshal(tools); err == nil {
		s["tools"] = b
		if b, err := json.Marshal(s); err == nil {
			r.Structured = b
		}
	}
	rename := strings.NewReplacer(pairs...)
	out := r
	out.Content = make([]wire.Content, len(r.Content))
	for i, c := range r.Content {
		if c.Type == wire.ContentText {
			c.Text = rename.Replace(c.Text)
			c.Raw = nil
		}
		out.Content[i] = c
	}
	return out
}

// serve runs the transport and the list's upkeep until the host is gone
// (stdio) or ctx ends, then returns.
func (g *gateway) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The host waits for its initialize answer meanwhile.
	sctx, scancel := context.WithTimeout(ctx, StartupWait)
	settle(sctx, g.eng)
	scancel()
	g.relist(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.sync(ctx)
	}()
	defer func() { <-done }()
	watchDone := make(chan error, 1)
	go func() {
		err := g.watch(ctx, g.poke)
		if err != nil && ctx.Err() == nil {
			cancel(err)
		}
		watchDone <- err
	}()
	defer func() { <-watchDone }()
	defer cancel(nil)

	if g.opts.HTTP != nil {
		return g.serveHTTP(ctx)
	}
	err := g.srv.ServeStdio(ctx, g.opts.Stdin, g.opts.Stdout)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// HTTPShutdownWait bounds how long the gateway waits, when it stops, for
// the HTTP requests in flight to end before it closes their connections.
const HTTPShutdownWait = 5 * time.Second

// serveHTTP serves streamable HTTP on opts.HTTP until ctx ends. Every
// request's context is a child of ctx, so that a host's standing GET
// stream and its calls end with it and the shutdown does not wait for
// them until HTTPShutdownWait.
//
// A request a browser could have been made to send (guardOrigin) is
// refused before its token is looked at, and one without the token
// (requireToken) before anything else.
//
// What a host may send is bounded: at most HTTPMaxConns connections at
// once (more wait to be accepted), headers within HTTPHeaderTimeout, a
// body of at most MaxMessageBytes within HTTPReadTimeout (boundBody), and
// a connection with no request is closed after HTTPIdleTimeout. Answers
// are not bounded in time: a GET stream, or a call's, stays open.
func (g *gateway) serveHTTP(ctx context.Context) error {
	endpoint := g.srv.HTTPHandler(HTTPPath)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, endpoint)
	limits := g.httpLimits()
	hs := &http.Server{Handler: guardOrigin(requireToken(g.opts.Token, boundBody(limits, mux))), ReadHeaderTimeout: HTTPHeaderTimeout,
		IdleTimeout: limits.idle, BaseContext: func(net.Listener) context.Context { return ctx }}
	ln := netutil.LimitListener(g.opts.HTTP, limits.conns)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		_ = endpoint.Close(context.Background())
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), HTTPShutdownWait)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		g.opts.Logger.Info("http requests still running at the shutdown deadline; closing their connections", "error", err.Error())
	} else {
		g.opts.Logger.V(1).Info("http requests ended")
	}
	_ = hs.Close()
	if err := endpoint.Close(sctx); err != nil {
		g.opts.Logger.Info("could not close every http session", "error", err.Error())
	}
	<-errc
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}
