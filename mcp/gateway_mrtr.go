package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Multi round-trip requests for the gateway's hosts (SEP-2322, the
// 2026-07-28 revision). A host on that revision cannot be sent a request:
// when one of its tools/call or prompts/get needs an answer of its — the
// approval the permission rules ask for (AskHost), an upstream server's
// elicitation (Gateway.Elicit) — the gateway answers the request with
// resultType "input_required", the question as one input request and an
// opaque requestState, and carries on when the host sends the request
// again with the answer in inputResponses and the state as it got it.
//
// The request itself goes on running in this process meanwhile (an
// exchange): its upstream call waits on the question as it does for a
// 2025-11-25 host's elicitation/create. So a retry must reach the process
// that answered input_required; another gateway refuses the state (its
// key differs), as it refuses one that was tampered with. Replicas behind
// a load balancer need stickiness for calls that ask mid-call.
//
// The requestState is "<payload>.<mac>", both base64url: the payload names
// the exchange, its round, the method and the tool or prompt, and when the
// state expires; the mac is HMAC-SHA256 under the gateway's random key
// over the payload and the host's identity (a stdio connection's, or an
// HTTP client's: credential, address, User-Agent — see clientOf). A state
// that does not verify, has expired, is of another host, method or name,
// or names an exchange that ended or a round that is not the current one
// is refused with ErrInvalidRequestState, and the request fails.
//
// Everything is bounded: a state is at most maxRequestStateLen bytes; an
// exchange waits for the host's retry at most DefaultExchangeTTL, after
// which its request is cancelled (the upstream call with it) and its
// question answered "cancel"; a host has at most MaxExchangesPerHost
// exchanges at once and a transport MaxExchanges; an answer is at most
// maxInputAnswerBytes. A host that cancels a request waiting on an
// exchange, or whose transport closes, ends it the same way.

const (
	// DefaultExchangeTTL bounds how long an exchange waits for its host's
	// retry.
	DefaultExchangeTTL = 5 * time.Minute
	// MaxExchangesPerHost bounds the exchanges of one host at once, and
	// MaxExchanges those of one transport (the stdio connection, the
	// HTTP endpoint).
	MaxExchangesPerHost = 8
	MaxExchanges        = 256
	// maxRequestStateLen bounds a requestState a host sends back: what
	// the gateway makes is under 200 bytes.
	maxRequestStateLen = 1024
	// maxInputAnswerBytes bounds one answer of a host's inputResponses.
	maxInputAnswerBytes = 256 << 10
)

// ErrInvalidRequestState refuses a retry whose requestState is not one
// this gateway made for this host and request, or no longer current.
var ErrInvalidRequestState = errors.New("invalid requestState")

// ErrInvalidInputResponse refuses a retry whose answer does not have the
// shape of an answer to the question asked.
var ErrInvalidInputResponse = errors.New("invalid input response")

// ErrTooManyExchanges refuses a request that would ask its host while
// the host (or the transport) has as many exchanges waiting as it may.
var ErrTooManyExchanges = errors.New("too many requests waiting for the host's answers")

// ErrExchangeEnded is the cause an exchange's request is cancelled with
// when its host did not retry within the TTL, cancelled it, or its
// transport closed.
var ErrExchangeEnded = errors.New("the host did not answer the question (it did not send the request again in time, or went away)")

// stateVersion is the first byte of a state's payload.
const stateVersion = 1

// exchanges are the exchanges of one transport: a stdio connection
// (ServeStdio) or the HTTP endpoint (GatewayHTTP). Its goroutines — one
// per exchange, running the request — end with their requests; close
// cancels them all and waits.
type exchanges struct {
	key []byte // the gateway's HMAC key
	ttl time.Duration

	mu     sync.Mutex // guards byID and closed
	byID   map[string]*exchange
	closed bool
	wg     sync.WaitGroup // the requests running
}

func newExchanges(key []byte, ttl time.Duration) *exchanges {
	if ttl <= 0 {
		ttl = DefaultExchangeTTL
	}
	return &exchanges{key: key, ttl: ttl, byID: map[string]*exchange{}}
}

// close ends every exchange and waits for their requests to return.
func (xs *exchanges) close() {
	xs.mu.Lock()
	xs.closed = true
	all := make([]*exchange, 0, len(xs.byID))
	for _, x := range xs.byID {
		all = append(all, x)
	}
	xs.mu.Unlock()
	for _, x := range all {
		xs.end(x, ErrExchangeEnded)
	}
	xs.wg.Wait()
}

// exchange is one request of a host that may ask it questions.
type exchange struct {
	id           string
	host         [sha256.Size]byte
	method, name string
	// ctx is the request's; cancel ends it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// asks carries the request's questions to the host's request waiting
	// on the exchange (unbuffered: a question waits for it). done is
	// closed when the request returned result and err.
	asks   chan *hostAsk
	done   chan struct{}
	result any
	err    error

	mu sync.Mutex // guards round, pending and timer
	// round counts the questions put to the host; a state names the
	// round it was made for. pending is the question the host was sent
	// and has not answered; timer ends the exchange if it does not.
	round   int
	pending *hostAsk
	timer   *time.Timer
}

// hostAsk is a question of the request to its host: the input request,
// under key, and where its answer (the raw JSON the host sent) goes.
type hostAsk struct {
	key    string
	method mcpgo.MCPMethod
	req    mcpgo.InputRequest
	answer chan askAnswer // buffered: one answer
}

type exchangeKey struct{}

// exchangeOf is the exchange whose request ctx is, nil when none.
func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// hostRef is what a transport puts in each request's context: its
// exchanges and the identity of the host sending the request.
type hostRef struct {
	xs   *exchanges
	host [sha256.Size]byte
}

type hostRefKey struct{}

func withHostRef(ctx context.Context, xs *exchanges, host [sha256.Size]byte) context.Context {
	return context.WithValue(ctx, hostRefKey{}, hostRef{xs: xs, host: host})
}

// modernHost reports whether the request of ctx is of a host on the
// 2026-07-28 revision (or later), which is asked through input_required.
func modernHost(ctx context.Context) bool {
	return server.IsModernRequest(ctx) || mcpgo.IsModernProtocol(server.RequestProtocolVersion(ctx))
}

// requestCaps are the capabilities the host declared with the request of
// ctx (a 2026-07-28 request carries its own), else its session's.
func requestCaps(ctx context.Context) mcpgo.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
		return *info.ClientCapabilities
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcpgo.ClientCapabilities{}
}

// requestHost is a 2026-07-28 request's session with the capabilities the
// request declared, for canElicitForm and canElicitURL.
type requestHost struct {
	server.ClientSession
	caps mcpgo.ClientCapabilities
}

func (h requestHost) GetClientInfo() mcpgo.Implementation             { return mcpgo.Implementation{} }
func (h requestHost) SetClientInfo(mcpgo.Implementation)              {}
func (h requestHost) GetClientCapabilities() mcpgo.ClientCapabilities { return h.caps }
func (h requestHost) SetClientCapabilities(mcpgo.ClientCapabilities)  {}

// askAnswer is the host's answer to a hostAsk, or why there is none.
type askAnswer struct {
	raw json.RawMessage
	err error
}

// errRequestReturned ends an exchange's context once its request returned:
// a question still on its way to the host is not asked.
var errRequestReturned = errors.New("the request returned")

// start runs run for a request of host (method, name) under a new
// exchange, on a goroutine of xs; run's context is ctx's values without
// its cancellation (the request outlives the host's first attempt),
// ended by the exchange. ErrExchangeEnded when xs is closed.
func (xs *exchanges) start(ctx context.Context, host [sha256.Size]byte, method, name string, run func(context.Context) (any, error)) (*exchange, error) {
	x := &exchange{id: rand.Text(), host: host, method: method, name: name, asks: make(chan *hostAsk), done: make(chan struct{})}
	xctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	x.ctx, x.cancel = context.WithValue(xctx, exchangeKey{}, x), cancel
	xs.mu.Lock()
	if xs.closed {
		xs.mu.Unlock()
		cancel(ErrExchangeEnded)
		return nil, fmt.Errorf("%s %q: %w", method, name, ErrExchangeEnded)
	}
	xs.byID[x.id] = x
	xs.wg.Add(1)
	xs.mu.Unlock()
	go func() {
		defer xs.wg.Done()
		res, err := run(x.ctx)
		x.result, x.err = res, err
		close(x.done)
		x.cancel(errRequestReturned)
	}()
	return x, nil
}

// await waits, for the host's request of ctx, until x's request returns
// (its result and error) or asks the host a question (ask, and the state
// the host is to send back with the answer). A question beyond the
// bounds of exchanges waiting is answered ErrTooManyExchanges, and await
// goes on waiting. When ctx ends first — the host cancelled or went
// away — x ends.
func (xs *exchanges) await(ctx context.Context, x *exchange) (result any, ask *hostAsk, state string, err error) {
	for {
		select {
		case <-x.done:
			xs.remove(x)
			return x.result, nil, "", x.err
		case a := <-x.asks:
			state, err := xs.pend(x, a)
			if err != nil {
				a.answer <- askAnswer{err: err}
				continue
			}
			return nil, a, state, nil
		case <-ctx.Done():
			xs.end(x, ErrExchangeEnded)
			return nil, nil, "", fmt.Errorf("%s %q: %w", x.method, x.name, context.Cause(ctx))
		}
	}
}

// pend makes a the question x waits on the host for: x counts against
// the bounds from its first question on; the round moves on; the TTL
// starts. It returns the state for the host to send back.
func (xs *exchanges) pend(x *exchange, a *hostAsk) (string, error) {
	xs.mu.Lock()
	if _, ok := xs.byID[x.id]; !ok {
		xs.mu.Unlock()
		return "", ErrExchangeEnded
	}
	if !x.asking() {
		host, all := 0, 0
		for _, o := range xs.byID {
			if o.asking() {
				all++
				if o.host == x.host {
					host++
				}
			}
		}
		if host >= MaxExchangesPerHost || all >= MaxExchanges {
			xs.mu.Unlock()
			return "", fmt.Errorf("%s %q: %w (%d of this host, %d in all)", x.method, x.name, ErrTooManyExchanges, host, all)
		}
	}
	x.mu.Lock()
	xs.mu.Unlock()
	defer x.mu.Unlock()
	x.round++
	x.pending = a
	if x.timer != nil {
		x.timer.Stop()
	}
	x.timer = time.AfterFunc(xs.ttl, func() { xs.end(x, ErrExchangeEnded) })
	return xs.seal(x, x.round), nil
}

// asking reports whether x has put a question to its host (it counts
// against the bounds).
func (x *exchange) asking() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.round > 0
}

// resume takes a host's retry of an exchange: state, as the host sent it
// back, must be one xs made for host, method and name, for the exchange's
// current round. The answer to the pending question is handed to the
// request, and x is returned for await. A retry without that answer gets
// the question again (reask, with a new state) rather than an error, as
// SEP-2322 asks; other keys of responses are ignored.
func (xs *exchanges) resume(host [sha256.Size]byte, method, name, state string, responses mcpgo.InputResponses) (x *exchange, reask *hostAsk, newState string, err error) {
	id, round, err := xs.open(state, host, method, name)
	if err != nil {
		return nil, nil, "", err
	}
	xs.mu.Lock()
	x = xs.byID[id]
	xs.mu.Unlock()
	if x == nil {
		return nil, nil, "", fmt.Errorf("%w: its request ended (answered, cancelled, or not retried within %s)", ErrInvalidRequestState, xs.ttl)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	a := x.pending
	if a == nil || x.round != round {
		return nil, nil, "", fmt.Errorf("%w: it is not the latest state of its request (sent twice, or an older one)", ErrInvalidRequestState)
	}
	resp, ok := responses[a.key]
	if !ok {
		x.timer.Reset(xs.ttl)
		return x, a, xs.seal(x, round), nil
	}
	raw, err := checkAnswer(a, resp)
	if err != nil {
		return nil, nil, "", err
	}
	x.pending = nil
	x.timer.Stop()
	a.answer <- askAnswer{raw: raw}
	return x, nil, "", nil
}

// checkAnswer is the host's answer to a, checked for its shape and size.
func checkAnswer(a *hostAsk, resp mcpgo.InputResponse) (json.RawMessage, error) {
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidInputResponse, a.key, err)
	}
	if len(raw) > maxInputAnswerBytes {
		return nil, fmt.Errorf("%w %q: larger than %s", ErrInvalidInputResponse, a.key, formatBytes(maxInputAnswerBytes))
	}
	if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '{' {
		return nil, fmt.Errorf("%w %q: not an object", ErrInvalidInputResponse, a.key)
	}
	if a.method == mcpgo.MethodElicitationCreate {
		var e struct {
			Action  ElicitAction    `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalidInputResponse, a.key, err)
		}
		switch e.Action {
		case ElicitAccept, ElicitDecline, ElicitCancel:
		default:
			return nil, fmt.Errorf("%w %q: action %q is none of accept, decline, cancel", ErrInvalidInputResponse, a.key, e.Action)
		}
		if c := bytes.TrimSpace(e.Content); len(c) > 0 && !bytes.Equal(c, []byte("null")) && c[0] != '{' {
			return nil, fmt.Errorf("%w %q: content is not an object", ErrInvalidInputResponse, a.key)
		}
	}
	return raw, nil
}

// remove forgets x (its request returned).
func (xs *exchanges) remove(x *exchange) {
	xs.mu.Lock()
	delete(xs.byID, x.id)
	xs.mu.Unlock()
	x.mu.Lock()
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
}

// end forgets x and cancels its request with cause: the question it waits
// on is answered ErrExchangeEnded (an elicitation "cancel"), its upstream
// call is cancelled.
func (xs *exchanges) end(x *exchange, cause error) {
	xs.remove(x)
	x.cancel(cause)
}

// ask puts req, under key, to x's host and returns the host's answer. It
// waits for a host's request on x to take the question, then for the
// retry with the answer, within ctx and x. ErrExchangeEnded when x
// ended (its host did not answer in time, cancelled, or went away).
func (x *exchange) ask(ctx context.Context, key string, req mcpgo.InputRequest) (json.RawMessage, error) {
	a := &hostAsk{key: key, method: req.Method, req: req, answer: make(chan askAnswer, 1)}
	select {
	case x.asks <- a:
	case <-ctx.Done():
		return nil, x.endErr(ctx)
	case <-x.ctx.Done():
		return nil, x.endErr(x.ctx)
	}
	select {
	case ans := <-a.answer:
		return ans.raw, ans.err
	case <-ctx.Done():
		return nil, x.endErr(ctx)
	case <-x.ctx.Done():
		return nil, x.endErr(x.ctx)
	}
}

// endErr is why a question of x was not answered, ctx having ended.
func (x *exchange) endErr(ctx context.Context) error {
	if errors.Is(context.Cause(x.ctx), ErrExchangeEnded) {
		return fmt.Errorf("ask the host: %w", ErrExchangeEnded)
	}
	return fmt.Errorf("ask the host: %w", context.Cause(ctx))
}

// statePayload is what a requestState says, under its mac.
type statePayload struct {
	V int    `json:"v"`
	X string `json:"x"` // the exchange
	R int    `json:"r"` // its round
	E int64  `json:"e"` // expiry, Unix seconds
}

// seal is the requestState of x's round; the caller holds x.mu.
func (xs *exchanges) seal(x *exchange, round int) string {
	p, _ := json.Marshal(statePayload{V: stateVersion, X: x.id, R: round, E: time.Now().Add(xs.ttl).Unix()})
	return base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(xs.mac(p, x.host, x.method, x.name))
}

// mac binds a payload to the host, the method and the name.
func (xs *exchanges) mac(payload []byte, host [sha256.Size]byte, method, name string) []byte {
	h := hmac.New(sha256.New, xs.key)
	var n [binary.MaxVarintLen64]byte
	for _, part := range [][]byte{payload, host[:], []byte(method), []byte(name)} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))])
		h.Write(part)
	}
	return h.Sum(nil)
}

// open checks a requestState a host sent back and returns the exchange
// and round it names. Every failure is ErrInvalidRequestState; what the
// state held is not repeated in the error.
func (xs *exchanges) open(state string, host [sha256.Size]byte, method, name string) (id string, round int, err error) {
	if len(state) > maxRequestStateLen {
		return "", 0, fmt.Errorf("%w: longer than %d bytes", ErrInvalidRequestState, maxRequestStateLen)
	}
	p64, m64, ok := strings.Cut(state, ".")
	if !ok {
		return "", 0, fmt.Errorf("%w: not one this gateway made", ErrInvalidRequestState)
	}
	p, err1 := base64.RawURLEncoding.DecodeString(p64)
	m, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(m, xs.mac(p, host, method, name)) {
		return "", 0, fmt.Errorf("%w: its integrity check failed (altered, made by another gateway or for another host or request)", ErrInvalidRequestState)
	}
	var sp statePayload
	if json.Unmarshal(p, &sp) != nil || sp.V != stateVersion {
		return "", 0, fmt.Errorf("%w: not one this gateway made", ErrInvalidRequestState)
	}
	if time.Now().Unix() > sp.E {
		return "", 0, fmt.Errorf("%w: expired at %s", ErrInvalidRequestState, time.Unix(sp.E, 0).UTC().Format(time.RFC3339))
	}
	return sp.X, sp.R, nil
}

// bridged runs run, a request of the host of ctx (method on name), and
// returns its result; or, when the host is on 2026-07-28 and the request
// asks it a question (AskHost, Elicit), the question as an input_required
// result (ir). mrt is what the request carried: a retry's requestState
// and inputResponses resume its exchange. Hosts on older revisions, and
// requests outside a transport of the gateway, run run directly.
func (g *Gateway) bridged(ctx context.Context, method, name string, mrt mcpgo.MultiRoundTripParams, run func(context.Context) (any, error)) (result any, ir *mcpgo.MultiRoundTripResult, err error) {
	ref, ok := ctx.Value(hostRefKey{}).(hostRef)
	if !ok || !modernHost(ctx) {
		res, err := run(ctx)
		return res, nil, err
	}
	var x *exchange
	if mrt.RequestState != "" {
		var reask *hostAsk
		var state string
		x, reask, state, err = ref.xs.resume(ref.host, method, name, mrt.RequestState, mrt.InputResponses)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %q: %w", method, name, err)
		}
		if reask != nil {
			return nil, hostInputRequired(reask, state), nil
		}
	} else if x, err = ref.xs.start(ctx, ref.host, method, name, run); err != nil {
		return nil, nil, err
	}
	res, a, state, err := ref.xs.await(ctx, x)
	if a != nil {
		return nil, hostInputRequired(a, state), nil
	}
	return res, nil, err
}

func hostInputRequired(a *hostAsk, state string) *mcpgo.MultiRoundTripResult {
	return &mcpgo.MultiRoundTripResult{InputRequests: mcpgo.InputRequests{a.key: a.req}, RequestState: state}
}

// askExchange puts q to the host of x as an input request under key, and
// decodes its answer. A host that did not answer in time (or went away)
// is taken to have cancelled.
// elicitExchange is askExchange for a server's elicitation: when the host
// has as many questions waiting as it may (ErrTooManyExchanges) this one
// is declined at once, as for a host that cannot be asked, rather than
// left waiting for an answer nobody was asked for.
func elicitExchange(ctx context.Context, x *exchange, key string, params mcpgo.ElicitationParams, log logr.Logger) (ElicitResult, error) {
	res, err := askExchange(ctx, x, key, params)
	if errors.Is(err, ErrTooManyExchanges) {
		log.Info("declined a server's question: its host has too many waiting", "err", err.Error())
		return ElicitResult{Action: ElicitDecline}, nil
	}
	return res, err
}

func askExchange(ctx context.Context, x *exchange, key string, params mcpgo.ElicitationParams) (ElicitResult, error) {
	raw, err := x.ask(ctx, key, mcpgo.NewElicitationInputRequest(params))
	if errors.Is(err, ErrExchangeEnded) {
		return ElicitResult{Action: ElicitCancel}, nil
	}
	if err != nil {
		return ElicitResult{}, err
	}
	var res struct {
		Action  ElicitAction   `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return ElicitResult{}, fmt.Errorf("the host's answer: %w", err)
	}
	return ElicitResult{Action: res.Action, Content: res.Content}, nil
}

// stdioHost is a random identity for one stdio connection's host.
func stdioHost() [sha256.Size]byte {
	return sha256.Sum256([]byte("stdio " + rand.Text() + " " + strconv.FormatInt(time.Now().UnixNano(), 10)))
}
