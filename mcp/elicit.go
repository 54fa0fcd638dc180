package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/net/idna"
)

// The modes of an elicitation (Elicitation.Mode).
const (
	// ElicitForm asks for structured input: the answer is a Form's
	// content.
	ElicitForm = "form"
	// ElicitURL asks the user to open a URL, outside the session (a third
	// party's sign-in, a payment): accepting means consenting to open it,
	// and carries no content.
	ElicitURL = "url"
)

// ElicitAction is how the user answered an elicitation.
type ElicitAction string

// The actions of the protocol.
const (
	// ElicitAccept: the user answered (form) or agreed to open the URL.
	ElicitAccept ElicitAction = "accept"
	// ElicitDecline: the user said no.
	ElicitDecline ElicitAction = "decline"
	// ElicitCancel: the user dismissed the request without choosing, or
	// nobody answered in time.
	ElicitCancel ElicitAction = "cancel"
)

// ParseElicitAction reads an action's name.
func ParseElicitAction(s string) (ElicitAction, error) {
	switch a := ElicitAction(s); a {
	case ElicitAccept, ElicitDecline, ElicitCancel:
		return a, nil
	}
	return "", fmt.Errorf("action %q: want accept, decline or cancel", s)
}

// Elicitation is one elicitation/create request of a server, for an
// ElicitHandler. Everything but Server is the server's own text: neutralise
// it before it reaches a terminal.
type Elicitation struct {
	// Server is the configured name of the server that asks: show it, so
	// that the user knows who wants the answer.
	Server  string
	Mode    string // ElicitForm or ElicitURL
	Message string
	// Form is the requested schema of a form-mode elicitation.
	Form *Form
	// URL is what a URL-mode elicitation asks the user to open, an
	// absolute http or https URL, and ElicitationID the server's id for it.
	URL           string
	ElicitationID string
	// InputKey is the key a 2026-07-28 server gave the question among the
	// inputRequests of an input_required answer; "" for an
	// elicitation/create. The gateway asks its own 2026-07-28 hosts under
	// the same key.
	InputKey string
}

// Host is the host a URL-mode elicitation's URL leads to, as it must be
// shown before anything is opened: in ASCII (an internationalised name in
// its xn-- form, so that look-alike letters cannot pass for another host),
// with the port if the URL names one. "" in form mode.
func (e *Elicitation) Host() string {
	if e.Mode != ElicitURL {
		return ""
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return ""
	}
	return asciiHost(u)
}

func asciiHost(u *url.URL) string {
	host := u.Hostname()
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		host = a
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	return host
}

// ElicitResult is the user's answer to an elicitation.
type ElicitResult struct {
	Action ElicitAction
	// Content is the answer of an accepted form; it is ignored otherwise.
	// The session fills in the defaults of the fields it omits and sends
	// it only if it then fits the form (Form.Complete): a handler checks
	// it with Form.Complete first, so that it can ask again.
	Content map[string]any
}

// ElicitHandler answers a server's elicitation (Options.Elicit). It runs on
// a goroutine of its own, while the session goes on with everything else,
// and may take as long as the user does; it must return soon after ctx
// ends, which it does when the server cancels the request and when the
// session ends (the session's end waits for it). An error is sent to the
// server as the request's failure.
type ElicitHandler func(ctx context.Context, e *Elicitation) (ElicitResult, error)

// rpcError is a failure of a request of the server's with the JSON-RPC
// code to answer it with.
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string { return e.msg }

func invalidParams(format string, args ...any) error {
	return &rpcError{code: mcpgo.INVALID_PARAMS, msg: fmt.Sprintf(format, args...)}
}

// parseElicitation reads the params of an elicitation/create request of
// server. Its errors are *rpcError (invalid params) for the server.
func parseElicitation(server string, params any) (*Elicitation, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, invalidParams("elicitation/create: params: %v", err)
	}
	var p struct {
		Mode            string          `json:"mode"`
		Message         *string         `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		URL             string          `json:"url"`
		ElicitationID   string          `json:"elicitationId"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("elicitation/create: params: %v", err)
	}
	if p.Message == nil {
		return nil, invalidParams("elicitation/create: params: message is required")
	}
	e := &Elicitation{Server: server, Mode: p.Mode, Message: *p.Message}
	switch p.Mode {
	case "", ElicitForm:
		e.Mode = ElicitForm
		if len(p.RequestedSchema) == 0 || string(p.RequestedSchema) == "null" {
			return nil, invalidParams("elicitation/create: a form-mode request needs requestedSchema")
		}
		if e.Form, err = ParseForm(p.RequestedSchema); err != nil {
			return nil, invalidParams("elicitation/create: %v", err)
		}
	case ElicitURL:
		if p.ElicitationID == "" {
			return nil, invalidParams("elicitation/create: a url-mode request needs elicitationId")
		}
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, invalidParams("elicitation/create: url %q is not an absolute http or https URL", p.URL)
		}
		if u.User != nil {
			// https://bank.example@other.example/ leads to other.example.
			return nil, invalidParams("elicitation/create: url must not carry user information (it hides the host)")
		}
		e.URL, e.ElicitationID = p.URL, p.ElicitationID
	default:
		return nil, invalidParams("elicitation/create: mode %q is not supported (FreeCode declares form and url)", p.Mode)
	}
	return e, nil
}

// elicitResult checks a handler's answer and makes it the request's result:
// an accepted form completed with its defaults, which must fit the form.
func elicitResult(e *Elicitation, res ElicitResult) (*mcpgo.ElicitationResult, error) {
	if _, err := ParseElicitAction(string(res.Action)); err != nil {
		return nil, fmt.Errorf("the answer to server %q: %w", e.Server, err)
	}
	out := &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseAction(res.Action)}}
	if res.Action == ElicitAccept && e.Mode == ElicitForm {
		content, err := e.Form.Complete(res.Content)
		if err != nil {
			// Never sent on: the server gets a failure, not content
			// that does not fit what it asked for.
			return nil, fmt.Errorf("the answer to server %q was not sent: %w", e.Server, err)
		}
		out.Content = content
	}
	return out, nil
}

// ErrCanceledByServer is the cancellation cause of an ElicitHandler's
// context when the server cancelled its request (notifications/cancelled):
// errors.Is(context.Cause(ctx), ErrCanceledByServer).
var ErrCanceledByServer = errors.New("the server cancelled its request")
