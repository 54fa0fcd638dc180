package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/freecode/freecode/wire"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// cancelNoticeWait bounds sending notifications/cancelled for an abandoned
// call.
const cancelNoticeWait = 2 * time.Second

// callResultWire is a tools/call result on the wire.
type callResultWire struct {
	Content    presentBlocks   `json:"content"`
	IsError    bool            `json:"isError"`
	Structured json.RawMessage `json:"structuredContent"`
	Meta       json.RawMessage `json:"_meta"`
}

// presentBlocks is a content array that records whether the key was there
// at all: a result without "content" is malformed, one with "content": null
// holds no blocks.
type presentBlocks struct {
	blocks  []json.RawMessage
	present bool
}

func (p *presentBlocks) UnmarshalJSON(b []byte) error {
	p.present = true
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	return json.Unmarshal(b, &p.blocks)
}

// decodeCallResult decodes a complete tools/call result (roundTrips has
// answered those that ask for input), valid JSON (as every transport
// hands it on): each content block as wire.DecodeContent has it (what
// FreeCode does not model kept verbatim), the structured content and
// _meta byte for byte (sharing raw's bytes).
func decodeCallResult(raw json.RawMessage) (*wire.CallResult, error) {
	w, ok := callResultFields(raw)
	if !ok {
		w = callResultWire{}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("decode tools/call result: %w", err)
		}
	}
	if !w.Content.present {
		return nil, errors.New("decode tools/call result: content is missing")
	}
	res := &wire.CallResult{Content: make([]wire.Content, 0, len(w.Content.blocks)), IsError: w.IsError}
	for i, block := range w.Content.blocks {
		c, err := wire.DecodeContent(block)
		if err != nil {
			return nil, fmt.Errorf("decode tools/call result: content #%d: %w", i, err)
		}
		res.Content = append(res.Content, c)
	}
	if len(w.Structured) > 0 {
		res.Structured = w.Structured
	}
	if len(w.Meta) > 0 {
		res.Meta = w.Meta
	}
	return res, nil
}

// callResultFields reads raw, a valid JSON result, as json.Unmarshal
// into a callResultWire would, without checking it again (see
// objectFields); it reports false for what it leaves to encoding/json:
// not an object, an escaped, case-folded or repeated key of
// callResultWire's, content that is not an array or null, isError that is
// not a boolean or null.
func callResultFields(raw json.RawMessage) (w callResultWire, ok bool) {
	var seen [4]bool
	ok = objectFields(raw, func(key, value []byte) bool {
		i, exact := fieldOf(key, "content", "isError", "structuredContent", "_meta")
		if !exact || (i >= 0 && seen[i]) {
			return false
		}
		if i < 0 {
			return true
		}
		seen[i] = true
		switch i {
		case 0:
			w.Content.present = true
			if string(value) == "null" {
				return true
			}
			return arrayElements(value, func(block []byte) { w.Content.blocks = append(w.Content.blocks, block) })
		case 1:
			switch string(value) {
			case "true":
				w.IsError = true
			case "false", "null":
			default:
				return false
			}
		case 2:
			w.Structured = value
		case 3:
			w.Meta = value
		}
		return true
	})
	return w, ok
}

// CallTool calls the server's tool name (the server's own name, Tool.Name)
// with args, a JSON object (nil means {}), and returns its result
// (decodeCallResult).
// Cancelling ctx abandons the call and tells the server with
// notifications/cancelled (on the 2026-07-28 revision over HTTP, ending
// the request's stream is the cancellation). A progress that is not nil
// asks the server for progress notices (a progressToken in the request's
// _meta) and is handed each one, in the order they came, its message cut
// to maxProgressMessageBytes; it is called from the goroutine that reads
// the server's messages, so it must not block (it would hold up every
// answer of the session), and not after CallTool returned. A failure of
// the connection wraps ErrTransport
// (and, when the local process exited, is an *ExitError); a call after the
// session ended wraps ErrClosed. A tool that reports a failure is not an
// error: see wire.CallResult.IsError.
//
// The request is sent through the transport directly, as tools/list is,
// so that mcp-go's content types, which fail a whole result over one block
// of a type they do not know, never see the answer.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error) {
	return s.out.call(ctx, name, args, progress)
}

// call is CallTool.
func (o *outbound) call(ctx context.Context, name string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error) {
	if err := o.endedError(fmt.Sprintf("tools/call %q", name)); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if ctx.Err() != nil {
		// Never sent, so there is nothing to cancel.
		return nil, fmt.Errorf("server %q: tools/call %q: %w", o.srv.Name, name, context.Cause(ctx))
	}
	var meta map[string]any
	if progress != nil {
		token := fmt.Sprintf("freecode-progress-%d", o.seq.Add(1))
		meta = map[string]any{"progressToken": token}
		defer o.progress.watch(token, progress)()
	}
	what := fmt.Sprintf("tools/call %q", name)
	raw, err := o.roundTrips(ctx, string(mcpgo.MethodToolsCall), what, func(in retryInput) (json.RawMessage, error) {
		params := map[string]any{"name": name, "arguments": args}
		in.addTo(params)
		return o.callOnce(ctx, name, o.newRequest("tools-call", string(mcpgo.MethodToolsCall), params, maps.Clone(meta)))
	})
	if err != nil {
		return nil, err
	}
	res, err := decodeCallResult(raw)
	if err != nil {
		return nil, newError(fmt.Sprintf("server %q: %s: %s", o.srv.Name, what, o.mask.err(err)), err)
	}
	return res, nil
}

// callOnce sends req, one attempt of tools/call name, and returns its
// result, or the call's error.
func (o *outbound) callOnce(ctx context.Context, name string, req transport.JSONRPCRequest) (json.RawMessage, error) {
	id := req.ID
	resp, err := o.send(ctx, req)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			// Sent and abandoned: the server may still be working on it.
			o.sendCancelled(id, context.Cause(ctx))
		}
		if ctx.Err() == nil && (isAuthFlow(err) || errors.Is(err, ErrNeedsLogin) || errors.Is(err, ErrInsufficientScope)) {
			// The OAuth layer's answer, not the transport's: a step-up, or
			// an authorization server that could not be reached, fails this
			// call alone; a sign-in that is gone has ended the session
			// already (authGate).
			return nil, fmt.Errorf("server %q: tools/call %q: %w", o.srv.Name, name, authError(o.mask, err))
		}
		err = transport.NewError(err)
	case resp.Error != nil:
		err = resp.Error.AsError()
	default:
		return resp.Result, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("server %q: tools/call %q: %w", o.srv.Name, name, context.Cause(ctx))
	}
	if !isTransportError(err) && o.limits.tripped() == nil {
		return nil, newError(fmt.Sprintf("server %q: tools/call %q: %s", o.srv.Name, name, o.mask.err(err)), err)
	}
	return nil, o.failure(fmt.Sprintf("tools/call %q", name), err)
}

// request sends method with params as its own request (as CallTool does,
// so that mcp-go's types never see the answer) and returns the result's
// raw JSON. what names the request in errors ("resources/read \"x\"").
// Cancelling ctx abandons it and tells the server (notifications/cancelled);
// a transport failure wraps ErrTransport (an *ExitError when the local
// process exited), a request after the session ended wraps ErrClosed, and
// the server's own error answer is kept as its cause (ErrResourceNotFound
// and ErrInvalidParams for the codes that mean them).
func (o *outbound) request(ctx context.Context, method, what string, params map[string]any) (json.RawMessage, error) {
	if err := o.endedError(what); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("server %q: %s: %w", o.srv.Name, what, context.Cause(ctx))
	}
	return o.roundTrips(ctx, method, what, func(in retryInput) (json.RawMessage, error) {
		p := maps.Clone(params)
		in.addTo(p)
		return o.requestOnce(ctx, what, o.newRequest(strings.ReplaceAll(method, "/", "-"), method, p, nil))
	})
}

// requestOnce sends req, one attempt of what, and returns its result, or
// the request's error.
func (o *outbound) requestOnce(ctx context.Context, what string, req transport.JSONRPCRequest) (json.RawMessage, error) {
	id := req.ID
	resp, err := o.send(ctx, req)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			o.sendCancelled(id, context.Cause(ctx))
		}
		err = transport.NewError(err)
	case resp.Error != nil:
		err = resp.Error.AsError()
	default:
		return resp.Result, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("server %q: %s: %w", o.srv.Name, what, context.Cause(ctx))
	}
	if !isTransportError(err) && o.limits.tripped() == nil {
		var kind error
		switch {
		case errors.Is(err, mcpgo.ErrResourceNotFound):
			kind = ErrResourceNotFound
		case errors.Is(err, mcpgo.ErrInvalidParams):
			kind = ErrInvalidParams
		}
		return nil, newError(fmt.Sprintf("server %q: %s: %s", o.srv.Name, what, o.mask.err(err)), kind, err)
	}
	return nil, o.failure(what, err)
}

// failure explains a transport failure of what, a request. A local
// failure almost always means the process exited: wait a moment for the
// owner goroutine to see it, and report the exit.
func (o *outbound) failure(what string, err error) error {
	o.lost(err)
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	select {
	case <-o.life.done:
		if _, endErr := o.life.ended(); endErr != nil {
			return newError(fmt.Sprintf("%s failed: %s", what, endErr), endErr, err)
		}
	case <-timer.C:
	}
	return newError(fmt.Sprintf("server %q: %s: %s", o.srv.Name, what, o.mask.err(err)), ErrTransport, err)
}

// endedError is the error of what, a request made after the session
// ended, or nil.
func (o *outbound) endedError(what string) error {
	ended, endErr := o.life.ended()
	if !ended {
		return nil
	}
	if endErr != nil {
		return newError(fmt.Sprintf("%s: session ended: %s", what, endErr), ErrClosed, endErr)
	}
	return fmt.Errorf("server %q: %s: %w", o.srv.Name, what, ErrClosed)
}

// sendCancelled tells the server that the request id was abandoned, as the
// spec asks of a client on every transport (a dropped connection is not a
// cancellation). It does not wait: the notice is best effort, bounded by
// cancelNoticeWait and the session's end.
func (o *outbound) sendCancelled(id mcpgo.RequestId, reason error) {
	if o.modern() && o.srv.Type == Remote {
		// Over streamable HTTP, the 2026-07-28 revision cancels by the end
		// of the request's stream, which the abandoned request did.
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
	if !o.life.startBackground() {
		return
	}
	go func() {
		defer o.life.endBackground()
		ctx, cancel := context.WithTimeout(o.ctx, cancelNoticeWait)
		defer cancel()
		if err := o.client.GetTransport().SendNotification(ctx, n); err != nil {
			o.log.V(1).Info("sending notifications/cancelled failed", "err", o.mask.err(err))
		}
	}()
}
