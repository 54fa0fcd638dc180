// Package bridge turns the tools of an MCP session into registry tools.
//
// It is the only place where the two vocabularies meet: package mcp knows
// sessions and MCP content blocks, package registry knows provider-neutral
// tools and results, and neither imports the other.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
)

// Caller calls a tool by the server's own tool name; *mcp.Session
// satisfies it.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallResult, error)
}

// Tools returns one registry.Tool per tool, in the same order. Each tool's
// Source is its server's name; Validate is the tool's schema validator, its
// work bounded and ending with the call's context (ValidateContext; nil when
// it has none); Call goes through caller with the server's own tool name and
// converts the answer to a registry.Result. A call error that wraps
// mcp.ErrTransport also wraps registry.ErrTransport, so the orchestrator can
// tell a lost connection from any other failure. The call's timeout is the
// orchestrator's (registry.Limits, per server).
func Tools(caller Caller, tools []mcp.Tool) []registry.Tool {
	out := make([]registry.Tool, 0, len(tools))
	for _, t := range tools {
		rt := registry.Tool{
			ID:          t.ID,
			Source:      t.Server,
			Title:       t.Title,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Annotations: t.Annotations,
			ReadOnly:    t.ReadOnly,
			Call:        call(caller, t.Name),
		}
		if t.Validator != nil {
			rt.Validate = t.Validator.ValidateContext
		}
		out = append(out, rt)
	}
	return out
}

func call(caller Caller, name string) func(context.Context, json.RawMessage) (registry.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (registry.Result, error) {
		res, err := caller.CallTool(ctx, name, args)
		if err != nil {
			if errors.Is(err, mcp.ErrTransport) && !errors.Is(err, registry.ErrTransport) {
				return registry.Result{}, fmt.Errorf("%w: %w", registry.ErrTransport, err)
			}
			return registry.Result{}, err
		}
		if res == nil {
			return registry.Result{}, fmt.Errorf("tools/call %q: empty result", name)
		}
		return Result(res)
	}
}

// Result converts an MCP tool result. Text, image, audio, embedded
// resource and resource link blocks fill the matching Content fields; a
// block those fields do not carry whole (annotations, _meta, fields of its
// own, a type FreeCode does not know) also keeps its JSON verbatim, as the
// server sent it, in Content.Raw, so nothing is lost. Structured content
// is kept byte for byte. Raw and Structured share res's bytes.
func Result(res *mcp.CallResult) (registry.Result, error) {
	out := registry.Result{IsError: res.IsError, Content: make([]registry.Content, 0, len(res.Content))}
	for i, block := range res.Content {
		rc, err := content(block)
		if err != nil {
			return registry.Result{}, fmt.Errorf("tool result content #%d: %w", i, err)
		}
		out.Content = append(out.Content, rc)
	}
	if len(res.Structured) > 0 {
		out.Structured = res.Structured
	}
	return out, nil
}

// embedded is the resource of a "resource" block.
type embedded struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// content converts one block, decoded into its keys.
func content(block json.RawMessage) (registry.Content, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(block, &keys); err != nil {
		return registry.Content{}, err
	}
	if keys == nil {
		return registry.Content{Raw: block}, nil // null
	}
	str := func(key string) (string, error) {
		var s string
		if v, ok := keys[key]; ok {
			if err := json.Unmarshal(v, &s); err != nil {
				return "", fmt.Errorf("%s: %w", key, err)
			}
		}
		return s, nil
	}
	typeName, err := str("type")
	if err != nil {
		return registry.Content{}, err
	}
	out := registry.Content{Type: typeName}
	if !mappedFully(keys, out.Type) {
		out.Raw = block
	}
	var errs [2]error
	switch out.Type {
	case "text":
		out.Text, errs[0] = str("text")
	case "image", "audio":
		out.Data, errs[0] = str("data")
		out.MimeType, errs[1] = str("mimeType")
	case "resource_link":
		out.URI, errs[0] = str("uri")
		out.MimeType, errs[1] = str("mimeType")
	case "resource":
		if v, ok := keys["resource"]; ok {
			var r *embedded
			if err := json.Unmarshal(v, &r); err != nil {
				errs[0] = fmt.Errorf("resource: %w", err)
			} else if r != nil {
				out.URI, out.MimeType = r.URI, r.MimeType
				out.Text, out.Data = r.Text, r.Blob
			}
		}
	}
	if err := errors.Join(errs[:]...); err != nil {
		return registry.Content{}, err
	}
	return out, nil
}

// mappedKeys lists, per content type, the keys that Content's fields carry.
func mappedKeys(typ string) []string {
	switch typ {
	case "text":
		return []string{"type", "text"}
	case "image", "audio":
		return []string{"type", "data", "mimeType"}
	case "resource_link":
		return []string{"type", "uri", "mimeType"}
	}
	return nil
}

// mappedFully reports whether Content's fields carry all of a block with
// these keys; if not, the block is kept verbatim in Content.Raw so that
// nothing is lost.
func mappedFully(keys map[string]json.RawMessage, typ string) bool {
	mapped := mappedKeys(typ)
	if mapped == nil {
		return false
	}
	for k := range keys {
		if !slices.Contains(mapped, k) {
			return false
		}
	}
	return true
}
