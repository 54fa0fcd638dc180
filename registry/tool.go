// Package registry holds every tool FreeCode can call — built-ins and MCP
// tools alike: the Tool type, the store keyed by id and grouped by source
// (Registry), and FreeCode's own tools (Builtins). Beside the tools it keeps
// what each source offers besides — resources, resource templates and
// prompts (Features) — grouped by source the same way. The rooms around it have
// packages of their own: registry/event (the bus ToolsChanged goes out on),
// registry/orchestrator (permission rules and the batches of calls) and
// registry/defs (provider-facing definitions and their dialects).
//
// The package does not know where a tool came from beyond its source name
// ("builtin" or an MCP server's name); adapters build Tool values and hand
// them to Registry.ReplaceSource.
package registry

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/freecode/freecode/wire"
)

// SourceBuiltin is the source name of FreeCode's own tools.
const SourceBuiltin = "builtin"

type approvedKey struct{}

// Approved reports whether ctx is the context of a call that was put to the
// Approver and approved. A tool whose Sensitive check made the orchestrator
// ask can check again, at the moment it acts, that what it touches is what
// the user approved (or was not sensitive at all).
func Approved(ctx context.Context) bool {
	ok, _ := ctx.Value(approvedKey{}).(bool)
	return ok
}

// WithApproval returns ctx marked as the context of an approved call
// (Approved reports true for it). The orchestrator marks the context of
// every call the Approver approved, and nothing else should.
func WithApproval(ctx context.Context) context.Context {
	return context.WithValue(ctx, approvedKey{}, true)
}

// ErrTransport marks a call that failed in transport (connection lost,
// process exited, malformed response) rather than in the tool itself.
// Adapters wrap their own transport errors so that
// errors.Is(err, ErrTransport) holds; the orchestrator retries a read-only
// call once on such an error and never retries anything else.
var ErrTransport = errors.New("transport failure")

// Tool is one callable tool. Tools are values: the registry copies them,
// and the function fields must be safe for concurrent use.
type Tool struct {
	// ID is the provider-facing name, unique across all sources:
	// "read", "write", or mcp__<server>__<tool>.
	ID string
	// Source is "builtin" or the MCP server's name; ReplaceSource sets it.
	Source string
	// Name is the tool's own name at its source, as an MCP server lists
	// it (the ID is made of it, sanitized); "" means the ID. It is shown,
	// not compared: it is no part of change detection.
	Name        string
	Title       string
	Description string
	// InputSchema is a self-contained JSON Schema object describing the
	// arguments. nil means "no arguments" ({"type":"object"}).
	InputSchema json.RawMessage
	// Annotations is the source's annotations object verbatim (nil if none).
	Annotations json.RawMessage
	// ReadOnly is true only when the source says the tool does not change
	// anything; everything else is treated as mutating: it runs alone and
	// is never retried.
	ReadOnly bool
	// Raw is the tool as its source listed it (an MCP server's tools/list
	// element; nil for a built-in), for what the fields above do not carry
	// (outputSchema, icons, _meta): it is shown and passed on to hosts,
	// never advertised to a model. It is part of change detection as
	// canonical JSON, so a changed icon is a change (ToolsChanged), but the
	// provider-facing definitions are made of the fields above alone: their
	// bytes, and the version that hashes them, stay as they were.
	Raw json.RawMessage
	// OutputTokensHint is how large, in estimated tokens, the source says
	// the tool's results may be given whole (an MCP tool's _meta
	// "anthropic/maxResultSizeChars"); 0: it says nothing. The
	// orchestrator honours it up to its ceiling (orchestrator.Limits). It
	// is no part of change detection: it changes no definition.
	OutputTokensHint int
	// Validate checks arguments before any call; nil means no validation.
	// Its error text is shown to the model, so it should say what is wrong.
	// It must return promptly once ctx ends: the orchestrator bounds every
	// validation by the call's ctx and by orchestrator.Options.ValidateTimeout
	// (jsonschema.ValidateContext does; see also ErrTooCostly there).
	Validate func(ctx context.Context, args json.RawMessage) error
	// Sensitive, when set, is asked about every call whose arguments passed
	// Validate. A non-empty answer says the call would touch something the
	// user must see first (the built-in read of a file in FreeCode's home,
	// where provider keys are): the call is put to the Approver with that
	// reason whatever the rules allow; only a deny rule still wins. The call
	// itself can check Approved(ctx). It must be cheap and safe for
	// concurrent use.
	Sensitive func(args json.RawMessage) (reason string)
	// Call runs the tool. It must honour ctx (cancellation and deadline).
	// A tool-level failure is a result with IsError; a non-nil error means
	// the call could not be completed (wrap ErrTransport for transport
	// failures). progress, when not nil, is given the call's progress
	// reports if the tool can make them (an MCP tool asks its server for
	// progress notices), in the order they came; it must not block, since
	// it may run on the goroutine that reads a server's messages, and is
	// not called once Call has returned.
	Call func(ctx context.Context, args json.RawMessage, progress func(wire.Progress)) (wire.CallResult, error)
}
