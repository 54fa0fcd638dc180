package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// The failures a server's requests get when FreeCode does not serve them.
const (
	// samplingRefusal answers sampling/createMessage. Sampling is
	// deprecated in the current revision and FreeCode does not declare
	// it, so no server should ask; one that does learns why it fails.
	samplingRefusal = "sampling/createMessage is not supported by FreeCode: it declares no sampling capability"
	// noElicitation answers elicitation/create when nothing can answer it
	// (Options.Elicit is nil): the capability was not declared either.
	noElicitation = "elicitation/create is not supported by this FreeCode session: it declared no elicitation capability (nothing here can answer)"
)

// inbound serves the requests a server sends the session, and the
// cancellation of them, beside mcp-go's own dispatch (see newClient):
// elicitation through Options.Elicit, roots/list from Spec.Roots, and the
// refusal of sampling. It makes the session's mcp-go clients, and so knows
// whether the transport can carry elicitations (canElicit). Its fields
// but canElicit and those mu guards are set by newInbound, read-only.
//
// mcp-go runs each request's handler on a goroutine of its own, so an
// elicitation that waits for a person holds up nothing else; over
// streamable HTTP, though, it gives the handler 30 seconds and sends the
// answer within them, too short for a person: there the answer is sent by
// answeringHTTP instead.
type inbound struct {
	srv     Spec
	elicitH ElicitHandler // Options.Elicit; nil answers none
	// elicitTimeout is Options.ElicitTimeout, with its default applied.
	elicitTimeout time.Duration
	timeout       time.Duration // Spec.Timeout: bounds posting an answer
	log           logr.Logger   // the session's
	mask          *urlMask
	// ctx is the session's: an elicitation whose answer is posted
	// (answeringHTTP) runs within it. life registers the elicitations as
	// background work that the session's end waits for.
	ctx  context.Context
	life *lifetime

	// canElicit says the session can serve the server's elicitation/create
	// requests (Options.Elicit, a transport that carries them); set by
	// newClient, read by the handshake, both on Connect's goroutine.
	canElicit bool

	mu      sync.Mutex                         // guards live and pending
	live    map[string]context.CancelCauseFunc // requests being answered, by JSON-RPC id
	pending int                                // elicitations reserved (reserve), at most MaxPendingElicitations
}

// MaxPendingElicitations bounds the elicitations of one session that wait
// for an answer at once; a server that asks more gets an error for each
// one beyond (a person answers one question at a time, and each waits up
// to its timeout).
const MaxPendingElicitations = 8

// tooManyElicitations answers an elicitation beyond MaxPendingElicitations.
func tooManyElicitations() string {
	return fmt.Sprintf("too many elicitations at once: FreeCode keeps at most %d of a session waiting for an answer (mcp.MaxPendingElicitations); ask again once one is answered", MaxPendingElicitations)
}

// reserve takes one of the MaxPendingElicitations places, or reports
// false when none is free; release gives it back.
func (in *inbound) reserve() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.pending >= MaxPendingElicitations {
		return false
	}
	in.pending++
	return true
}

func (in *inbound) release() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.pending--
}

func newInbound(ctx context.Context, srv Spec, opts Options, log logr.Logger, mask *urlMask, life *lifetime) *inbound {
	timeout := opts.ElicitTimeout
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	return &inbound{srv: srv, elicitH: opts.Elicit, elicitTimeout: timeout, timeout: srv.Timeout, log: log, mask: mask,
		ctx: ctx, life: life, live: map[string]context.CancelCauseFunc{}}
}

// newClient is the one place where the session's mcp-go clients are made
// (links call it through linkEnv.newClient): it routes the server's
// requests through in (tr wrapped), and
// declares elicitation, form and URL mode, when Options.Elicit can answer
// and the transport can carry the server's requests (the older HTTP+SSE
// transport of mcp-go cannot). hc is the HTTP client of a streamable HTTP
// transport, nil otherwise.
func (in *inbound) newClient(tr transport.Interface, hc *http.Client) *client.Client {
	// No pinned revision: the handshake names the one it speaks (see
	// Session.handshake and protocol.go).
	var opts []client.ClientOption
	bidirectional := true
	switch t := tr.(type) {
	case *stdioFast:
		tr = &answeringStdio{Stdio: t.Stdio, in: in, fast: t}
	case *transport.Stdio:
		tr = &answeringStdio{Stdio: t, in: in}
	case *transport.StreamableHTTP:
		tr = &answeringHTTP{StreamableHTTP: t, in: in, hc: hc}
	default:
		bidirectional = false
	}
	// Elicitation is declared by the handshake, once it knows the
	// revision (see elicitOption).
	in.canElicit = in.elicitH != nil && bidirectional
	c := client.NewClient(tr, opts...)
	c.OnNotification(in.onNotification)
	return c
}

// elicitOption declares elicitation, form and URL mode, when the session
// can serve the server's elicitation/create requests (canElicit): only for
// the revisions up to 2025-11-25, whose requests in serves; on 2026-07-28
// a server asks through input_required instead, and the session declares
// elicitation in the _meta of its own requests (requestMeta), which mcp-go
// would otherwise do for its requests too. nil when there is nothing to
// declare.
func (in *inbound) elicitOption(version string) client.ClientOption {
	if !in.canElicit || mcpgo.IsModernProtocol(version) {
		return nil
	}
	return client.WithClientCapabilities(mcpgo.ClientCapabilities{
		Elicitation: &mcpgo.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
	})
}

// handle serves one request of the server's: elicitation/create (through
// Options.Elicit) and sampling/createMessage (refused) here, the rest by
// next, mcp-go's dispatch. post, if set, sends the answer of an
// elicitation, which then runs on the session's own goroutine instead of
// within the transport's handler. A nil response with a nil error sends
// nothing.
func (in *inbound) handle(ctx context.Context, req transport.JSONRPCRequest, next transport.RequestHandler,
	post func(*transport.JSONRPCResponse)) (*transport.JSONRPCResponse, error) {
	switch req.Method {
	case string(mcpgo.MethodSamplingCreateMessage):
		in.log.V(1).Info("refused the server's sampling request")
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.METHOD_NOT_FOUND, samplingRefusal, nil), nil
	case string(mcpgo.MethodElicitationCreate):
	default:
		return next(ctx, req)
	}
	if in.elicitH == nil {
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.METHOD_NOT_FOUND, noElicitation, nil), nil
	}
	if !in.reserve() {
		in.log.Info("refused an elicitation: too many at once", "limit", MaxPendingElicitations)
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, tooManyElicitations(), nil), nil
	}
	// The session's end waits for the answer (ElicitHandler's contract
	// has it return once ctx ends).
	if !in.life.startBackground() {
		in.release()
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, "the session is ending", nil), nil
	}
	if post == nil {
		defer in.life.endBackground()
		defer in.release()
		return in.elicit(ctx, req), nil
	}
	go func() {
		defer in.life.endBackground()
		defer in.release()
		if resp := in.elicit(in.ctx, req); resp != nil {
			post(resp)
		}
	}()
	return nil, nil
}

// elicit answers one elicitation/create request: nil when the server
// cancelled it (it wants no answer then).
func (in *inbound) elicit(ctx context.Context, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	key := req.ID.String()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	in.mu.Lock()
	in.live[key] = cancel
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.live, key)
		in.mu.Unlock()
	}()

	res, err := in.ask(ctx, req.Params)
	if errors.Is(context.Cause(ctx), ErrCanceledByServer) {
		return nil
	}
	if err != nil {
		code := mcpgo.INTERNAL_ERROR
		var re *rpcError
		if errors.As(err, &re) {
			code = re.code
		}
		return transport.NewJSONRPCErrorResponse(req.ID, code, err.Error(), nil)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, "encode the answer: "+err.Error(), nil)
	}
	return transport.NewJSONRPCResultResponse(req.ID, b)
}

// onNotification runs on mcp-go's read goroutine: it only cancels the
// handler of a request the server cancelled.
func (in *inbound) onNotification(n mcpgo.JSONRPCNotification) {
	switch n.Method {
	case string(mcpgo.MethodNotificationCancelled):
	case string(mcpgo.MethodNotificationElicitationComplete):
		in.log.V(1).Info("the server says a URL elicitation is complete")
		return
	default:
		return
	}
	b, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	var p struct {
		RequestID mcpgo.RequestId `json:"requestId"`
	}
	if json.Unmarshal(b, &p) != nil {
		return
	}
	in.mu.Lock()
	cancel := in.live[p.RequestID.String()]
	in.mu.Unlock()
	if cancel != nil {
		cancel(ErrCanceledByServer)
	}
}

// ask asks Options.Elicit about the server's elicitation/create params
// and returns the checked result; invalid params are an *rpcError.
func (in *inbound) ask(ctx context.Context, params any) (*mcpgo.ElicitationResult, error) {
	e, err := parseElicitation(in.srv.Name, params)
	if err != nil {
		in.log.Info("refused an elicitation request", "err", err.Error())
		return nil, err
	}
	return in.askParsed(ctx, e)
}

// askParsed asks Options.Elicit about e, an elicitation of the server's
// (an elicitation/create request's, or an input request's of the
// 2026-07-28 revision), and returns the checked result: an answer nobody
// gave within the ElicitTimeout is cancel, an accepted form is completed
// with its defaults and must fit it.
func (in *inbound) askParsed(ctx context.Context, e *Elicitation) (*mcpgo.ElicitationResult, error) {
	in.log.V(1).Info("elicitation requested", "mode", e.Mode)
	timeout := in.elicitTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrElicitTimeout)
	defer cancel()
	res, err := in.elicitH(ctx, e)
	if errors.Is(context.Cause(ctx), ErrElicitTimeout) {
		in.log.Info("cancelled an elicitation nobody answered in time", "timeout", timeout.String())
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionCancel}}, nil
	}
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil {
			return nil, fmt.Errorf("elicitation of server %q ended unanswered: %w", in.srv.Name, cause)
		}
		return nil, fmt.Errorf("elicitation of server %q: %w", in.srv.Name, err)
	}
	out, err := elicitResult(e, res)
	if err != nil {
		in.log.Info("an answer to an elicitation did not fit its form and was not sent", "err", err.Error())
		return nil, err
	}
	in.log.V(1).Info("elicitation answered", "action", string(res.Action))
	return out, nil
}

// answeringStdio is mcp-go's stdio transport with the server's requests
// served by inbound; mcp-go sends the answers.
type answeringStdio struct {
	*transport.Stdio
	in *inbound
	// fast sends the session's calls to a local server; nil: mcp-go
	// sends them.
	fast *stdioFast
	primedDiscover
}

// SendRequest answers a primed server/discover itself (see
// discoverPrimer), sends a call through fast, and everything else through
// mcp-go.
func (t *answeringStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if resp := t.take(req); resp != nil {
		return resp, nil
	}
	if t.fast != nil && t.fast.handles(req) {
		return t.fast.call(ctx, req)
	}
	return t.Stdio.SendRequest(ctx, req)
}

func (t *answeringStdio) SetRequestHandler(next transport.RequestHandler) {
	t.Stdio.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		return t.in.handle(ctx, req, next, nil)
	})
}

// answeringHTTP is mcp-go's streamable HTTP transport with the server's
// requests served by inbound, which sends an elicitation's answer itself,
// with POST (post): mcp-go would give it 30 seconds.
type answeringHTTP struct {
	*transport.StreamableHTTP
	in      *inbound
	hc      *http.Client
	version atomic.Pointer[string] // the negotiated revision, for the header
	primedDiscover
}

// SendRequest answers a primed server/discover itself (see
// discoverPrimer) and sends everything else.
func (t *answeringHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if resp := t.take(req); resp != nil {
		return resp, nil
	}
	return t.StreamableHTTP.SendRequest(ctx, req)
}

func (t *answeringHTTP) SetRequestHandler(next transport.RequestHandler) {
	t.StreamableHTTP.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		return t.in.handle(ctx, req, next, t.post)
	})
}

func (t *answeringHTTP) SetProtocolVersion(v string) {
	t.version.Store(&v)
	t.StreamableHTTP.SetProtocolVersion(v)
}

// maxAnswerReplyBytes bounds what is read of the server's reply to an
// answer (it is normally empty: 202 Accepted).
const maxAnswerReplyBytes = 64 << 10

// post sends resp as mcp-go sends a message of the session: POST to the
// endpoint with the session id, the protocol revision and the configured
// headers, through the session's HTTP client (which authorizes it and
// keeps its redirects on the origin), within the session's timeout.
func (t *answeringHTTP) post(resp *transport.JSONRPCResponse) {
	if err := t.send(resp); err != nil {
		t.in.log.Info("sending the answer to an elicitation failed", "err", t.in.mask.err(err))
	}
}

func (t *answeringHTTP) send(resp *transport.JSONRPCResponse) error {
	in := t.in
	body, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(in.ctx, in.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.srv.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id := t.GetSessionId(); id != "" {
		req.Header.Set(transport.HeaderKeySessionID, id)
	}
	if v := t.version.Load(); v != nil {
		req.Header.Set(transport.HeaderKeyProtocolVersion, *v)
	}
	for k, v := range in.srv.Headers {
		req.Header.Set(k, v)
	}
	res, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswerReplyBytes))
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("the server answered HTTP %s", res.Status)
	}
	return nil
}
