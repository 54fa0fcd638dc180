package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

// Errors an Engine and Approvals wrap to say what kind of failure an error
// is; the server answers them with 404, 409, 400 and 504 (see
// errorStatus).
var (
	// ErrNotFound: no such server, tool or approval.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request does not fit the server's state (restarting a
	// disabled or held server, reading resources of a server that is not
	// ready or offers none).
	ErrConflict = errors.New("conflict")
	// ErrBadRequest: the request's values are wrong (a prompt's arguments,
	// a URI the server refuses); the error says which.
	ErrBadRequest = errors.New("bad request")
	// ErrTimeout: the server did not answer within the request's time
	// (its callTimeout).
	ErrTimeout = errors.New("timeout")
)

// ErrNotRunning is returned (wrapped) by Dial when no serve answers on the
// socket.
var ErrNotRunning = errors.New("freecode serve is not running")

// Tools is the answer of GET /v1/tools.
type Tools struct {
	Dialect string `json:"dialect"`
	Version string `json:"version"`
	// Tools are the advertised definitions, in order (see defs.Defs);
	// empty in a summary (?summary=1). Count is how many there are.
	Tools    []defs.Def `json:"tools"`
	Count    int        `json:"count"`
	Problems []string   `json:"problems,omitempty"`
	// EstimatedTokens is what Tools take in a model's context (bytes / 4).
	EstimatedTokens int `json:"estimatedTokens"`
	// Deferral, when the definitions of every tool are over mcp.toolBudget,
	// names the deferred tools and those tool_search loaded.
	Deferral *defs.Deferral `json:"deferral,omitempty"`
}

// CallResponse is the answer of POST /v1/tools/{id}/call. Result is what a
// model would see: on failure an isError result whose text explains it (a
// refusal, invalid arguments, ...). Error repeats that text and Kind names
// the failure; both are empty when the call completed (even if the tool
// itself reported an error in Result).
type CallResponse struct {
	Tool       string          `json:"tool"`
	Result     wire.CallResult `json:"result"`
	Error      string          `json:"error,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Attempts   int             `json:"attempts"`
	DurationMS int64           `json:"durationMs"`
	// Progress counts the call_progress events the call published before
	// this answer, so that a caller relaying them (the gateway) can pass
	// each on before the answer it belongs to; 0 is left out.
	Progress int `json:"progress,omitempty"`
}

// Failure kinds of CallResponse.Kind.
const (
	KindUnknownTool = "unknown_tool"
	KindDenied      = "denied"
	KindNotApproved = "not_approved"
	KindInvalidArgs = "invalid_args"
	KindTimeout     = "timeout"
	KindTransport   = "transport"
	KindPanicked    = "panicked"
	KindCanceled    = "canceled"
	KindFailed      = "failed"
)

// Approval is a call waiting for the user's answer.
type Approval struct {
	ID       string          `json:"id"`
	CallID   string          `json:"callId"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	ReadOnly bool            `json:"readOnly"`
	Reason   string          `json:"reason"`
	// Rule is the permission.ask rule that asks ("" the default, or a
	// sensitive call); Sensitive says no rule lets the call run unasked.
	Rule      string    `json:"rule,omitempty"`
	Sensitive bool      `json:"sensitive,omitempty"`
	Created   time.Time `json:"created"`
}

// ApprovalRequested is published on the registry bus when a call starts
// waiting for approval.
type ApprovalRequested struct{ Approval }

// Kind implements event.Event.
func (ApprovalRequested) Kind() string { return wire.KindApprovalRequested }

// ApprovalAnswered is published when a pending approval was answered (by the
// API, a timeout or the caller going away).
type ApprovalAnswered struct {
	ID       string `json:"id"`
	Approved bool   `json:"approved"`
	// Reason is why it ended without an explicit answer ("timeout",
	// "canceled"); "" when answered.
	Reason string `json:"reason,omitempty"`
}

// Kind implements event.Event.
func (ApprovalAnswered) Kind() string { return wire.KindApprovalAnswered }

// Event is one server-sent event as the client receives it: Data is JSON
// for every event of /v1/events, and the raw line for a followed log.
type Event struct {
	Kind string
	Data string
}

// Decode unmarshals the event's JSON data into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal([]byte(e.Data), v); err != nil {
		return fmt.Errorf("decode %s event: %w", e.Kind, err)
	}
	return nil
}

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
}
