package defs

import (
	"slices"
	"strings"

	"github.com/freecode/freecode/jsonschema"
)

// geminiKept are the only keywords Gemini rule 7 keeps.
var geminiKept = []string{"type", "format", "title", "description", "nullable", "enum", "items", "properties", "required", "minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf", "propertyOrdering", "default", "example"}

// geminiFormats are the formats Gemini rule 5 keeps, per type.
var geminiFormats = map[string][]string{
	"string":  {"enum", "date-time"},
	"number":  {"float", "double"},
	"integer": {"int32", "int64"},
}

// typeKeywords are the kept keywords that only apply to some types: Gemini
// rule 1 gives each branch of a split type list those of its type.
var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "minProperties", "maxProperties", "propertyOrdering"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"enum", "format", "pattern", "minLength", "maxLength"},
	"number":  {"enum", "format", "minimum", "maximum"},
	"integer": {"enum", "format", "minimum", "maximum"},
	"boolean": {"enum"},
}

// geminiNode applies the Gemini per-node rules 1–7, in order, to a node
// whose subschemas are converted already. (The first half of rule 2,
// geminiNullBranches, runs in structural: it must see the branches as they
// were.)
func geminiNode(node map[string]any) map[string]any {
	geminiTypes(node)
	geminiSingleBranch(node)
	geminiEnum(node)
	geminiUntyped(node)
	t, _ := node["type"].(string) // as rule 4 left it
	geminiFormat(node, t)
	geminiObjectsAndArrays(node, t)
	geminiKeptOnly(node)
	return node
}

// geminiTypes is Gemini rule 1: a type list drops "null" (nullable: true);
// one remaining type is used as is, none gives "string", several become
// anyOf of one branch per type, each keeping the keywords of its type
// (typeKeywords) and converted by geminiNode. type "null" alone is
// {"type":"string","nullable":true}.
func geminiTypes(node map[string]any) {
	if t, ok := node["type"].(string); ok && t == "null" {
		node["type"] = "string"
		node["nullable"] = true
		return
	}
	list, ok := node["type"].([]any)
	if !ok {
		return
	}
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
}

// nullBranch stands, in a converted anyOf or oneOf, for a branch that was
// exactly {"type":"null"} (see geminiNullBranches).
type nullBranch struct{}

func isNullBranch(v any) bool {
	m, _ := v.(map[string]any)
	t, _ := m["type"].(string)
	return t == "null" && len(m) == 1
}

// geminiNullBranches is the first half of Gemini rule 2: a branch of anyOf
// or oneOf that is exactly {"type":"null"} is removed and makes the node
// nullable. The branch is recognised before it is converted (which would
// type it), and left as a nullBranch for this rule to remove.
func geminiNullBranches(node map[string]any) {
	for _, k := range [...]string{"anyOf", "oneOf"} {
		list, ok := node[k].([]any)
		if !ok {
			continue
		}
		node[k] = slices.DeleteFunc(list, func(b any) bool {
			if _, null := b.(nullBranch); null {
				node["nullable"] = true
				return true
			}
			return false
		})
	}
}

// geminiSingleBranch is the second half of Gemini rule 2: an anyOf left
// with one branch is merged into the node, an empty one removed.
func geminiSingleBranch(node map[string]any) {
	branches, ok := node["anyOf"].([]any)
	if !ok {
		return
	}
	switch len(branches) {
	case 0:
		delete(node, "anyOf")
	case 1:
		delete(node, "anyOf")
		if bm, ok := branches[0].(map[string]any); ok {
			mergeSchema(node, bm)
		}
	}
}

// geminiEnum is Gemini rule 3: const becomes a one-value enum (and is
// dropped when the node has an enum already); null enum values are removed (nullable: true); an enum of strings is kept (type
// "string" if untyped); any other enum is removed and its values are
// appended to the description ("Allowed values: 1, 2.").
func geminiEnum(node map[string]any) {
	if c, ok := node["const"]; ok {
		if _, has := node["enum"]; !has {
			node["enum"] = []any{c}
		}
		delete(node, "const")
	}
	enum, ok := node["enum"].([]any)
	if !ok {
		return
	}
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
		return
	}
	delete(node, "enum")
	if len(vals) == 0 {
		return
	}
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

// geminiUntyped is Gemini rule 4: a node without type and without anyOf
// gets one: "object" with properties, "array" with items, else "string".
// (An enum made it "string" in rule 3.)
func geminiUntyped(node map[string]any) {
	if _, ok := node["type"]; ok {
		return
	}
	if _, hasAny := node["anyOf"]; hasAny {
		return
	}
	switch {
	case node["properties"] != nil:
		node["type"] = "object"
	case node["items"] != nil:
		node["type"] = "array"
	default:
		node["type"] = "string"
	}
}

// geminiFormat is Gemini rule 5: format is kept only when Gemini supports
// it for the node's type t (geminiFormats).
func geminiFormat(node map[string]any, t string) {
	if f, ok := node["format"].(string); ok && !slices.Contains(geminiFormats[t], f) {
		delete(node, "format")
	}
}

// geminiObjectsAndArrays is Gemini rule 6: an empty properties is removed;
// required keeps only names present in properties; an array (type t)
// without items gets items {"type":"string"}.
func geminiObjectsAndArrays(node map[string]any, t string) {
	if props, ok := node["properties"].(map[string]any); ok && len(props) == 0 {
		delete(node, "properties")
	}
	if _, ok := node["required"]; ok {
		props, _ := node["properties"].(map[string]any)
		if req := presentNames(node["required"], props); len(req) == 0 {
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
}

// geminiKeptOnly is Gemini rule 7: only the keywords of geminiKept stay.
func geminiKeptOnly(node map[string]any) {
	for k := range node {
		if !slices.Contains(geminiKept, k) {
			delete(node, k)
		}
	}
}

// geminiTop is shared step 5 and Gemini rule 8 on the converted top node:
// anyOf flattened, enum, nullable, items and format removed, type "object",
// required filtered again after the flattening; nil, for a declaration
// without parameters, when no properties are left.
func geminiTop(node map[string]any) map[string]any {
	flattenTopAnyOf(node)
	for _, k := range []string{"enum", "nullable", "items", "format"} {
		delete(node, k)
	}
	node["type"] = "object"
	props, _ := node["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	if req := presentNames(node["required"], props); len(req) > 0 {
		node["required"] = req
	} else {
		delete(node, "required")
	}
	return node
}

// presentNames returns the names of required that props has, in order.
func presentNames(required any, props map[string]any) []any {
	var req []any
	for _, name := range stringList(required) {
		if _, ok := props[name]; ok {
			req = append(req, name)
		}
	}
	return req
}
