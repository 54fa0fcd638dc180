// Package bridge turns the tools of an MCP session into registry tools.
//
// It is the only place where the two vocabularies meet: package mcp knows
// sessions and MCP content blocks, package registry knows provider-neutral
// tools and results, and neither imports the other.
package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

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
// orchestrator's (orchestrator.Limits, per server). A call whose context
// has registry.WithProgress asks the server for progress notices and
// passes them on.
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

func call(caller Caller, name string) func(context.Context, json.RawMessage) (registry.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (registry.Result, error) {
		if fn := registry.ProgressFrom(ctx); fn != nil {
			ctx = mcp.WithProgress(ctx, func(p mcp.Progress) {
				fn(registry.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			})
		}
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
// and the result's _meta are kept byte for byte. Raw, Structured and Meta
// share res's bytes.
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
	if len(res.Meta) > 0 {
		out.Meta = res.Meta
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

// content converts one block. Blocks are read field by field (objectFields)
// rather than decoded whole: a plain text block, by far the most common,
// then costs a scan of its bytes and one copy of its text.
func content(block json.RawMessage) (registry.Content, error) {
	if !json.Valid(block) {
		var v any
		return registry.Content{}, json.Unmarshal(block, &v) // the syntax error
	}
	var (
		typ, text, data, mimeType, uri, resource []byte
		present                                  keySet
		other                                    bool // a key Content has no field for
	)
	fields, isObject := objectFields(block)
	if !isObject {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(block, &m); err != nil {
			return registry.Content{}, err
		}
		return registry.Content{Raw: block}, nil // null
	}
	for fields.next() {
		switch value := fields.value; string(fields.key) {
		case "type":
			typ, present = value, present|keyType
		case "text":
			text, present = value, present|keyText
		case "data":
			data, present = value, present|keyData
		case "mimeType":
			mimeType, present = value, present|keyMimeType
		case "uri":
			uri, present = value, present|keyURI
		case "resource":
			resource = value
			other = true // never carried whole: see mappedKeys
		default:
			other = true
		}
	}
	typeName, err := jsonString("type", typ)
	if err != nil {
		return registry.Content{}, err
	}
	out := registry.Content{Type: typeName}
	if other || present&^mappedKeys(out.Type) != 0 || mappedKeys(out.Type) == 0 {
		out.Raw = block
	}
	var errs [2]error
	switch out.Type {
	case "text":
		out.Text, errs[0] = jsonString("text", text)
	case "image", "audio":
		out.Data, errs[0] = jsonString("data", data)
		out.MimeType, errs[1] = jsonString("mimeType", mimeType)
	case "resource_link":
		out.URI, errs[0] = jsonString("uri", uri)
		out.MimeType, errs[1] = jsonString("mimeType", mimeType)
	case "resource":
		if resource != nil {
			var r *embedded
			if err := json.Unmarshal(resource, &r); err != nil {
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

// jsonString decodes value, a JSON value or nil (absent), as a string;
// absence and null are "". A string without escapes, valid UTF-8, is taken
// as it is.
func jsonString(key string, value []byte) (string, error) {
	if value == nil {
		return "", nil
	}
	if n := len(value); n >= 2 && value[0] == '"' && bytes.IndexByte(value, '\\') < 0 && utf8.Valid(value[1:n-1]) {
		return intern(value[1 : n-1]), nil
	}
	var str string
	if err := json.Unmarshal(value, &str); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return str, nil
}

// intern is s as a string, without a copy for the names MCP gives content
// types and MIME types most often.
func intern(s []byte) string {
	for _, known := range [...]string{"text", "image", "audio", "resource", "resource_link", "text/plain", "image/png", "application/json"} {
		if string(s) == known {
			return known
		}
	}
	return string(s)
}

// objectFields returns the fields of obj, valid JSON, in order; ok is
// false if obj is not an object.
func objectFields(obj []byte) (f fieldIter, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return fieldIter{}, false
	}
	return fieldIter{b: obj, i: skipSpace(obj, i+1)}, true
}

// fieldIter steps through the fields of a JSON object known to be valid.
type fieldIter struct {
	b []byte
	i int // where the next key starts, or the closing brace
	// key is the current field's key as written between its quotes
	// (escapes undecoded), value its value as written.
	key, value []byte
}

// next moves to the next field; it reports false after the last one.
func (f *fieldIter) next() bool {
	b, i := f.b, f.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	end := stringEnd(b, i)
	f.key = b[i+1 : end-1]
	i = skipSpace(b, end)
	i = skipSpace(b, i+1) // past ':'
	end = valueEnd(b, i)
	f.value = b[i:end]
	i = skipSpace(b, end)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	f.i = i
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number, true, false or null
	for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(b[j])) {
		j++
	}
	return j
}

// keySet is a set of the keys Content's fields carry.
type keySet uint8

const (
	keyType keySet = 1 << iota
	keyText
	keyData
	keyMimeType
	keyURI
)

// mappedKeys is, per content type, the set of keys that Content's fields
// carry; none for a type whose blocks are always kept verbatim (resource,
// whose resource object has fields of its own, and unknown types).
func mappedKeys(typ string) keySet {
	switch typ {
	case "text":
		return keyType | keyText
	case "image", "audio":
		return keyType | keyData | keyMimeType
	case "resource_link":
		return keyType | keyURI | keyMimeType
	}
	return 0
}
