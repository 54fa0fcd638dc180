package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The types of MCP content blocks (a tool result's content[].type) that
// FreeCode knows. A block of another type is passed on as the server sent
// it. Packages compare a block's type with these constants, never with the
// bare strings.
const (
	// ContentText: {"type": "text", "text": …}.
	ContentText = "text"
	// ContentImage: {"type": "image", "data": base64, "mimeType": …}.
	ContentImage = "image"
	// ContentAudio: {"type": "audio", "data": base64, "mimeType": …}.
	ContentAudio = "audio"
	// ContentResource: an embedded resource, {"type": "resource",
	// "resource": {"uri", "text" or "blob", …}}.
	ContentResource = "resource"
	// ContentResourceLink: a link to a resource, {"type":
	// "resource_link", "uri": …, "name": …}.
	ContentResourceLink = "resource_link"
)

// CallResult is a tool's outcome, the one type along a call's path: package
// mcp decodes a server's tools/call answer into it (DecodeContent per
// block), every registry tool returns it, the API answers it (the result
// of POST /v1/tools/{id}/call, docs/api.md) and the gateway passes it on to
// its host (Content.Block per block).
type CallResult struct {
	Content []Content `json:"content"`
	// IsError says the tool ran and reports a failure the model should
	// see; it is not a failure of the call.
	IsError bool `json:"isError,omitempty"`
	// Structured is the tool's structured output (structuredContent)
	// verbatim, nil if none.
	Structured json.RawMessage `json:"structuredContent,omitempty"`
	// Meta is the result's _meta object as the source sent it, nil if
	// none. It is passed on, never shown to a model.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Content is one block of a tool's output, an MCP content block.
type Content struct {
	// Type is the block's type: ContentText, ContentImage, ContentAudio,
	// ContentResource, ContentResourceLink, or another the source sent
	// (its block is then in Raw).
	Type string `json:"type"`
	// Text holds text content, or the text of an embedded text resource.
	Text string `json:"text,omitempty"`
	// Data holds base64 data for image/audio content and blob resources.
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// URI names the resource for resource and resource_link content.
	URI string `json:"uri,omitempty"`
	// Raw is the source's block verbatim when the fields above do not
	// carry it whole (annotations, _meta, fields of its own, an embedded
	// resource, an unknown type); nil when they do. A tool that rewrites
	// the fields of a block clears it.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// TextResult returns a successful result with one text block.
func TextResult(text string) CallResult {
	return CallResult{Content: []Content{{Type: ContentText, Text: text}}}
}

// ErrorResult returns an IsError result with one text block.
func ErrorResult(text string) CallResult {
	return CallResult{Content: []Content{{Type: ContentText, Text: text}}, IsError: true}
}

// Text returns the concatenated text blocks of r, separated by newlines.
func (r CallResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == ContentText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Block is c as an MCP content block: Raw verbatim as its server sent it,
// or else the block its fields make (one FreeCode made).
func (c Content) Block() (json.RawMessage, error) {
	if len(c.Raw) > 0 {
		return c.Raw, nil
	}
	return json.Marshal(c)
}

// embedded is the resource of a "resource" block.
type embedded struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// DecodeContent decodes one MCP content block as a server sent it. Text,
// image, audio, embedded resource and resource link blocks fill the
// matching fields; a block those fields do not carry whole (annotations,
// _meta, fields of its own, a type FreeCode does not know) also keeps its
// JSON verbatim in Raw, so nothing is lost. Raw shares block's bytes.
//
// The block is read field by field rather than decoded whole: a plain text
// block, by far the most common, then costs a scan of its bytes and one
// copy of its text.
func DecodeContent(block json.RawMessage) (Content, error) {
	if !json.Valid(block) {
		var v any
		return Content{}, json.Unmarshal(block, &v) // the syntax error
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
			return Content{}, err
		}
		return Content{Raw: block}, nil // null
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
		return Content{}, err
	}
	out := Content{Type: typeName}
	if other || present&^mappedKeys(out.Type) != 0 || mappedKeys(out.Type) == 0 {
		out.Raw = block
	}
	var errs [2]error
	switch out.Type {
	case ContentText:
		out.Text, errs[0] = jsonString("text", text)
	case ContentImage, ContentAudio:
		out.Data, errs[0] = jsonString("data", data)
		out.MimeType, errs[1] = jsonString("mimeType", mimeType)
	case ContentResourceLink:
		out.URI, errs[0] = jsonString("uri", uri)
		out.MimeType, errs[1] = jsonString("mimeType", mimeType)
	case ContentResource:
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
		return Content{}, err
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
	for _, known := range [...]string{ContentText, ContentImage, ContentAudio, ContentResource, ContentResourceLink, "text/plain", "image/png", "application/json"} {
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

// fieldIter steps through the fields of a JSON object known to be valid,
// without allocating (objectMembers collects them).
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
	case ContentText:
		return keyType | keyText
	case ContentImage, ContentAudio:
		return keyType | keyData | keyMimeType
	case ContentResourceLink:
		return keyType | keyURI | keyMimeType
	}
	return 0
}

// Progress is how far a call in flight got, as its tool (a server's
// notifications/progress) reports it.
type Progress struct {
	// Progress grows with every report; Total is what it counts up to (0:
	// unknown).
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	// Message says what the call is doing, as the tool (a server) wrote
	// it: show it neutralized.
	Message string `json:"message,omitempty"`
}
