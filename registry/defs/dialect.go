package defs

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/freecode/freecode/jsonschema"
)

// Dialect selects the JSON Schema variant a provider accepts for tool
// parameters. DIALECTS.md states every rule in words, with the numbers the
// functions implementing them carry here. A dialect only shapes what the
// model is shown: arguments are always validated against the tool's own
// schema before a call.
//
// A dialect rewrites the tool's input schema, which is jsonschema.Resolve's
// output: self-contained, its references inlined except those a recursive
// schema keeps ("#", "#/$defs/<name>", "#/definitions/<name>"). It resolves
// no reference of its own beyond those, which it follows with
// jsonschema.Lookup.
//
// DialectJSONSchema: the schema as is (canonical JSON; a missing schema
// becomes {"type":"object","properties":{}}). For providers that take full
// JSON Schema (Anthropic input_schema, MCP-style hosts).
//
// DialectOpenAI (function calling "parameters", strict false) and
// DialectGemini (function declarations "parameters", an OpenAPI 3.0 Schema
// subset) share steps 1–4 on every node and step 5 at the top:
//
//  1. references expanded, at most maxRefExpansions times on one path, then
//     {}; core keywords removed;
//  2. allOf merged into its parent;
//  3. oneOf becomes anyOf;
//  4. a tuple gets items covering every position;
//  5. the top level is an object: enum, const, not and nullable go, a top
//     anyOf is flattened into its properties.
//
// OpenAI then: 1. removes the keywords strict mode rejects, 2. gives arrays
// items, 3. gives the top level properties. Gemini: 1. type lists, 2. null
// branches and single-branch anyOf, 3. const and enum, 4. a type for an
// untyped node, 5. formats, 6. objects and arrays, 7. only the keywords
// Gemini knows, 8. the top level, which may carry no parameters at all.
type Dialect string

// Dialects.
const (
	DialectJSONSchema Dialect = "jsonschema"
	DialectOpenAI     Dialect = "openai"
	DialectGemini     Dialect = "gemini"
)

// Dialects lists every supported dialect.
func Dialects() []Dialect { return []Dialect{DialectJSONSchema, DialectOpenAI, DialectGemini} }

// maxRefExpansions is how many times one $ref may be expanded on a single
// path before it is replaced by {} (recursive schemas).
const maxRefExpansions = 2

// emptyObjectSchema is used when a tool declares no schema.
const emptyObjectSchema = `{"properties":{},"type":"object"}`

// ConvertSchema returns schema rewritten for dialect d. The result is
// canonical JSON (sorted keys). For DialectGemini it is nil when the tool
// takes no parameters.
func ConvertSchema(d Dialect, schema json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(schema))) == 0 || strings.TrimSpace(string(schema)) == "null" {
		if d == DialectGemini {
			return nil, nil
		}
		return json.RawMessage(emptyObjectSchema), nil
	}
	v, err := jsonschema.Decode(schema)
	if err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	var out any
	switch d {
	case DialectJSONSchema:
		out = v
	case DialectOpenAI, DialectGemini:
		c := &converter{root: v, gemini: d == DialectGemini}
		node, err := c.normalize(topLevel(v))
		if err != nil {
			return nil, fmt.Errorf("convert schema: %w", err)
		}
		if d == DialectOpenAI {
			out = openAITop(node)
			break
		}
		top := geminiTop(node)
		if top == nil {
			return nil, nil
		}
		out = top
	default:
		return nil, fmt.Errorf("convert schema: unknown dialect %q", d)
	}
	b, err := jsonschema.Encode(out)
	if err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	return b, nil
}

// converter rewrites one schema for the OpenAI or the Gemini dialect.
type converter struct {
	root   any // the whole schema, which references point into
	gemini bool
	stack  []string // $ref values being expanded on the current path
}

// normalize returns v converted: the shared steps, then the dialect's
// per-node rules. v is never modified.
func (c *converter) normalize(v any) (map[string]any, error) {
	node, err := c.structural(v)
	if err != nil {
		return nil, err
	}
	if c.gemini {
		return geminiNode(node), nil
	}
	return openAINode(node), nil
}

// structural applies shared steps 1–4 to v, returning a new node. Its
// subschemas are fully converted, except allOf branches: they get the
// shared steps only, since step 2 merges them into this node, whose
// per-node rules then apply once. A boolean or malformed schema is {};
// additionalProperties keeps its boolean.
func (c *converter) structural(v any) (map[string]any, error) {
	in, ok := v.(map[string]any)
	if !ok {
		in = map[string]any{}
	}
	if ref, ok := in["$ref"].(string); ok {
		return c.inlineRef(ref, in)
	}
	nulls := false // a nullBranch was left in anyOf or oneOf
	out, err := jsonschema.Rewrite(in, isCore, func(at jsonschema.Position, sub any) (any, error) {
		switch at.Keyword {
		case "allOf":
			return c.structural(sub)
		case "additionalProperties":
			if b, ok := sub.(bool); ok {
				return b, nil
			}
		case "anyOf", "oneOf":
			if c.gemini && isNullBranch(sub) {
				nulls = true
				return nullBranch{}, nil
			}
		}
		return c.normalize(sub)
	})
	if err != nil {
		return nil, err
	}
	legacyTuple(out)
	if nulls {
		geminiNullBranches(out)
	}
	mergeAllOf(out)
	oneOfToAnyOf(out)
	tupleToItems(out)
	return out, nil
}

// isCore selects the keywords step 1 removes, before structural converts
// any subschema of theirs ($defs, definitions).
func isCore(_ string, k jsonschema.Keyword) bool { return k.Core }

// inlineRef is step 1 for a node holding $ref: the target, looked up in the
// whole schema, is expanded in its place and the node's other keywords
// override the target's. A reference already expanded maxRefExpansions
// times on the current path (recursion), or one that names nothing in the
// schema, expands to {}.
func (c *converter) inlineRef(ref string, node map[string]any) (map[string]any, error) {
	target, err := jsonschema.Lookup(c.root, ref)
	if err != nil || c.expanding(ref) >= maxRefExpansions {
		target = map[string]any{}
	}
	c.stack = append(c.stack, ref)
	merged, err := c.structural(target)
	c.stack = c.stack[:len(c.stack)-1]
	if err != nil {
		return nil, err
	}
	siblings := make(map[string]any, len(node)-1)
	for k, v := range node {
		if k != "$ref" {
			siblings[k] = v
		}
	}
	if len(siblings) > 0 {
		sib, err := c.structural(siblings)
		if err != nil {
			return nil, err
		}
		maps.Copy(merged, sib)
	}
	return merged, nil
}

// expanding counts the expansions of ref on the current path.
func (c *converter) expanding(ref string) int {
	n := 0
	for _, r := range c.stack {
		if r == ref {
			n++
		}
	}
	return n
}

// mergeAllOf is step 2: node's allOf branches are folded into node.
func mergeAllOf(node map[string]any) {
	v, ok := node["allOf"]
	if !ok {
		return
	}
	delete(node, "allOf")
	all, _ := v.([]any)
	for _, b := range all {
		if bm, ok := b.(map[string]any); ok {
			mergeSchema(node, bm)
		}
	}
}

// mergeSchema merges src into dst; dst wins on conflicting keywords except
// properties (merged recursively) and required (unioned).
func mergeSchema(dst, src map[string]any) {
	for k, v := range src {
		switch k {
		case "properties":
			sp, _ := v.(map[string]any)
			dp, ok := dst[k].(map[string]any)
			if !ok {
				dp = map[string]any{}
			}
			for name, s := range sp {
				if d, ok := dp[name].(map[string]any); ok {
					if sm, ok := s.(map[string]any); ok {
						merged := make(map[string]any, len(d))
						maps.Copy(merged, d)
						mergeSchema(merged, sm)
						dp[name] = merged
					}
					continue
				}
				dp[name] = s
			}
			dst[k] = dp
		case "required":
			dst[k] = unionStrings(stringList(dst[k]), stringList(v))
		default:
			if _, has := dst[k]; !has {
				dst[k] = v
			}
		}
	}
}

// oneOfToAnyOf is step 3: oneOf becomes anyOf, or is dropped when the node
// has an anyOf already.
func oneOfToAnyOf(node map[string]any) {
	one, ok := node["oneOf"]
	if !ok {
		return
	}
	delete(node, "oneOf")
	if _, has := node["anyOf"]; !has {
		node["anyOf"] = one
	}
}

// legacyTuple prepares step 4: a draft-04 tuple (items given as a list) is
// written as prefixItems, unless the node has prefixItems already (then the
// list is dropped).
func legacyTuple(node map[string]any) {
	list, ok := node["items"].([]any)
	if !ok {
		return
	}
	delete(node, "items")
	if _, has := node["prefixItems"]; !has {
		node["prefixItems"] = list
	}
}

// tupleToItems is step 4: a tuple array (prefixItems, no items) gets an
// items schema that covers every position: the common schema when all
// positions agree, else anyOf of the distinct position schemas.
func tupleToItems(node map[string]any) {
	prefix, ok := node["prefixItems"].([]any)
	if !ok || len(prefix) == 0 {
		return
	}
	if _, has := node["items"]; has {
		return
	}
	var distinct []any
	seen := map[string]bool{}
	for _, p := range prefix {
		b, _ := jsonschema.Encode(p)
		if !seen[string(b)] {
			seen[string(b)] = true
			distinct = append(distinct, p)
		}
	}
	if len(distinct) == 1 {
		node["items"] = distinct[0]
	} else {
		node["items"] = map[string]any{"anyOf": distinct}
	}
}

// topLevel is the first half of step 5: it strips what can never apply to
// a parameters object before the per-node rules run (so that, e.g., a
// top-level enum is not turned into a description).
func topLevel(v any) any {
	in, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(in))
	maps.Copy(out, in)
	for _, k := range []string{"enum", "const", "not", "nullable"} {
		delete(out, k)
	}
	if _, ok := out["type"]; ok {
		out["type"] = "object"
	}
	return out
}

// flattenTopAnyOf is the second half of step 5: the top node's anyOf is
// flattened into its properties and required.
func flattenTopAnyOf(node map[string]any) {
	branches, ok := node["anyOf"].([]any)
	delete(node, "anyOf")
	if !ok || len(branches) == 0 {
		return
	}
	props, _ := node["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	allObjects := true
	var common []string
	first := true
	for _, b := range branches {
		if !isObjectSchema(b) {
			allObjects = false
			continue
		}
		bm := b.(map[string]any)
		bp, _ := bm["properties"].(map[string]any)
		for name, s := range bp {
			if _, has := props[name]; !has {
				props[name] = s
			}
		}
		req := stringList(bm["required"])
		if first {
			common, first = req, false
			continue
		}
		common = slices.DeleteFunc(common, func(s string) bool { return !slices.Contains(req, s) })
	}
	node["properties"] = props
	if !allObjects {
		common = nil
	}
	if req := unionStrings(stringList(node["required"]), common); len(req) > 0 {
		node["required"] = req
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func unionStrings(a, b []string) []any {
	out := make([]any, 0, len(a)+len(b))
	seen := map[string]bool{}
	for _, s := range append(slices.Clone(a), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func typeList(node map[string]any) []string {
	switch t := node["type"].(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	}
	return nil
}

func isObjectSchema(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if _, ok := m["properties"]; ok {
		return true
	}
	return slices.Contains(typeList(m), "object")
}
