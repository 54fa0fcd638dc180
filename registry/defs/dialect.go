package defs

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/freecode/freecode/jsonschema"
)

// Dialect selects the JSON Schema variant a provider accepts for tool
// parameters. The exact rules are listed here and in DIALECTS.md. A dialect
// only shapes what the model is shown: arguments are always validated
// against the tool's own schema before a call.
//
// DialectJSONSchema: the tool's resolved schema as is (canonical JSON; a
// missing schema becomes {"type":"object","properties":{}}). For providers
// that take full JSON Schema (Anthropic input_schema, MCP-style hosts).
//
// DialectOpenAI: OpenAI function calling (Chat Completions "parameters",
// Responses "parameters") with strict set to false. The API rejects a
// parameters schema whose top level is not type "object" or has
// oneOf/anyOf/allOf/enum/not, and (strict mode) rejects allOf/oneOf,
// not, if/then/else and a few more anywhere, arrays without items and
// objects without properties. Rules, in order:
//  1. Local $ref ("#", "#/$defs/x", "#/definitions/x", any "#/json/pointer")
//     are inlined; sibling keywords of a $ref override the target's. A
//     reference already being expanded twice on the current path
//     (recursion), or one that cannot be resolved locally, becomes {}.
//     $defs, definitions, $schema, $id, $anchor, $dynamicAnchor,
//     $dynamicRef, $vocabulary and $comment are removed.
//  2. allOf is merged into its parent: properties merged recursively,
//     required unioned, any other keyword taken from the parent first, then
//     from the earlier branch.
//  3. oneOf becomes anyOf (if the node has no anyOf already; otherwise it
//     is dropped).
//  4. Removed everywhere: not, if, then, else, dependentSchemas,
//     dependentRequired, dependencies, unevaluatedProperties,
//     unevaluatedItems, patternProperties, propertyNames, contains,
//     minContains, maxContains, prefixItems.
//  5. A tuple (prefixItems, or draft-04 items given as a list) without
//     items gets items covering every position: the common schema when all
//     positions agree, else anyOf of the distinct ones. An array schema
//     (type "array" or a type list containing it) still without items gets
//     items {}.
//  6. Top level: anyOf is flattened — properties are the union of the
//     object branches' (first branch wins on a name clash; non-object
//     branches are ignored) and required is the top level's plus, when
//     every branch is an object, the names required by all of them. enum, const
//     and nullable are dropped at the top; type becomes "object"; a missing
//     properties becomes {}.
//
// DialectGemini: Gemini function declarations ("parameters", an OpenAPI 3.0
// Schema subset). The API rejects $ref alongside other fields, $defs,
// additionalProperties, oneOf, allOf, const, type lists ("Proto field is not
// repeating"), enum on non-string types, formats other than enum/date-time
// (string), float/double (number) and int32/int64 (integer), arrays without
// items, and an object "parameters" with empty properties. Rules 1–3 as for
// OpenAI, then per node:
//   - a type list drops "null" (setting nullable: true); one remaining type
//     is used as is, several become anyOf of one branch per type, each
//     keeping the keywords that apply to its type;
//   - an anyOf branch {"type":"null"} is removed (nullable: true); an anyOf
//     left with one branch is merged into the node;
//   - const becomes a one-value enum; null enum values are removed
//     (nullable: true); an enum of strings is kept (type "string" if
//     untyped); any other enum is removed and its values are appended to
//     the description ("Allowed values: 1, 2.");
//   - format is kept only when supported for the node's type (above);
//   - a node without type gets one: "object" with properties, "array" with
//     items, "string" with enum, none with anyOf, else "string";
//   - an object's empty properties is removed; required keeps only names
//     present in properties; an array without items gets
//     items {"type":"string"};
//   - only these keywords are kept: type, format, title, description,
//     nullable, enum, items, properties, required, minItems, maxItems,
//     minProperties, maxProperties, minLength, maxLength, pattern, minimum,
//     maximum, anyOf, propertyOrdering, default, example.
//
// At the top level the object flattening of OpenAI rule 6 applies, nullable
// and anyOf are removed, type is "object", and when the result has no
// properties the declaration carries no parameters at all (nil schema).
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
		node := c.normalize(topLevel(v))
		if d == DialectGemini {
			node = geminiTop(node)
			if node == nil {
				return nil, nil
			}
		} else {
			node = openAITop(node)
		}
		out = node
	default:
		return nil, fmt.Errorf("convert schema: unknown dialect %q", d)
	}
	b, err := jsonschema.Encode(out)
	if err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	return b, nil
}

type converter struct {
	root   any
	gemini bool
	stack  []string // $ref values being expanded on the current path
}

// Keywords whose value is one subschema, a list of them, or a map of them.
var (
	schemaKeys     = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"}
	schemaListKeys = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	schemaMapKeys  = []string{"properties", "patternProperties", "dependentSchemas"}
)

var droppedMeta = []string{"$defs", "definitions", "$schema", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary", "$comment"}

var openAIDropped = []string{"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "unevaluatedProperties", "unevaluatedItems", "patternProperties", "propertyNames", "contains", "minContains", "maxContains", "prefixItems"}

var geminiKept = []string{"type", "format", "title", "description", "nullable", "enum", "items", "properties", "required", "minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf", "propertyOrdering", "default", "example"}

// normalize returns a new node with rules 1–3 and the dialect's per-node
// rules applied; the input is never modified.
func (c *converter) normalize(v any) any {
	node := c.structural(v)
	if c.gemini {
		return geminiNode(node)
	}
	return openAINode(node)
}

// structural applies rules 1–3 to v: children are fully normalized, allOf
// branches only structurally (they are merged into this node, whose dialect
// rules then apply once).
func (c *converter) structural(v any) map[string]any {
	in, ok := v.(map[string]any)
	if !ok {
		// true, false or garbage: no usable constraint.
		in = map[string]any{}
	}
	if ref, ok := in["$ref"].(string); ok {
		return c.inlineRef(ref, in)
	}
	out := make(map[string]any, len(in))
	for k, val := range in {
		if slices.Contains(droppedMeta, k) || k == "$ref" {
			continue
		}
		switch {
		case slices.Contains(schemaKeys, k):
			if k == "additionalProperties" {
				if _, isBool := val.(bool); isBool {
					out[k] = val
					continue
				}
			}
			if k == "items" {
				if list, isList := val.([]any); isList { // draft-04 tuple form
					out["prefixItems"] = c.normalizeList(list)
					continue
				}
			}
			out[k] = c.normalize(val)
		case k == "allOf":
			list, _ := val.([]any)
			branches := make([]any, 0, len(list))
			for _, b := range list {
				branches = append(branches, c.structural(b))
			}
			out[k] = branches
		case slices.Contains(schemaListKeys, k):
			list, _ := val.([]any)
			if c.gemini && (k == "anyOf" || k == "oneOf") {
				// Gemini has no null type: a null branch makes the node nullable.
				list = slices.DeleteFunc(slices.Clone(list), func(b any) bool {
					bm, _ := b.(map[string]any)
					if t, _ := bm["type"].(string); t == "null" && len(bm) == 1 {
						out["nullable"] = true
						return true
					}
					return false
				})
			}
			out[k] = c.normalizeList(list)
		case slices.Contains(schemaMapKeys, k):
			m, _ := val.(map[string]any)
			nm := make(map[string]any, len(m))
			for name, sub := range m {
				nm[name] = c.normalize(sub)
			}
			out[k] = nm
		default:
			out[k] = val
		}
	}
	mergeAllOf(out)
	tupleToItems(out)
	if one, ok := out["oneOf"]; ok {
		delete(out, "oneOf")
		if _, has := out["anyOf"]; !has {
			out["anyOf"] = one
		}
	}
	return out
}

func (c *converter) normalizeList(list []any) []any {
	out := make([]any, 0, len(list))
	for _, s := range list {
		out = append(out, c.normalize(s))
	}
	return out
}

// tupleToItems gives a tuple array (prefixItems, no items) an items schema
// that covers every position: the common schema when all positions agree,
// else anyOf of the distinct position schemas.
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

// inlineRef expands a $ref node structurally; sibling keywords override the
// target's.
func (c *converter) inlineRef(ref string, node map[string]any) map[string]any {
	siblings := make(map[string]any, len(node))
	for k, v := range node {
		if k != "$ref" {
			siblings[k] = v
		}
	}
	target, ok := c.resolve(ref)
	count := 0
	for _, r := range c.stack {
		if r == ref {
			count++
		}
	}
	if !ok || count >= maxRefExpansions {
		target = map[string]any{}
	}
	c.stack = append(c.stack, ref)
	merged := c.structural(target)
	c.stack = c.stack[:len(c.stack)-1]
	if len(siblings) > 0 {
		for k, v := range c.structural(siblings) {
			merged[k] = v
		}
	}
	return merged
}

// resolve follows a local JSON pointer reference from the document root.
func (c *converter) resolve(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return c.root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // anchors are not supported
	}
	cur := c.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := cur.(type) {
		case map[string]any:
			next, ok := n[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			cur = n[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// mergeAllOf folds node's allOf branches into node (rule 2).
func mergeAllOf(node map[string]any) {
	all, ok := node["allOf"].([]any)
	delete(node, "allOf")
	if !ok {
		return
	}
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
						for kk, vv := range d {
							merged[kk] = vv
						}
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

// openAINode applies OpenAI rules 4–5 to one node.
func openAINode(node map[string]any) map[string]any {
	for _, k := range openAIDropped {
		delete(node, k)
	}
	if slices.Contains(typeList(node), "array") {
		if _, ok := node["items"]; !ok {
			node["items"] = map[string]any{}
		}
	}
	return node
}

// flattenTopAnyOf implements rule 6's anyOf flattening on the top node.
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

// topLevel strips what can never apply to a parameters object before the
// per-node rules run (so that, e.g., a top-level enum is not turned into a
// description).
func topLevel(v any) any {
	in, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(in))
	for k, val := range in {
		out[k] = val
	}
	for _, k := range []string{"enum", "const", "not", "nullable"} {
		delete(out, k)
	}
	if _, ok := out["type"]; ok {
		out["type"] = "object"
	}
	return out
}

func openAITop(v any) any {
	node, _ := v.(map[string]any)
	if node == nil {
		node = map[string]any{}
	}
	flattenTopAnyOf(node)
	for _, k := range []string{"enum", "const", "nullable"} {
		delete(node, k)
	}
	node["type"] = "object"
	delete(node, "items")
	if _, ok := node["properties"].(map[string]any); !ok {
		node["properties"] = map[string]any{}
	}
	return node
}

// Gemini formats supported per type.
var geminiFormats = map[string][]string{
	"string":  {"enum", "date-time"},
	"number":  {"float", "double"},
	"integer": {"int32", "int64"},
}

// Keywords that only apply to some types, used when a type list is split.
var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "minProperties", "maxProperties", "propertyOrdering"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"enum", "format", "pattern", "minLength", "maxLength"},
	"number":  {"enum", "format", "minimum", "maximum"},
	"integer": {"enum", "format", "minimum", "maximum"},
	"boolean": {"enum"},
}

// geminiNode applies the Gemini per-node rules.
func geminiNode(node map[string]any) map[string]any {
	// Type lists.
	if list, ok := node["type"].([]any); ok {
		types := stringList(list)
		nonNull := slices.DeleteFunc(slices.Clone(types), func(s string) bool { return s == "null" })
		if len(nonNull) < len(types) {
			node["nullable"] = true
		}
		switch len(nonNull) {
		case 0:
			node["type"] = "string"
		case 1:
			node["type"] = nonNull[0]
		default:
			var branches []any
			for _, t := range nonNull {
				b := map[string]any{"type": t}
				for _, k := range typeKeywords[t] {
					if v, ok := node[k]; ok {
						b[k] = v
					}
				}
				branches = append(branches, geminiNode(b))
			}
			for _, kws := range typeKeywords {
				for _, k := range kws {
					delete(node, k)
				}
			}
			delete(node, "type")
			node["anyOf"] = branches
		}
	} else if t, ok := node["type"].(string); ok && t == "null" {
		node["type"] = "string"
		node["nullable"] = true
	}
	// anyOf: null branches and single branches.
	if branches, ok := node["anyOf"].([]any); ok {
		kept := make([]any, 0, len(branches))
		for _, b := range branches {
			if bm, ok := b.(map[string]any); ok {
				if t, _ := bm["type"].(string); t == "null" {
					node["nullable"] = true
					continue
				}
			}
			kept = append(kept, b)
		}
		switch len(kept) {
		case 0:
			delete(node, "anyOf")
		case 1:
			delete(node, "anyOf")
			if bm, ok := kept[0].(map[string]any); ok {
				mergeSchema(node, bm)
			}
		default:
			node["anyOf"] = kept
		}
	}
	// const and enum.
	if c, ok := node["const"]; ok {
		if _, has := node["enum"]; !has {
			node["enum"] = []any{c}
		}
		delete(node, "const")
	}
	if enum, ok := node["enum"].([]any); ok {
		vals := make([]any, 0, len(enum))
		allStrings := true
		for _, e := range enum {
			if e == nil {
				node["nullable"] = true
				continue
			}
			if _, ok := e.(string); !ok {
				allStrings = false
			}
			vals = append(vals, e)
		}
		t, _ := node["type"].(string)
		if allStrings && len(vals) > 0 && (t == "" || t == "string") {
			node["enum"] = vals
			node["type"] = "string"
		} else {
			delete(node, "enum")
			if len(vals) > 0 {
				words := make([]string, 0, len(vals))
				for _, v := range vals {
					b, _ := jsonschema.Encode(v)
					words = append(words, string(b))
				}
				desc, _ := node["description"].(string)
				note := "Allowed values: " + strings.Join(words, ", ") + "."
				if desc = strings.TrimRight(desc, " "); desc != "" {
					if !strings.HasSuffix(desc, ".") {
						desc += "."
					}
					note = desc + " " + note
				}
				node["description"] = note
			}
		}
	}
	// Missing type.
	if _, ok := node["type"]; !ok {
		if _, hasAny := node["anyOf"]; !hasAny {
			switch {
			case node["properties"] != nil:
				node["type"] = "object"
			case node["items"] != nil:
				node["type"] = "array"
			default:
				node["type"] = "string"
			}
		}
	}
	t, _ := node["type"].(string)
	// Formats.
	if f, ok := node["format"].(string); ok && !slices.Contains(geminiFormats[t], f) {
		delete(node, "format")
	}
	// Objects and arrays.
	if props, ok := node["properties"].(map[string]any); ok && len(props) == 0 {
		delete(node, "properties")
	}
	if _, ok := node["required"]; ok {
		props, _ := node["properties"].(map[string]any)
		var req []any
		for _, name := range stringList(node["required"]) {
			if _, ok := props[name]; ok {
				req = append(req, name)
			}
		}
		if len(req) == 0 {
			delete(node, "required")
		} else {
			node["required"] = req
		}
	}
	if t == "array" {
		if _, ok := node["items"].(map[string]any); !ok {
			node["items"] = map[string]any{"type": "string"}
		}
	}
	for k := range node {
		if !slices.Contains(geminiKept, k) {
			delete(node, k)
		}
	}
	return node
}

func geminiTop(v any) any {
	node, _ := v.(map[string]any)
	if node == nil {
		node = map[string]any{}
	}
	flattenTopAnyOf(node)
	for _, k := range []string{"enum", "nullable", "items", "format"} {
		delete(node, k)
	}
	node["type"] = "object"
	props, _ := node["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	// Re-run the required filter after flattening.
	var req []any
	for _, name := range stringList(node["required"]) {
		if _, ok := props[name]; ok {
			req = append(req, name)
		}
	}
	if len(req) > 0 {
		node["required"] = req
	} else {
		delete(node, "required")
	}
	return node
}
