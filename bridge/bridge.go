// Package bridge turns the tools of an MCP session into registry tools.
//
// It is the only place where the two vocabularies meet: package mcp knows
// sessions, package registry knows provider-neutral tools, and neither
// imports the other. A call's result is the same type on both sides
// (wire.CallResult): mcp decodes it, the registry tool returns it.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// Caller calls a tool by the server's own tool name; *mcp.Session
// satisfies it.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error)
}

// Tools returns one registry.Tool per tool, in the same order. Each tool's
// Source is its server's name; Validate is the tool's schema validator, its
// work bounded and ending with the call's context (ValidateContext; nil when
// it has none); Call goes through caller with the server's own tool name and
// converts the answer to a wire.CallResult. A call error that wraps
// mcp.ErrTransport also wraps registry.ErrTransport, so the orchestrator can
// tell a lost connection from any other failure. The call's timeout is the
// orchestrator's (orchestrator.Limits, per server). A call given a progress
// function asks the server for progress notices and passes them on.
func Tools(caller Caller, tools []mcp.Tool) []registry.Tool {
	out := make([]registry.Tool, 0, len(tools))
	for _, t := range tools {
		rt := registry.Tool{
			ID:          t.ID,
			Source:      t.Server,
			Name:        t.Name,
			Title:       t.Title,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Annotations: t.Annotations,
			ReadOnly:    t.ReadOnly,
			Raw:         t.Raw,
			// Characters estimate as bytes do: four to a token.
			OutputTokensHint: (t.MaxResultChars + 3) / 4,
			Call:             call(caller, t.Name),
		}
		if t.Validator != nil {
			rt.Validate = t.Validator.ValidateContext
		}
		out = append(out, rt)
	}
	return out
}

func call(caller Caller, name string) func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
	return func(ctx context.Context, args json.RawMessage, progress func(wire.Progress)) (wire.CallResult, error) {
		res, err := caller.CallTool(ctx, name, args, progress)
		if err != nil {
			if errors.Is(err, mcp.ErrTransport) && !errors.Is(err, registry.ErrTransport) {
				return wire.CallResult{}, fmt.Errorf("%w: %w", registry.ErrTransport, err)
			}
			return wire.CallResult{}, err
		}
		if res == nil {
			return wire.CallResult{}, fmt.Errorf("tools/call %q: empty result", name)
		}
		return *res, nil
	}
}
