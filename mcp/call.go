package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// ResultType is "input_required" for a result of the 2026-07-28
	// revision that asks the client for input (elicitation, sampling,
	// roots) before the call can go on.
	ResultType string          `json:"resultType"`
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

// errInputRequired is the failure of a request the server answers with
// input_required (the 2026-07-28 revision's multi round-trip requests:
// an elicitation, the roots), which a session does not answer yet.
var errInputRequired = errors.New("the server asks for input before it can go on (a 2026-07-28 multi round-trip request), which FreeCode does not answer yet")

// decodeCallResult decodes a tools/call result: each content block as
// wire.DecodeContent has it (what FreeCode does not model kept verbatim),
// the structured content and _meta byte for byte.
func decodeCallResult(raw json.RawMessage) (*wire.CallResult, error) {
	var w callResultWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decode tools/call result: %w", err)
	}
	if w.ResultType == "input_required" {
		return nil, errInputRequired
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
	if err := s.endedError(name); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if ctx.Err() != nil {
		// Never sent, so there is nothing to cancel.
		return nil, fmt.Errorf("server %q: tools/call %q: %w", s.srv.Name, name, context.Cause(ctx))
	}
	var meta map[string]any
	if progress != nil {
		token := fmt.Sprintf("freecode-progress-%d", s.out.seq.Add(1))
		meta = map[string]any{"progressToken": token}
		defer s.out.progress.watch(token, progress)()
	}
	req := s.out.newRequest("tools-call", string(mcpgo.MethodToolsCall), map[string]any{"name": name, "arguments": args}, meta)
	id := req.ID
	resp, err := s.out.client.GetTransport().SendRequest(ctx, req)
	var res *wire.CallResult
	switch {
	case err != nil:
		if ctx.Err() != nil {
			// Sent and abandoned: the server may still be working on it.
			s.out.sendCancelled(id, context.Cause(ctx))
		}
		if ctx.Err() == nil && (isAuthFlow(err) || errors.Is(err, ErrNeedsLogin) || errors.Is(err, ErrInsufficientScope)) {
			// The OAuth layer's answer, not the transport's: a step-up, or
			// an authorization server that could not be reached, fails this
			// call alone; a sign-in that is gone has ended the session
			// already (authGate).
			return nil, fmt.Errorf("server %q: tools/call %q: %w", s.srv.Name, name, authError(s.mask, err))
		}
		err = transport.NewError(err)
	case resp.Error != nil:
		err = resp.Error.AsError()
	default:
		if res, err = decodeCallResult(resp.Result); err == nil {
			return res, nil
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("server %q: tools/call %q: %w", s.srv.Name, name, context.Cause(ctx))
	}
	if !isTransportError(err) && s.limits.tripped() == nil {
		return nil, newError(fmt.Sprintf("server %q: tools/call %q: %s", s.srv.Name, name, s.mask.err(err)), err)
	}
	return nil, s.callFailure(name, err)
}

// callFailure explains a transport failure of a call.
func (s *Session) callFailure(name string, err error) error {
	return s.requestFailure(fmt.Sprintf("tools/call %q", name), err)
}

// requestFailure explains a transport failure of what, a request. A local
// failure almost always means the process exited: wait a moment for the
// owner goroutine to see it, and report the exit.
func (s *Session) requestFailure(what string, err error) error {
	s.connectionLost(err)
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	select {
	case <-s.life.done:
		if endErr := s.Err(); endErr != nil {
			return newError(fmt.Sprintf("%s failed: %s", what, endErr), endErr, err)
		}
	case <-timer.C:
	}
	return newError(fmt.Sprintf("server %q: %s: %s", s.srv.Name, what, s.mask.err(err)), ErrTransport, err)
}

// endedError is the error of a call made after the session ended, or nil.
func (s *Session) endedError(name string) error {
	return s.endedErrorOf(fmt.Sprintf("tools/call %q", name))
}

// endedErrorOf is the error of what, a request made after the session
// ended, or nil.
func (s *Session) endedErrorOf(what string) error {
	ended, endErr := s.life.ended()
	if !ended {
		return nil
	}
	if endErr != nil {
		return newError(fmt.Sprintf("%s: session ended: %s", what, endErr), ErrClosed, endErr)
	}
	return fmt.Errorf("server %q: %s: %w", s.srv.Name, what, ErrClosed)
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
