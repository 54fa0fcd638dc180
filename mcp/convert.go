package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/freecode/freecode/jsonschema"
)

// MaxToolIDLen is the longest tool id ConvertTool produces; model providers
// reject longer function names.
const MaxToolIDLen = 64

// toolIDHashLen is how many hex digits of the hash end a shortened id.
const toolIDHashLen = 8

// Tool is one tool of one server, converted from the raw tools/list JSON.
type Tool struct {
	// ID is mcp__<server>__<tool>, sanitised and at most MaxToolIDLen long
	// (see ToolID).
	ID     string
	Server string
	// Name is the server's own tool name, the one CallTool needs.
	Name string
	// Title is the tool's top-level title, or annotations.title.
	Title       string
	Description string
	// InputSchema is the resolved, self-contained schema (jsonschema.Resolve).
	InputSchema json.RawMessage
	// Annotations is the server's annotations object verbatim, nil if none.
	Annotations json.RawMessage
	// ReadOnly is true only when annotations.readOnlyHint is JSON true.
	ReadOnly bool
	// MaxResultChars is the size the server says the tool's results may
	// take whole, from its _meta (MetaMaxResultChars: a positive whole
	// number); 0 when it says nothing. How far it is honoured is the
	// caller's decision.
	MaxResultChars int
	Validator      *jsonschema.Validator
	// Raw is the tools/list element as the server sent it, for what the
	// fields above do not carry (outputSchema, icons, _meta, execution,
	// fields of later revisions): it is shown and passed on, never
	// interpreted. Shared with the session: do not modify it.
	Raw json.RawMessage
	// Warnings lists the references of the input schema that Resolve could
	// not follow: those parts of InputSchema accept any value (see
	// jsonschema.Warning). Nil when there are none. Tools with the same
	// schema share it: do not modify it.
	Warnings []jsonschema.Warning
}

// ToolWarning is a warning about one converted tool: the tool is kept, but
// a reference in its input schema was not followed, so that part of its
// arguments is not checked.
type ToolWarning struct {
	Server string
	// Tool is the server's name for the tool.
	Tool string
	jsonschema.Warning
}

// String names the server, the tool and the reference:
// server "x": tool "y": inputSchema: $ref "https://…" at #/properties/c is
// not fetched; that value accepts anything.
func (w ToolWarning) String() string {
	return fmt.Sprintf("server %q: tool %q: inputSchema: %s", w.Server, w.Tool, w.Warning)
}

// ToolWarnings returns the warnings of tools, in order.
func ToolWarnings(tools []Tool) []ToolWarning {
	var out []ToolWarning
	for _, t := range tools {
		for _, w := range t.Warnings {
			out = append(out, ToolWarning{Server: t.Server, Tool: t.Name, Warning: w})
		}
	}
	return out
}

// ConvertError says why one tool of a server was not converted.
type ConvertError struct {
	Server string
	// Tool is the server's name for the tool, "" if it had none.
	Tool string
	// Index is the tool's position in the list given to ConvertTools, -1
	// from ConvertTool.
	Index int
	Err   error
}

func (e *ConvertError) Error() string {
	if e.Tool == "" {
		if e.Index < 0 {
			return fmt.Sprintf("server %q: %v", e.Server, e.Err)
		}
		return fmt.Sprintf("server %q: tool #%d: %v", e.Server, e.Index, e.Err)
	}
	return fmt.Sprintf("server %q: tool %q: %v", e.Server, e.Tool, e.Err)
}

func (e *ConvertError) Unwrap() error { return e.Err }

// ToolID returns mcp__<server>__<tool>, made only of [A-Za-z0-9_-] and
// at most MaxToolIDLen long. Every other character becomes "_". In the tool
// part runs of "_" are then collapsed to one and a leading or trailing "_"
// is dropped, so the tool part never holds the separator "__" nor touches
// it: with a server name as the config allows (no "__", not ending in "_")
// the id never holds "___" and splits into server and tool at its first
// "__" after "mcp__", one way only. A tool part left empty is "tool_" and
// the first 8 hex digits of the SHA-256 of the unsanitised
// "mcp__<server>__<tool>".
//
// An id longer than MaxToolIDLen keeps its server part whole and shortens
// the tool part to what fits of its start, "_" and the same 8 hex digits,
// so it is stable and distinct names stay distinct with high probability.
// A server name of up to MaxToolIDLen-len("mcp____")-8 (49) characters
// always fits (the config allows 48); a longer one yields a longer id.
// Distinct names can still map to one id ("a.b" and "a__b" both give
// "a_b"); ConvertTools reports that.
func ToolID(server, tool string) string {
	prefix := "mcp__" + sanitizeID(server) + "__"
	part := strings.Trim(collapseUnderscores(sanitizeID(tool)), "_")
	if part != "" && len(prefix)+len(part) <= MaxToolIDLen {
		return prefix + part
	}
	sum := sha256.Sum256([]byte("mcp__" + server + "__" + tool))
	hash := hex.EncodeToString(sum[:])[:toolIDHashLen]
	if part == "" {
		part = "tool"
	}
	keep := max(MaxToolIDLen-len(prefix)-toolIDHashLen-1, 0)
	if head := strings.TrimRight(part[:min(keep, len(part))], "_"); head != "" {
		return prefix + head + "_" + hash
	}
	return prefix + hash
}

// sanitizeID replaces every character outside [A-Za-z0-9_-] by "_".
func sanitizeID(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		if c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// collapseUnderscores replaces each run of "_" in s by one.
func collapseUnderscores(s string) string {
	if !strings.Contains(s, "__") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && i > 0 && s[i-1] == '_' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MetaMaxResultChars is the key of a tool's _meta by which a server says
// how large (in characters) the tool's results may be given whole, as
// Claude Code reads it.
const MetaMaxResultChars = "anthropic/maxResultSizeChars"

// rawTool is the part of a tools/list entry a Tool is built from.
type rawTool struct {
	Name        *string         `json:"name"`
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
	Meta        json.RawMessage `json:"_meta"`
}

// maxResultChars reads MetaMaxResultChars from a tool's _meta: a positive
// whole number (larger ones count as math.MaxInt32), else 0.
func maxResultChars(meta json.RawMessage) int {
	if m := bytes.TrimSpace(meta); len(m) == 0 || m[0] != '{' {
		return 0
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(meta, &fields) != nil {
		return 0
	}
	// A JSON number, not a string holding one.
	n := bytes.TrimSpace(fields[MetaMaxResultChars])
	v, err := strconv.ParseInt(string(n), 10, 64)
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && len(n) > 0 && n[0] != '-' {
		return math.MaxInt32
	}
	if err != nil || v <= 0 {
		return 0
	}
	return int(min(v, math.MaxInt32))
}

// ConvertTool converts raw, one element of a tools/list result's "tools"
// array as the server sent it. The raw JSON is used rather than a decoded
// SDK type so that nothing in the input schema is lost (top-level oneOf,
// description, $defs …). The tool needs a non-empty string name and a schema
// that jsonschema.Resolve accepts (which implies jsonschema.Compile does); a missing schema means
// "no arguments". A schema with references Resolve cannot follow (remote,
// file, or naming nothing) is accepted with those parts degraded to any
// value, and listed in Tool.Warnings. Errors name the server and the tool.
func ConvertTool(server string, raw json.RawMessage) (Tool, error) {
	return convertTool(server, raw, prepare)
}

// prepared is the outcome of jsonschema.Prepare for one input schema: the
// resolved schema, its validator and warnings, or the error.
type prepared struct {
	jsonschema.Prepared
	err error
}

func prepare(schema json.RawMessage) prepared {
	p, err := jsonschema.Prepare(schema)
	return prepared{Prepared: p, err: err}
}

// convertTool is ConvertTool with prep supplying the prepared input schema,
// possibly shared: preparing is deterministic and a Validator is immutable,
// so tools (and sessions) with the same schema bytes can share the result.
func convertTool(server string, raw json.RawMessage, prep func(json.RawMessage) prepared) (Tool, error) {
	var rt rawTool
	if err := json.Unmarshal(raw, &rt); err != nil {
		return Tool{}, &ConvertError{Server: server, Index: -1, Err: fmt.Errorf("parse tool: %w", err)}
	}
	if rt.Name == nil || *rt.Name == "" {
		return Tool{}, &ConvertError{Server: server, Index: -1, Err: errors.New("tool has no name")}
	}
	name := *rt.Name
	fail := func(err error) (Tool, error) {
		return Tool{}, &ConvertError{Server: server, Tool: name, Index: -1, Err: err}
	}
	p := prep(rt.InputSchema)
	if p.err != nil {
		return fail(fmt.Errorf("inputSchema: %w", p.err))
	}
	t := Tool{
		ID:             ToolID(server, name),
		Server:         server,
		Name:           name,
		InputSchema:    p.Schema,
		Validator:      p.Validator,
		Warnings:       p.Warnings,
		MaxResultChars: maxResultChars(rt.Meta),
		Raw:            raw,
	}
	if rt.Description != nil {
		t.Description = *rt.Description
	}
	if rt.Title != nil {
		t.Title = *rt.Title
	}
	if ann := bytes.TrimSpace(rt.Annotations); len(ann) > 0 && ann[0] == '{' {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(ann, &fields); err == nil {
			var title string
			if t.Title == "" && json.Unmarshal(fields["title"], &title) == nil {
				t.Title = title
			}
			t.ReadOnly = string(bytes.TrimSpace(fields["readOnlyHint"])) == "true"
		}
		t.Annotations = slices.Clone(ann)
	}
	return t, nil
}

// ConvertTools converts every raw tool of one server. Tools are returned
// sorted by ID; each failure is a *ConvertError, in input order. When two or
// more tools map to the same ID none of them is kept and each gets an error
// naming the others, so a tool is never silently replaced by another.
// Tools whose input schemas are byte-for-byte equal share one resolved
// schema and one Validator: each distinct schema is prepared once.
func ConvertTools(server string, raws []json.RawMessage) ([]Tool, []error) {
	return (*SchemaCache)(nil).ConvertTools(server, raws)
}

// ConvertTools is the package's ConvertTools, taking prepared schemas from
// c and adding the ones it prepares. A nil c only shares within the list.
func (c *SchemaCache) ConvertTools(server string, raws []json.RawMessage) ([]Tool, []error) {
	converted := make([]*Tool, len(raws))
	errs := make([]error, len(raws))
	byID := map[string][]int{}
	memo := make(map[string]prepared)
	prep := func(schema json.RawMessage) prepared {
		if p, ok := memo[string(schema)]; ok {
			return p
		}
		p, ok := c.get(schema)
		if !ok {
			p = prepare(schema)
			c.put(schema, p)
		}
		memo[string(schema)] = p
		return p
	}
	for i, raw := range raws {
		t, err := convertTool(server, raw, prep)
		if err != nil {
			var ce *ConvertError
			if !errors.As(err, &ce) {
				ce = &ConvertError{Server: server, Err: err}
			}
			ce.Index = i
			errs[i] = ce
			continue
		}
		converted[i] = &t
		byID[t.ID] = append(byID[t.ID], i)
	}
	for id, idx := range byID {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			var others []string
			for _, j := range idx {
				if j != i {
					others = append(others, fmt.Sprintf("%q (#%d)", converted[j].Name, j))
				}
			}
			errs[i] = &ConvertError{
				Server: server,
				Tool:   converted[i].Name,
				Index:  i,
				Err:    fmt.Errorf("id %q is also the id of tool %s; none of them is kept", id, strings.Join(others, ", ")),
			}
		}
		for _, i := range idx {
			converted[i] = nil
		}
	}
	var tools []Tool
	for _, t := range converted {
		if t != nil {
			tools = append(tools, *t)
		}
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.ID, b.ID) })
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return tools, out
}
