package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The gateway is FreeCode speaking MCP as a server: one endpoint (stdio or
// streamable HTTP) for a host, in front of every configured server. This
// file is its protocol side; what it exposes and how calls run is the
// caller's (package gateway), through GatewayOptions and SetTools.

// GatewayTool is one tool as the gateway lists it.
type GatewayTool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is a self-contained JSON Schema object; nil means
	// {"type":"object"}.
	InputSchema json.RawMessage
	// Annotations is the source's annotations object verbatim (nil if
	// none); the hints the protocol defines are passed on.
	Annotations json.RawMessage
}

// GatewayProgress is how far a call got, to be passed to the host.
type GatewayProgress struct {
	Progress, Total float64
	Message         string
}

// GatewayCall is one tools/call of the host.
type GatewayCall struct {
	// Name is the tool's name as the gateway lists it.
	Name string
	// Args is the arguments object ({} when the host sent none).
	Args json.RawMessage
	// Progress passes a progress notice on to the host; nil when the host
	// asked for none. It must not block and may be called until the call
	// returns.
	Progress func(GatewayProgress)
}

// GatewayResult is the outcome of a call, as the host gets it.
type GatewayResult struct {
	// Content holds the result's content blocks, each a JSON object sent
	// verbatim.
	Content []json.RawMessage
	// Structured is the structured content (nil: none).
	Structured json.RawMessage
	IsError    bool
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
	Call func(ctx context.Context, c GatewayCall) (GatewayResult, error)
	// Read reads a listed resource (a resource's URI, or one a template
	// makes); GetPrompt gets a listed prompt. nil: not offered.
	Read      func(ctx context.Context, uri string) ([]GatewayContents, error)
	GetPrompt func(ctx context.Context, name string, args map[string]string) (description string, msgs []GatewayMessage, err error)
	Logger    logr.Logger
}

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
	tools []GatewayTool
	// resources, templates and prompts are the listed features; the Set
	// flags say they were set once (mcp-go declares no list before).
	resources   []GatewayResource
	templates   []GatewayTemplate
	prompts     []GatewayPrompt
	featuresSet bool
	promptsSet  bool
	// hosts are the initialized sessions, oldest first.
	hosts []server.ClientSession
}

// NewGateway returns a gateway listing no tools until SetTools.
func NewGateway(opts GatewayOptions) *Gateway {
	g := &Gateway{opts: opts}
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcpgo.InitializeRequest, res *mcpgo.InitializeResult) {
		if opts.Instructions != nil && res != nil {
			res.Instructions = opts.Instructions()
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
	sopts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(false, true),
		server.WithPromptCapabilities(true),
		server.WithHooks(hooks),
		server.WithRecovery(),
	}
	g.srv = server.NewMCPServer(opts.Name, opts.Version, sopts...)
	return g
}

// SetTools makes tools the listed set and reports whether it changed: the
// host is sent notifications/tools/list_changed only then. Two lists are
// the same when they hold the same tools, compared field by field and
// byte by byte, whatever their order; so a server restart that brings the
// same tools back sends nothing. It has one caller at a time (see
// Gateway).
func (g *Gateway) SetTools(tools []GatewayTool) (changed bool) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b GatewayTool) int {
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

func sameGatewayTool(a, b GatewayTool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.Annotations, b.Annotations)
}

// mcpTool is t for mcp-go: the schema raw, the annotations' hints typed
// (mcp-go models no others).
func mcpTool(t GatewayTool) mcpgo.Tool {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	out := mcpgo.Tool{Name: t.Name, Title: t.Title, Description: t.Description, RawInputSchema: schema}
	if len(t.Annotations) > 0 {
		// Annotations that do not decode are a server's mistake: the
		// tool is listed without them.
		_ = json.Unmarshal(t.Annotations, &out.Annotations)
	}
	return out
}

func (g *Gateway) handler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// The host's bytes, as it sent them: a decoded and re-encoded
		// integer above 2^53 would not be the same number.
		args := req.Params.RawArguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		c := GatewayCall{Name: name, Args: args}
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			token := req.Params.Meta.ProgressToken
			c.Progress = func(p GatewayProgress) {
				params := map[string]any{"progressToken": token, "progress": p.Progress}
				if p.Total > 0 {
					params["total"] = p.Total
				}
				if p.Message != "" {
					params["message"] = p.Message
				}
				if err := g.srv.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), params); err != nil {
					g.opts.Logger.V(1).Info("progress not passed on to the host", "tool", name, "error", err.Error())
				}
			}
		}
		res, err := g.opts.Call(ctx, c)
		if err != nil {
			return nil, err
		}
		out := &mcpgo.CallToolResult{IsError: res.IsError, Content: make([]mcpgo.Content, 0, len(res.Content))}
		for _, b := range res.Content {
			out.Content = append(out.Content, rawContent{raw: b})
		}
		if len(res.Structured) > 0 {
			out.RawStructuredContent = res.Structured
		}
		return out, nil
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
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(g.srv)
	s.SetErrorLogger(logAdapter(g.opts.Logger))
	if err := s.Listen(ctx, in, out); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// HTTPHandler is the streamable HTTP endpoint (stateful sessions, so that
// list_changed reaches a host on its standing GET stream), at path; the
// caller wraps it with its own access checks, and closes it when it stops
// serving.
func (g *Gateway) HTTPHandler(path string) *GatewayHTTP {
	return &GatewayHTTP{h: server.NewStreamableHTTPServer(g.srv, server.WithEndpointPath(path), server.WithStateful(true))}
}

// GatewayHTTP is the gateway's streamable HTTP endpoint.
type GatewayHTTP struct {
	h *server.StreamableHTTPServer
}

func (h *GatewayHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Close ends every host's session (a standing GET stream returns) and
// whatever the endpoint runs of its own; ctx bounds the wait.
func (h *GatewayHTTP) Close(ctx context.Context) error {
	if err := h.h.Shutdown(ctx); err != nil {
		return fmt.Errorf("close the http endpoint: %w", err)
	}
	return nil
}

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
func AskHost(ctx context.Context, q HostQuestion) (ElicitResult, error) {
	srv := server.ServerFromContext(ctx)
	s := server.ClientSessionFromContext(ctx)
	if srv == nil || s == nil || !canElicit(s) {
		return ElicitResult{}, ErrHostCannotElicit
	}
	return elicitHost(ctx, srv, q)
}

// Elicit forwards e, an upstream server's elicitation, to the most recently
// connected host that declared the elicitation capability, and returns its
// answer; ErrHostCannotElicit when there is none. The answer is not
// checked here: the upstream session checks it against e's form.
func (g *Gateway) Elicit(ctx context.Context, e *Elicitation) (ElicitResult, error) {
	g.mu.Lock()
	var host server.ClientSession
	for _, h := range slices.Backward(g.hosts) {
		if canElicit(h) {
			host = h
			break
		}
	}
	g.mu.Unlock()
	if host == nil || e.Mode == ElicitURL && !canElicitURL(host) {
		return ElicitResult{}, ErrHostCannotElicit
	}
	ctx = g.srv.WithContext(ctx, host)
	if e.Mode == ElicitURL {
		res, err := g.srv.RequestURLElicitation(ctx, host, e.ElicitationID, e.URL, fmt.Sprintf("%s asks: %s", e.Server, e.Message))
		if err != nil {
			return ElicitResult{}, fmt.Errorf("ask the host: %w", err)
		}
		return ElicitResult{Action: ElicitAction(res.Action)}, nil
	}
	q := HostQuestion{Message: fmt.Sprintf("%s asks: %s", e.Server, e.Message)}
	if e.Form != nil {
		q.Schema = e.Form.Schema
	}
	return elicitHost(ctx, g.srv, q)
}

func elicitHost(ctx context.Context, srv *server.MCPServer, q HostQuestion) (ElicitResult, error) {
	schema := q.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var requested any
	if err := json.Unmarshal(schema, &requested); err != nil {
		return ElicitResult{}, fmt.Errorf("requested schema: %w", err)
	}
	req := mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{Mode: mcpgo.ElicitationModeForm, Message: q.Message, RequestedSchema: requested}}
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

func canElicit(s server.ClientSession) bool {
	ci, ok := s.(server.SessionWithClientInfo)
	return ok && ci.GetClientCapabilities().Elicitation != nil
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
