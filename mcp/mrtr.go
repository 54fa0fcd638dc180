package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Multi round-trip requests (SEP-2322, the 2026-07-28 revision): a server
// that needs input before it can answer tools/call, prompts/get or
// resources/read answers with resultType "input_required", a map of
// inputRequests (elicitation/create, roots/list, sampling/createMessage)
// and an opaque requestState. The session answers each input request with
// what serves the same requests of the older revisions — Options.Elicit
// through the form code (defaults filled, the answer checked), the spec's
// roots — and sends the request again, under a new JSON-RPC id, with the
// answers as inputResponses and the requestState as it came. Callers see
// the final result only, whichever revision the server speaks.
//
// Everything in an input_required answer is the server's and bounded here:
// the rounds of one request (maxInputRounds), the input requests of a
// round (maxInputRequests), the size of each one's params, of its key and
// of the requestState.
const (
	// maxInputRounds bounds the answers of one request that the session
	// answers with input; the next one fails the request.
	maxInputRounds = 10
	// maxInputRequests bounds the input requests of one answer.
	maxInputRequests = 16
	// maxInputKeyBytes bounds the key of an input request, which is echoed.
	maxInputKeyBytes = 256
	// maxInputParamsBytes bounds the params of one input request.
	maxInputParamsBytes = 256 << 10
	// maxRequestStateBytes bounds the requestState, which each retry
	// sends back.
	maxRequestStateBytes = 1 << 20
)

// resultTypeInputRequired is the resultType of an InputRequiredResult; a
// result without a resultType is complete.
const resultTypeInputRequired = "input_required"

// mrtrMethods are the requests a server may answer with input_required;
// it must not answer any other so.
var mrtrMethods = []string{
	string(mcpgo.MethodToolsCall), string(mcpgo.MethodPromptsGet), string(mcpgo.MethodResourcesRead),
}

// retryInput is what one retry of a request carries: the answers to the
// input requests of the server's last answer and its requestState. The
// zero value is the first attempt's (nothing). Each request's loop has its
// own, so concurrent requests never see each other's.
type retryInput struct {
	// responses answer the input requests by key; nil when the server
	// asked for none (it only wants the request again).
	responses map[string]json.RawMessage
	// state is the requestState as it came on the wire, a JSON string
	// token, never decoded (the spec forbids looking into it); nil when
	// the server sent none, and then the retry carries none.
	state json.RawMessage
}

// addTo adds the retry's fields to a request's params.
func (r retryInput) addTo(params map[string]any) {
	if r.responses != nil {
		params["inputResponses"] = r.responses
	}
	if r.state != nil {
		params["requestState"] = r.state
	}
}

// inputRequest is one input request of an input_required answer, checked.
type inputRequest struct {
	key    string
	method string
	params json.RawMessage
	// elicit is the parsed elicitation of an elicitation/create.
	elicit *Elicitation
}

// inputRequired is a checked input_required answer.
type inputRequired struct {
	requests []inputRequest // sorted by key
	state    json.RawMessage
}

// parseInputRequired reads a result: nil when it is complete (a missing
// resultType means complete), the checked input requests otherwise. Its
// errors say what is wrong with the answer, for an error naming the server.
func parseInputRequired(raw json.RawMessage) (*inputRequired, error) {
	// Only the resultType is looked at before the answer is known to ask
	// for input: a complete result is decoded by its request. Most results
	// do not hold the word at all, and are not scanned once more for it.
	if !bytes.Contains(raw, []byte(resultTypeInputRequired)) {
		return nil, nil
	}
	var rt struct {
		ResultType string `json:"resultType"`
	}
	if json.Unmarshal(raw, &rt) != nil || rt.ResultType != resultTypeInputRequired {
		return nil, nil
	}
	var w struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("malformed input_required answer: %w", err)
	}
	ir := &inputRequired{}
	if s := w.RequestState; len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		if s[0] != '"' {
			return nil, errors.New("malformed input_required answer: requestState is not a string")
		}
		if len(s) > maxRequestStateBytes {
			return nil, fmt.Errorf("its requestState is larger than FreeCode takes (%s)", formatBytes(maxRequestStateBytes))
		}
		// A copy: raw may be a buffer of the transport's.
		ir.state = bytes.Clone(s)
	}
	if len(w.InputRequests) > maxInputRequests {
		return nil, fmt.Errorf("it asks for %d inputs at once, more than FreeCode answers (%d)", len(w.InputRequests), maxInputRequests)
	}
	if len(w.InputRequests) == 0 && ir.state == nil {
		return nil, errors.New("malformed input_required answer: it has neither inputRequests nor requestState")
	}
	for key, req := range w.InputRequests {
		if len(key) > maxInputKeyBytes {
			return nil, fmt.Errorf("an input request's key is longer than %d bytes", maxInputKeyBytes)
		}
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, fmt.Errorf("malformed input request %q: %w", key, err)
		}
		if len(r.Params) > maxInputParamsBytes {
			return nil, fmt.Errorf("input request %q (%s) has params larger than FreeCode takes (%s)", key, r.Method, formatBytes(maxInputParamsBytes))
		}
		ir.requests = append(ir.requests, inputRequest{key: key, method: r.Method, params: r.Params})
	}
	slices.SortFunc(ir.requests, func(a, b inputRequest) int { return cmp.Compare(a.key, b.key) })
	return ir, nil
}

// roundTrips drives the multi round-trip requests of one request, what
// (e.g. `tools/call "x"`): send makes one attempt with the retry's input
// and returns its result, or an error ready for the caller (it wraps its
// own failures). It answers input_required results until one is complete,
// the server asks more than maxInputRounds times, or ctx ends (which also
// bounds the questions asked of the user).
func (o *outbound) roundTrips(ctx context.Context, method, what string,
	send func(retryInput) (json.RawMessage, error)) (json.RawMessage, error) {
	var in retryInput
	for round := 1; ; round++ {
		raw, err := send(in)
		if err != nil {
			return nil, err
		}
		ir, err := parseInputRequired(raw)
		if err != nil {
			return nil, o.inputError(what, err)
		}
		if ir == nil {
			return raw, nil
		}
		if !slices.Contains(mrtrMethods, method) || !o.modern() {
			return nil, o.inputError(what, fmt.Errorf("it answered with input_required, which the protocol (%s) does not allow for %s", o.proto, method))
		}
		if round > maxInputRounds {
			return nil, o.inputError(what, fmt.Errorf("it still asked for input after %d rounds of answers (FreeCode answers at most %d); the server may be looping: try again, or report it to the server's authors", maxInputRounds, maxInputRounds))
		}
		if in, err = o.answerInput(ctx, what, ir); err != nil {
			return nil, err
		}
	}
}

// inputError is the failure of what because of the server's
// input_required answer.
func (o *outbound) inputError(what string, err error) error {
	return newError(fmt.Sprintf("server %q: %s: the server asked for input: %s", o.srv.Name, what, o.mask.err(err)), err)
}

// answerInput answers the input requests of ir and returns the retry that
// carries the answers. Every request is checked before any is answered, so
// that the user is not asked a question whose answer cannot be sent. The
// elicitations are asked one after the other, in the order of their keys:
// a person answers one question at a time.
func (o *outbound) answerInput(ctx context.Context, what string, ir *inputRequired) (retryInput, error) {
	in := o.in
	for i := range ir.requests {
		r := &ir.requests[i]
		switch r.method {
		case string(mcpgo.MethodElicitationCreate):
			if in.elicitH == nil {
				return retryInput{}, o.inputError(what, fmt.Errorf("input request %q is an elicitation, which this session did not declare (nothing here can answer one): %s", r.key, noElicitation))
			}
			e, err := parseElicitation(o.srv.Name, r.params)
			if err != nil {
				return retryInput{}, o.inputError(what, fmt.Errorf("input request %q: %w", r.key, err))
			}
			e.InputKey = r.key
			r.elicit = e
		case string(mcpgo.MethodListRoots):
			if len(o.srv.Roots) == 0 {
				return retryInput{}, o.inputError(what, fmt.Errorf("input request %q asks for roots/list, which this session did not declare: give the server \"roots\" in its entry if it needs them", r.key))
			}
		case string(mcpgo.MethodSamplingCreateMessage):
			// There is no error to put in inputResponses: a server must not
			// ask for what the client did not declare, and FreeCode declares
			// no sampling.
			return retryInput{}, o.inputError(what, fmt.Errorf("input request %q: %s", r.key, samplingRefusal))
		default:
			return retryInput{}, o.inputError(what, fmt.Errorf("input request %q has method %q, which is not one a server may ask a client for", r.key, r.method))
		}
	}
	out := retryInput{state: ir.state}
	if len(ir.requests) == 0 {
		return out, nil
	}
	out.responses = make(map[string]json.RawMessage, len(ir.requests))
	for _, r := range ir.requests {
		var res any
		switch r.method {
		case string(mcpgo.MethodElicitationCreate):
			er, err := o.elicitInput(ctx, r.elicit)
			if err != nil {
				return retryInput{}, o.inputAnswerError(ctx, what, r.key, err)
			}
			res = er
		case string(mcpgo.MethodListRoots):
			res = mcpgo.ListRootsResult{Roots: in.rootList()}
		}
		b, err := json.Marshal(res)
		if err != nil {
			return retryInput{}, fmt.Errorf("server %q: %s: encode the answer to input request %q: %w", o.srv.Name, what, r.key, err)
		}
		out.responses[r.key] = b
	}
	return out, nil
}

// inputAnswerError is the failure of what when input request key could not
// be answered: the request's own end (ctx) or the session's as such.
func (o *outbound) inputAnswerError(ctx context.Context, what, key string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("server %q: %s: %w", o.srv.Name, what, context.Cause(ctx))
	}
	if endErr := o.endedError(what); endErr != nil {
		return endErr
	}
	return newError(fmt.Sprintf("server %q: %s: input request %q was not answered: %s", o.srv.Name, what, key, err), err)
}

// elicitInput asks Options.Elicit an elicitation of an input request, as
// inbound.ask asks one of elicitation/create: within
// MaxPendingElicitations, ElicitTimeout (then the answer is cancel), the
// answer checked against the form. The question ends with the request
// (ctx) and with the session.
func (o *outbound) elicitInput(ctx context.Context, e *Elicitation) (*mcpgo.ElicitationResult, error) {
	in := o.in
	if !in.reserve() {
		in.log.Info("refused an elicitation: too many at once", "limit", MaxPendingElicitations)
		return nil, errors.New(tooManyElicitations())
	}
	defer in.release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(o.ctx, func() { cancel(ErrClosed) })
	defer stop()
	return in.askParsed(ctx, e)
}
