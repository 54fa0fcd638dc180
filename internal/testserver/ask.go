package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// AskForm is the requested schema of the ask tool when its call gives
// none: a required name, a count with a default and bounds, and a choice
// with a default.
const AskForm = `{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Name","description":"Who is asking","minLength":1},` +
	`"count":{"type":"integer","title":"Count","minimum":1,"maximum":10,"default":3},` +
	`"color":{"type":"string","title":"Color","enum":["red","green","blue"],"default":"green"}},` +
	`"required":["name"]}`

const (
	askSchema = `{"type":"object","properties":{` +
		`"message":{"type":"string"},` +
		`"schema":{"type":"object","description":"the requested schema (default AskForm)"},` +
		`"cancelAfterMs":{"type":"integer","minimum":1,"description":"stdio only: cancel the request after this long"}}}`
	askURLSchema = `{"type":"object","properties":{"url":{"type":"string"},"message":{"type":"string"}},"required":["url"]}`
)

// askTools are the tools of --ask: requests to the client.
func (s *Server) askTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: rawTool("ask", "Asks the client for input (elicitation, form mode) and returns its answer as JSON.", askSchema, readOnly(true)), Handler: s.handleAsk},
		{Tool: rawTool("ask_url", "Asks the client to open a URL (elicitation, URL mode) and returns its answer as JSON.", askURLSchema, readOnly(true)), Handler: s.handleAskURL},
		{Tool: rawTool("ask_twice", "On a 2026-07-28 request, asks for a form and then for a confirmation (two rounds of input_required) and returns \"<name>: <ok>\".", emptySchema, readOnly(true)), Handler: handleAskTwice},
		{Tool: rawTool("capabilities", "Returns the capabilities the client declared, as JSON.", emptySchema, readOnly(true)), Handler: handleCapabilities},
	}
}

func (s *Server) handleAsk(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	var schema any = json.RawMessage(AskForm)
	if sc, ok := args["schema"]; ok {
		schema = sc
	}
	params := mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: req.GetString("message", "What should the server know?"), RequestedSchema: schema}
	if modernRequest(ctx) {
		return elicitInput(req, params)
	}
	if ms := req.GetInt("cancelAfterMs", 0); ms > 0 {
		sess, ok := server.ClientSessionFromContext(ctx).(*stdioSession)
		if !ok {
			return mcp.NewToolResultError("cancelAfterMs works over stdio only"), nil
		}
		err := sess.elicitThenCancel(ctx, params, time.Duration(ms)*time.Millisecond)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("cancelled the elicitation"), nil
	}
	return elicitResult(s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{Params: params}))
}

func (s *Server) handleAskURL(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	u, err := req.RequireString("url")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	params := mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, Message: req.GetString("message", "Open this page to go on."),
		URL: u, ElicitationID: "ask-url-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	if modernRequest(ctx) {
		return elicitInput(req, params)
	}
	return elicitResult(s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{Params: params}))
}

// elicitResult is the ask tools' result: the answer as JSON, or the error.
func elicitResult(res *mcp.ElicitationResult, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
	}
	b, err := json.Marshal(res.ElicitationResponse)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}

func handleCapabilities(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return mcp.NewToolResultError("the session does not keep the client's capabilities"), nil
	}
	b, err := json.Marshal(sess.GetClientCapabilities())
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}

// clientRequests are the stdio session's requests to the client: each one
// waits for the response with its id.
type clientRequests struct {
	w *lineWriter

	mu      sync.Mutex // guards seq, pending, info and caps
	seq     int
	pending map[string]chan json.RawMessage // by the id's JSON
	info    mcp.Implementation
	caps    mcp.ClientCapabilities
}

// deliver hands a response line to the request waiting for it; it reports
// whether one was.
func (c *clientRequests) deliver(id json.RawMessage, line []byte) bool {
	c.mu.Lock()
	ch, ok := c.pending[string(id)]
	delete(c.pending, string(id))
	c.mu.Unlock()
	if ok {
		ch <- line
	}
	return ok
}

// send writes a request of method and returns its id and the channel its
// response line arrives on.
func (c *clientRequests) send(method string, params any) (string, chan json.RawMessage, error) {
	c.mu.Lock()
	c.seq++
	id := "ts-" + strconv.Itoa(c.seq)
	ch := make(chan json.RawMessage, 1)
	key, _ := json.Marshal(id)
	if c.pending == nil {
		c.pending = map[string]chan json.RawMessage{}
	}
	c.pending[string(key)] = ch
	c.mu.Unlock()
	err := c.w.writeJSON(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": method, "params": params})
	return id, ch, err
}

func (c *clientRequests) forget(id string) {
	key, _ := json.Marshal(id)
	c.mu.Lock()
	delete(c.pending, string(key))
	c.mu.Unlock()
}

// request sends a request and decodes its result into out.
func (c *clientRequests) request(ctx context.Context, method string, params, out any) error {
	id, ch, err := c.send(method, params)
	if err != nil {
		return err
	}
	defer c.forget(id)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case line := <-ch:
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("decode the response: %w", err)
		}
		if resp.Error != nil {
			return fmt.Errorf("%d %s", resp.Error.Code, resp.Error.Message)
		}
		return json.Unmarshal(resp.Result, out)
	}
}

func (s *stdioSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := s.client.request(ctx, string(mcp.MethodElicitationCreate), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (s *stdioSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := s.client.request(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// elicitThenCancel sends an elicitation and, after wait, cancels it with
// notifications/cancelled, as a server whose request timed out does. An
// answer that comes first is an error: the test wanted none.
func (s *stdioSession) elicitThenCancel(ctx context.Context, params mcp.ElicitationParams, wait time.Duration) error {
	id, ch, err := s.client.send(string(mcp.MethodElicitationCreate), params)
	if err != nil {
		return err
	}
	defer s.client.forget(id)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case line := <-ch:
		return fmt.Errorf("answered before the cancellation: %s", line)
	case <-t.C:
	}
	return s.client.w.writeJSON(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": "timed out"}},
	}})
}

func (s *stdioSession) GetClientInfo() mcp.Implementation {
	s.client.mu.Lock()
	defer s.client.mu.Unlock()
	return s.client.info
}

func (s *stdioSession) SetClientInfo(info mcp.Implementation) {
	s.client.mu.Lock()
	defer s.client.mu.Unlock()
	s.client.info = info
}

func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	s.client.mu.Lock()
	defer s.client.mu.Unlock()
	return s.client.caps
}

func (s *stdioSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.client.mu.Lock()
	defer s.client.mu.Unlock()
	s.client.caps = caps
}

// AskAfterInitMessage is the message of the elicitation of --ask-after-init.
const AskAfterInitMessage = "Who is watching?"

// askAfterInit is --ask-after-init: one form elicitation, sent outside any
// call, whose answer (or failure) goes to stderr. A client that declared
// no elicitation is not asked, as the spec requires. It returns when the
// answer comes or ctx ends.
func (s *Server) askAfterInit(ctx context.Context, sess *stdioSession) {
	if sess.GetClientCapabilities().Elicitation == nil {
		fmt.Fprintln(s.cfg.Stderr, "ask after initialized: the client declared no elicitation; not asking")
		return
	}
	params := mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: AskAfterInitMessage, RequestedSchema: json.RawMessage(AskForm)}
	res, err := sess.RequestElicitation(ctx, mcp.ElicitationRequest{Params: params})
	if err != nil {
		fmt.Fprintf(s.cfg.Stderr, "ask after initialized failed: %v\n", err)
		return
	}
	b, err := json.Marshal(res.ElicitationResponse)
	if err != nil {
		fmt.Fprintf(s.cfg.Stderr, "ask after initialized failed: %v\n", err)
		return
	}
	fmt.Fprintf(s.cfg.Stderr, "answer after initialized: %s\n", b)
}
