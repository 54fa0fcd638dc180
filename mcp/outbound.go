package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/telemetry"
)

// outbound sends the session's own requests (lists, calls, reads) over its
// client: it numbers them (seq), gives them the protocol's _meta and
// headers, bounds the lists, follows the progress of the calls in flight
// (progress) and tells the server of the requests abandoned. What to do
// about a failure (the process's exit, a lost connection) is the session's.
//
// client and proto are set by the handshake, on Connect's goroutine, and
// read-only once Connect returned; the other fields are set by
// newOutbound.
type outbound struct {
	srv        Spec
	clientInfo mcpgo.Implementation // Options.ClientName and ClientVersion
	log        logr.Logger          // the session's
	mask       *urlMask
	limits     *limitTrip
	// ctx and life are the session's: a cancellation notice is background
	// work within ctx, which the session's end waits for.
	ctx  context.Context
	life *lifetime
	// tools are the listed tools, whose x-mcp-header annotations a
	// tools/call over HTTP follows; in declares the roots.
	tools *toolList
	in    *inbound
	// lost is told of each failure of a request that may mean the
	// connection is gone (Session.connectionLost).
	lost func(error)

	client *client.Client
	proto  string // the protocol revision client speaks

	seq      atomic.Uint64 // numbers the requests (and progress tokens)
	progress progressWatches
	// fresh says which lists are still fresh (2026-07-28 caching hints);
	// listPages sets it.
	fresh listFreshness
	// meta is requestMeta's capabilities and client info, encoded once a
	// client is connected: the same on every request of a session, so
	// not marshalled by reflection on each.
	meta atomic.Pointer[encodedMeta]
	// tel spans the requests (Options.Telemetry; nil: off).
	tel *telemetry.Telemetry
}

// encodedMeta is the part of a 2026-07-28 request's _meta that is the
// same on every request of the session, at version.
type encodedMeta struct {
	version    string
	caps, info json.RawMessage
	// all is the whole _meta of a request with no key of its own
	// (requestMeta's, encoded): what most requests send. It is a
	// json.RawMessage held in an interface once, so that putting it in a
	// request's params allocates nothing. raw is the same bytes.
	all any
	raw json.RawMessage
}

func newOutbound(ctx context.Context, srv Spec, opts Options, log logr.Logger, mask *urlMask, limits *limitTrip, life *lifetime,
	tools *toolList, in *inbound, lost func(error)) *outbound {
	return &outbound{srv: srv, clientInfo: mcpgo.Implementation{Name: opts.ClientName, Version: opts.ClientVersion},
		log: log, mask: mask, limits: limits, ctx: ctx, life: life, tools: tools, in: in, lost: lost, tel: opts.Telemetry}
}

// send sends req, one of the session's own requests, through the
// transport: under its CLIENT span when telemetry is on, and with ctx's
// trace context (the span's, or a host's) in its _meta either way. Every
// request the session makes itself goes through here; initialize and
// server/discover, which mcp-go's client sends, have their spans in
// handshake.
func (o *outbound) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	params, _ := req.Params.(map[string]any)
	r := telemetry.Request{Method: req.Method, Server: o.srv.Name, Transport: o.transportName(), Protocol: o.proto}
	switch req.Method {
	case string(mcpgo.MethodToolsCall):
		r.Tool, _ = params["name"].(string)
	case string(mcpgo.MethodPromptsGet):
		r.Prompt, _ = params["name"].(string)
	}
	if o.tel.On() {
		r.ID = req.ID.String()
	}
	ctx, span := o.tel.StartClient(ctx, r)
	telemetry.InjectMeta(ctx, params)
	resp, err := o.client.GetTransport().SendRequest(ctx, req)
	if r.Tool != "" && span.Recording() && o.tel.RecordsArguments(o.srv.Name) {
		// The user asked for this server's calls in full (its
		// arguments and result), and nothing else: no header, no env.
		args, _ := json.Marshal(params["arguments"])
		var result []byte
		if err == nil && resp.Error == nil {
			result = resp.Result
		}
		span.RecordCall(args, result)
	}
	switch {
	case err != nil:
		span.End(requestErrorType(ctx, err), 0)
	case resp.Error != nil:
		span.End(strconv.Itoa(resp.Error.Code), resp.Error.Code)
	case span.Recording() && req.Method == string(mcpgo.MethodToolsCall) && isToolError(resp.Result):
		span.End(telemetry.ErrorTool, 0)
	default:
		span.End("", 0)
	}
	return resp, err
}

// transportName is network.transport of the session's link.
func (o *outbound) transportName() string {
	if o.srv.Type == Remote {
		return telemetry.TransportTCP
	}
	return telemetry.TransportPipe
}

// requestErrorType is error.type of a request that failed to get an
// answer.
func requestErrorType(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return telemetry.ErrorType(ctx, err)
	}
	if errors.Is(err, ErrNeedsLogin) || errors.Is(err, ErrInsufficientScope) || isAuthFlow(err) {
		return "auth"
	}
	return telemetry.ErrorTransport
}

// isToolError reports whether a tools/call result says isError (decoded
// only for a recording span).
func isToolError(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}
