package api

import (
	"context"
	"encoding/json"

	"github.com/freecode/freecode/wire"
)

// Engine is everything FreeCode can be asked: the one interface the API
// server, the gateway and every CLI verb consume. serve.Core implements it
// in process and Client over serve's socket, and both give the same answers
// (the same values, the same errors), which one table of calls checks.
//
// Errors wrap the sentinels of this package so that a caller can branch
// on them whichever implementation answered: ErrNotFound (no such server,
// tool, prompt, resource, approval or elicitation), ErrConflict (the
// request does not fit the server's state), ErrBadRequest (the request's
// values are wrong), ErrTimeout (the server did not answer within its
// callTimeout), ErrInvalidAnswer (an elicitation's answer does not fit).
// A call that did not complete answers a CallResponse that says why and an
// *Error whose Call is that response.
//
// Every method is safe for concurrent use.
type Engine interface {
	StatusReader
	ListReader
	ToolReader
	Caller
	FeatureReader
	Approver
	ElicitationAnswerer
	LogReader
	EventSource
	// Restart restarts one server.
	Restart(ctx context.Context, name string) error
}

// StatusReader is the part of Engine that reports the servers' status.
type StatusReader interface {
	// Status returns the current status snapshot.
	Status(ctx context.Context) (wire.Status, error)
}

// ListReader is the part of Engine that reads everything the servers
// list at once.
type ListReader interface {
	// Lists returns every server's tools (as ServerTools answers them),
	// the resources and prompts of every server that has some (as
	// Resources and Prompts answer for ""), and the servers'
	// instructions, all read at the same moment: one request, however
	// many servers there are.
	Lists(ctx context.Context) (wire.Lists, error)
}

// ToolReader is the part of Engine that lists tools.
type ToolReader interface {
	// Tools returns the provider-facing definitions in dialect ("": the
	// JSON Schema dialect); ToolsSummary the same without the definitions.
	Tools(ctx context.Context, dialect string) (Tools, error)
	ToolsSummary(ctx context.Context, dialect string) (Tools, error)
	// ServerTools returns the tools one server has registered, with its
	// phase; AllServerTools adds those its tools filter hides.
	ServerTools(ctx context.Context, name string) (wire.ServerTools, error)
	AllServerTools(ctx context.Context, name string) (wire.ServerTools, error)
	// ClearLoaded empties the set of tools tool_search loaded.
	ClearLoaded(ctx context.Context) error
}

// Caller is the part of Engine that runs tool calls.
type Caller interface {
	// CallWith runs a tool through the orchestrator: the rules, the
	// approvals, validation and the server's callTimeout (or
	// opts.Timeout). Its progress goes out as wire.CallProgress events
	// with the call's id.
	CallWith(ctx context.Context, toolID string, args json.RawMessage, opts CallOptions) (CallResponse, error)
}

// FeatureReader is the part of Engine that serves what servers offer
// beside tools. A read, a prompt, a subscription and a completion are
// bounded by the server's callTimeout like a call of its tools.
type FeatureReader interface {
	// Resources returns the resources and templates of server ("" every
	// server that has some); Prompts the same for prompts.
	Resources(ctx context.Context, server string) (wire.Resources, error)
	Prompts(ctx context.Context, server string) (wire.Prompts, error)
	ReadResource(ctx context.Context, server, uri string) (wire.ResourceRead, error)
	GetPrompt(ctx context.Context, server, prompt string, args map[string]string) (wire.PromptResult, error)
	// Subscribe subscribes to updates of uri (on) or ends that; updates go
	// out as wire.ResourceUpdated events.
	Subscribe(ctx context.Context, server, uri string, on bool) error
	// Complete asks server for the values an argument of one of its
	// prompts or resource templates may take (completion/complete), as
	// many as mcp.Session.Complete keeps. A server that did not declare
	// completions is ErrConflict, like one that is not ready; a request
	// without a server, ref or argument name ErrBadRequest; a prompt the
	// server does not list ErrNotFound.
	Complete(ctx context.Context, server string, req wire.CompletionRequest) (wire.Completion, error)
}

// Approver is the part of Engine that answers the calls waiting for the
// user's approval.
type Approver interface {
	Approvals(ctx context.Context) ([]Approval, error)
	Answer(ctx context.Context, id string, approve bool) error
}

// ElicitationAnswerer is the part of Engine that answers the servers'
// requests for input.
type ElicitationAnswerer interface {
	Elicitations(ctx context.Context) ([]wire.Elicitation, error)
	AnswerElicitation(ctx context.Context, id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error)
}

// LogReader is the part of Engine that serves the servers' stderr.
type LogReader interface {
	// Logs returns a server's stderr as kept; FollowLogs streams it (a
	// "session" event, the lines kept, then each new line).
	Logs(ctx context.Context, name string) (wire.Logs, error)
	FollowLogs(ctx context.Context, name string) (Stream, error)
}

// EventSource is the part of Engine that publishes what changes.
type EventSource interface {
	// Events subscribes to every event (wire's kinds); it returns once the
	// subscription is in place.
	Events(ctx context.Context) (Stream, error)
}

// Stream is an open stream of events, owned by one goroutine. Next blocks
// for the next event (io.EOF once the stream ended); Close ends it, and so
// does the ctx it was opened with.
type Stream interface {
	Next() (Event, error)
	Close() error
}

var _ Engine = (*Client)(nil)
