package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
)

// SocketPath is where serve listens for a FreeCode home.
func SocketPath(home string) string { return filepath.Join(home, "run", "freecode.sock") }

// Client talks to a running serve. Its methods are safe for concurrent use.
type Client struct {
	socket string
	hc     *http.Client
}

// Error is an error answer of the API.
type Error struct {
	Status  int
	Message string
	// Call is set for POST /v1/tools/{id}/call: the model-readable result.
	Call *CallResponse
	// answer marks the error of POST /v1/elicitations/{id}, whose 400 is
	// an invalid answer.
	answer bool
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) hold for 404 answers,
// errors.Is(err, ErrConflict) for 409, errors.Is(err, ErrBadRequest) for
// 400 (and errors.Is(err, ErrInvalidAnswer) too for an elicitation's
// answer, as in process) and errors.Is(err, ErrTimeout) for 504.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound ||
		target == ErrConflict && e.Status == http.StatusConflict ||
		target == ErrBadRequest && e.Status == http.StatusBadRequest ||
		target == ErrInvalidAnswer && e.answer && e.Status == http.StatusBadRequest ||
		target == ErrTimeout && e.Status == http.StatusGatewayTimeout
}

// Dial checks that a serve answers on socketPath and returns a client for it.
// When nothing listens there it returns an error wrapping ErrNotRunning.
func Dial(socketPath string) (*Client, error) {
	conn, err := net.DialTimeout("unix", socketPath, 2*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w (no server on %s)", ErrNotRunning, socketPath)
		}
		return nil, fmt.Errorf("connect to %s: %w", socketPath, err)
	}
	_ = conn.Close()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{socket: socketPath, hc: &http.Client{Transport: tr}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

func (c *Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case json.RawMessage:
			rd = bytes.NewReader(b)
		default:
			data, err := json.Marshal(body)
			if err != nil {
				return nil, fmt.Errorf("encode request: %w", err)
			}
			rd = bytes.NewReader(data)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://freecode"+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if name := ClientOf(ctx); name != "" {
		req.Header.Set(ClientHeader, name)
	}
	// ctx's trace context (a gateway host's, or the gateway's span) goes
	// to serve, whose spans of the request are then its children.
	telemetry.InjectHTTP(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: %w", method, path, c.socket, err)
	}
	return resp, nil
}

// call performs a JSON request and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func decodeError(status int, data []byte) error {
	var eb errorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
		eb.Error = fmt.Sprintf("%s: %s", http.StatusText(status), bytes.TrimSpace(data))
	}
	return &Error{Status: status, Message: eb.Error}
}

// Status returns GET /v1/status.
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	var st wire.Status
	return st, c.call(ctx, http.MethodGet, "/v1/status", nil, &st)
}

// Tools returns GET /v1/tools in dialect ("" = jsonschema).
func (c *Client) Tools(ctx context.Context, dialect string) (Tools, error) {
	var t Tools
	path := "/v1/tools"
	if dialect != "" {
		path += "?dialect=" + url.QueryEscape(dialect)
	}
	return t, c.call(ctx, http.MethodGet, path, nil, &t)
}

// ToolsSummary is Tools without the definitions themselves (?summary=1):
// their count, version, estimated tokens and deferral.
func (c *Client) ToolsSummary(ctx context.Context, dialect string) (Tools, error) {
	var t Tools
	path := "/v1/tools?summary=1"
	if dialect != "" {
		path += "&dialect=" + url.QueryEscape(dialect)
	}
	return t, c.call(ctx, http.MethodGet, path, nil, &t)
}

// ClearLoaded empties the set of tools tool_search loaded into the
// deferred definitions (DELETE /v1/tools/loaded).
func (c *Client) ClearLoaded(ctx context.Context) error {
	return c.call(ctx, http.MethodDelete, "/v1/tools/loaded", nil, nil)
}

// CallOptions are the optional parameters of a call.
type CallOptions struct {
	// ID is the caller's own id for the call ("" lets serve number it),
	// 1 to 64 letters, digits, '_', '-' or '.': the approval of the call,
	// if it needs one, carries it as CallID.
	ID string
	// Timeout, when positive, bounds the call in place of the configured
	// callTimeout (whole milliseconds, at most a day; an approval's wait
	// does not count). A wrong ID or Timeout is an error wrapping
	// ErrBadRequest.
	Timeout time.Duration
	// NoProgress says nobody follows the call's progress: its server is
	// not asked for progress notices, and no call_progress event goes out.
	NoProgress bool
}

// Call runs a tool through serve's orchestrator. A call that did not
// complete (unknown tool, refused, invalid arguments, ...) returns the
// response, whose Result is what a model would see, and an *Error with
// Call set.
func (c *Client) Call(ctx context.Context, toolID string, args json.RawMessage) (CallResponse, error) {
	return c.CallWith(ctx, toolID, args, CallOptions{})
}

// CallWith is Call with options.
func (c *Client) CallWith(ctx context.Context, toolID string, args json.RawMessage, opts CallOptions) (CallResponse, error) {
	if args == nil {
		args = json.RawMessage("{}")
	}
	q := url.Values{}
	if opts.ID != "" {
		q.Set("callId", opts.ID)
	}
	if opts.Timeout > 0 {
		q.Set("timeout", strconv.FormatInt(max(opts.Timeout.Milliseconds(), 1), 10))
	}
	if opts.NoProgress {
		q.Set("progress", "0")
	}
	path := "/v1/tools/" + url.PathEscape(toolID) + "/call"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodPost, path, args)
	if err != nil {
		return CallResponse{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return CallResponse{}, fmt.Errorf("call %s: read answer: %w", toolID, err)
	}
	var cr CallResponse
	if json.Unmarshal(data, &cr) != nil || cr.Tool == "" {
		if resp.StatusCode/100 != 2 {
			return CallResponse{}, decodeError(resp.StatusCode, data)
		}
		return CallResponse{}, fmt.Errorf("call %s: malformed answer: %s", toolID, bytes.TrimSpace(data))
	}
	if resp.StatusCode/100 != 2 {
		return cr, &Error{Status: resp.StatusCode, Message: cr.Error, Call: &cr}
	}
	return cr, nil
}

// Approvals returns the pending approvals.
func (c *Client) Approvals(ctx context.Context) ([]Approval, error) {
	var out []Approval
	return out, c.call(ctx, http.MethodGet, "/v1/approvals", nil, &out)
}

// Answer approves or refuses a pending approval.
func (c *Client) Answer(ctx context.Context, id string, approve bool) error {
	return c.call(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id), map[string]bool{"approve": approve}, nil)
}

// Elicitations returns the servers' elicitations waiting for an answer.
func (c *Client) Elicitations(ctx context.Context) ([]wire.Elicitation, error) {
	var out []wire.Elicitation
	return out, c.call(ctx, http.MethodGet, "/v1/elicitations", nil, &out)
}

// AnswerElicitation answers a pending elicitation and returns what was sent
// to its server. An answer that does not fit is an *Error with status 400
// (errors.Is(err, ErrInvalidAnswer)); the elicitation goes on waiting.
func (c *Client) AnswerElicitation(ctx context.Context, id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error) {
	var out wire.ElicitationAnswered
	err := c.call(ctx, http.MethodPost, "/v1/elicitations/"+url.PathEscape(id), a, &out)
	if e, ok := errors.AsType[*Error](err); ok {
		e.answer = true
	}
	return out, err
}

// Restart restarts one server.
func (c *Client) Restart(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodPost, "/v1/servers/"+url.PathEscape(name)+"/restart", json.RawMessage("{}"), nil)
}

// ServerTools returns the tools one server has registered, with its phase.
func (c *Client) ServerTools(ctx context.Context, name string) (wire.ServerTools, error) {
	var st wire.ServerTools
	return st, c.call(ctx, http.MethodGet, "/v1/servers/"+url.PathEscape(name)+"/tools", nil, &st)
}

// Lists returns everything the servers list, in one request (GET /v1/lists).
func (c *Client) Lists(ctx context.Context) (wire.Lists, error) {
	var ls wire.Lists
	return ls, c.call(ctx, http.MethodGet, "/v1/lists", nil, &ls)
}

// AllServerTools is wire.ServerTools with the tools the server's tools filter
// hides (wire.ServerTools.Hidden) too.
func (c *Client) AllServerTools(ctx context.Context, name string) (wire.ServerTools, error) {
	var st wire.ServerTools
	return st, c.call(ctx, http.MethodGet, "/v1/servers/"+url.PathEscape(name)+"/tools?all=true", nil, &st)
}

// Logs returns a server's stderr ring.
func (c *Client) Logs(ctx context.Context, name string) (wire.Logs, error) {
	var l wire.Logs
	return l, c.call(ctx, http.MethodGet, "/v1/servers/"+url.PathEscape(name)+"/logs", nil, &l)
}

// sseStream is a Stream of server-sent events.
type sseStream struct {
	body io.Closer
	r    sseReader
}

// Next blocks for the next event; io.EOF when serve ended the stream.
func (s *sseStream) Next() (Event, error) { return s.r.next() }

// Close ends the stream.
func (s *sseStream) Close() error { return s.body.Close() }

func (c *Client) stream(ctx context.Context, path string) (*sseStream, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, decodeError(resp.StatusCode, data)
	}
	return &sseStream{body: resp.Body, r: sseReader{r: bufio.NewReader(resp.Body)}}, nil
}

// Events subscribes to GET /v1/events. It returns once the subscription is
// in place: every event published after Events returns is delivered (or
// counted in a "missed" event).
func (c *Client) Events(ctx context.Context) (Stream, error) {
	s, err := c.stream(ctx, "/v1/events")
	if err != nil {
		return nil, err
	}
	ev, err := s.Next()
	if err != nil || ev.Kind != wire.KindSubscribed {
		s.Close()
		return nil, fmt.Errorf("events: expected a subscribed event, got %q: %w", ev.Kind, errors.Join(err, io.ErrUnexpectedEOF))
	}
	return s, nil
}

// FollowLogs streams a server's stderr: first a "session" event and the
// ring, then new lines, one "line" event each; a "session" event
// ({"session": N}) precedes the lines of each new session after a restart.
// It ends when ctx ends or serve stops.
func (c *Client) FollowLogs(ctx context.Context, name string) (Stream, error) {
	s, err := c.stream(ctx, "/v1/servers/"+url.PathEscape(name)+"/logs?follow=1")
	if err != nil {
		return nil, err // not a nil *sseStream in a non-nil Stream
	}
	return s, nil
}
