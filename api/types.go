package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
)

// ErrNotFound is wrapped by backend errors that mean "no such server" (or
// tool, or approval); the server answers them with 404.
var ErrNotFound = errors.New("not found")

// ErrNotRunning is returned (wrapped) by Dial when no serve answers on the
// socket.
var ErrNotRunning = errors.New("freecode serve is not running")

// Status is the answer of GET /v1/status.
type Status struct {
	// ServePID is the pid of the serve process (0 when the status was not
	// produced by a running serve).
	ServePID int `json:"servePid,omitempty"`
	// ConfigPath is the file serve watches.
	ConfigPath string `json:"configPath,omitempty"`
	// ConfigError is why the last edit of the config was not applied ("" if
	// it was); the last good config stays applied meanwhile.
	ConfigError string         `json:"configError,omitempty"`
	Servers     []ServerStatus `json:"servers"`
	ObservedAt  time.Time      `json:"observedAt,omitzero"`

	// ProjectError is why the project's settings file is ignored (it is
	// invalid: the reason quotes its positioned errors), "" when it is
	// not; the user's config applies meanwhile.
	ProjectError string `json:"projectError,omitempty"`
}

// Desired is what the config asks for one server.
type Desired struct {
	Enabled  bool   `json:"enabled"`
	SpecHash string `json:"specHash,omitempty"`
	Type     string `json:"type,omitempty"`
	// Target is the command line of a local server or the URL of a remote one.
	Target string `json:"target,omitempty"`
}

// ServerStatus is one server, desired next to actual.
type ServerStatus struct {
	Name    string  `json:"name"`
	Source  string  `json:"source,omitempty"`
	Desired Desired `json:"desired"`
	// Phase is pending, starting, ready, backoff, stopping, stopped,
	// disabled, untrusted or conflict; "" when nothing observed the actual
	// side.
	Phase string `json:"phase,omitempty"`
	// SpecHash is the spec of what runs; it differs from Desired.SpecHash
	// while a changed server restarts.
	SpecHash           string    `json:"specHash,omitempty"`
	Generation         int64     `json:"generation,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	PID                int       `json:"pid,omitempty"`
	Tools              int       `json:"tools"`
	Restarts           int       `json:"restarts"`
	Since              time.Time `json:"since,omitzero"`
	// LastError is the failure the server is in now; "" once it is ready
	// again (unless its tools were refused). LastFailure and LastFailureAt
	// keep the most recent failure after it recovered.
	LastError     string    `json:"lastError,omitempty"`
	LastFailure   string    `json:"lastFailure,omitempty"`
	LastFailureAt time.Time `json:"lastFailureAt,omitzero"`
	// Reason says why a configured server does not run by design: its
	// project is not trusted, or its name is defined twice.
	Reason     string    `json:"reason,omitempty"`
	StderrTail []string  `json:"stderrTail,omitempty"`
	NextRetry  time.Time `json:"nextRetry,omitzero"`
}

// Tools is the answer of GET /v1/tools.
type Tools struct {
	Dialect  string     `json:"dialect"`
	Version  string     `json:"version"`
	Tools    []defs.Def `json:"tools"`
	Problems []string   `json:"problems,omitempty"`
}

// CallResponse is the answer of POST /v1/tools/{id}/call. Result is what a
// model would see: on failure an isError result whose text explains it (a
// refusal, invalid arguments, ...). Error repeats that text and Kind names
// the failure; both are empty when the call completed (even if the tool
// itself reported an error in Result).
type CallResponse struct {
	Tool       string          `json:"tool"`
	Result     registry.Result `json:"result"`
	Error      string          `json:"error,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Attempts   int             `json:"attempts"`
	DurationMS int64           `json:"durationMs"`
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
	Created  time.Time       `json:"created"`
}

// ApprovalRequested is published on the registry bus when a call starts
// waiting for approval.
type ApprovalRequested struct{ Approval }

// Kind implements event.Event.
func (ApprovalRequested) Kind() string { return "approval_requested" }

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
func (ApprovalAnswered) Kind() string { return "approval_answered" }

// Logs is the answer of GET /v1/servers/{name}/logs.
type Logs struct {
	Server string   `json:"server"`
	Lines  []string `json:"lines"`
	// Session identifies the session (start attempt) the lines come from;
	// it changes when the server restarts. 0 when unknown.
	Session int64 `json:"session,omitempty"`
}

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
