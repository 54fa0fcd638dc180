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

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
)

// Caller calls a tool by the server's own tool name; *mcp.Session
// satisfies it.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (*mcpgo.CallToolResult, error)
}

// Tools returns one registry.Tool per tool, in the same order. Each tool's
// Source is its server's name; Validate is the tool's schema validator, its
// work bounded and ending with the call's context (ValidateContext; nil when
// it has none); Call goes through caller with the server's own tool name and
// converts the answer to a registry.Result. A call error that wraps
// mcp.ErrTransport also wraps registry.ErrTransport, so the orchestrator can
// tell a lost connection from any other failure. The call's timeout is the
// orchestrator's (orchestrator.Limits, per server).
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
// resource and resource link blocks fill the matching Content fields; every
// block also keeps its JSON verbatim in Content.Raw, so nothing the server
// sent (annotations, _meta, unknown types) is lost. Structured content is
// kept byte for byte when the wire form is known.
func Result(res *mcpgo.CallToolResult) (registry.Result, error) {
	out := registry.Result{IsError: res.IsError, Content: make([]registry.Content, 0, len(res.Content))}
	for i, c := range res.Content {
		rc, err := content(c)
		if err != nil {
			return registry.Result{}, fmt.Errorf("tool result content #%d: %w", i, err)
		}
		out.Content = append(out.Content, rc)
	}
	switch {
	case len(res.RawStructuredContent) > 0:
		out.Structured = append(json.RawMessage(nil), res.RawStructuredContent...)
	case res.StructuredContent != nil:
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return registry.Result{}, fmt.Errorf("tool result structured content: %w", err)
		}
		out.Structured = b
	}
	return out, nil
}

// content converts one block. Plain text, by far the most common block, is
// taken as is; every other block goes through its JSON form, which is the
// same for mcp-go's value and pointer content types.
func content(c mcpgo.Content) (registry.Content, error) {
	switch t := c.(type) {
	case mcpgo.TextContent:
		if t.Annotations == nil && t.Meta == nil {
			return registry.Content{Type: "text", Text: t.Text}, nil
		}
	case *mcpgo.TextContent:
		if t != nil && t.Annotations == nil && t.Meta == nil {
			return registry.Content{Type: "text", Text: t.Text}, nil
		}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return registry.Content{}, err
	}
	var b struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Resource *struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     string `json:"blob"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return registry.Content{}, err
	}
	out := registry.Content{Type: b.Type}
	if !mappedFully(raw, b.Type) {
		out.Raw = raw
	}
	switch b.Type {
	case "text":
		out.Text = b.Text
	case "image", "audio":
		out.Data, out.MimeType = b.Data, b.MimeType
	case "resource_link":
		out.URI, out.MimeType = b.URI, b.MimeType
	case "resource":
		if b.Resource != nil {
			out.URI, out.MimeType = b.Resource.URI, b.Resource.MimeType
			out.Text, out.Data = b.Resource.Text, b.Resource.Blob
		}
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

// mappedFully reports whether Content's fields carry all of block; if not,
// the block is kept verbatim in Content.Raw so that nothing is lost.
func mappedFully(block []byte, typ string) bool {
	keys := mappedKeys(typ)
	if keys == nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil {
		return false
	}
	for k := range m {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}
