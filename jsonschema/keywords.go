package jsonschema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Holds says where a keyword's value holds subschemas.
type Holds uint8

// Shapes of keyword values.
const (
	// HoldsNone: the value is a value, not a schema (type, enum, required…).
	HoldsNone Holds = iota
	// HoldsOne: the value is one subschema (not, additionalProperties…).
	HoldsOne
	// HoldsList: the value is an array of subschemas (allOf, prefixItems…).
	HoldsList
	// HoldsMap: the value is an object whose member values are subschemas
	// (properties, $defs…).
	HoldsMap
	// HoldsOneOrList: one subschema, or before 2020-12 an array of them
	// (items as a tuple).
	HoldsOneOrList
	// HoldsMapOrNames: an object whose member values are subschemas or, in
	// draft-07 and older, arrays of property names (dependencies).
	HoldsMapOrNames
)

// Applies says to what a keyword's subschemas apply.
type Applies uint8

// What subschemas apply to.
const (
	// AppliesNone: the keyword applies no subschema (every value keyword,
	// and contentSchema, which only describes decoded content).
	AppliesNone Applies = iota
	// AppliesToParts: to members, items or property names of the instance.
	AppliesToParts
	// AppliesInPlace: to the instance itself, as the schema holding them
	// does (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas,
	// dependencies, and the references).
	AppliesInPlace
	// AppliesThroughRef: only where a reference names them ($defs,
	// definitions); they are not part of the schema holding them.
	AppliesThroughRef
)

// Keyword is what the walker knows about one keyword. The zero Keyword is a
// keyword it does not know: a value that is copied as it is, an annotation.
type Keyword struct {
	Holds   Holds
	Applies Applies
	// Constraint: the keyword can reject an instance. The others are
	// annotations (title, description, default, examples…) or core
	// keywords about the document.
	Constraint bool
	// Object: the keyword only concerns objects, so a root schema using it
	// describes an object.
	Object bool
	// Core: the keyword is about the schema document rather than the
	// instance: identifiers, anchors, references, definitions, $schema,
	// $vocabulary and $comment.
	Core bool
}

// KeywordOf returns what the walker knows about the keyword name; the zero
// Keyword for one it does not know. It is FreeCode's one keyword table:
// Resolve, the validator's cost estimate and meter, and the provider
// dialects all read it.
func KeywordOf(name string) Keyword {
	switch name {
	// Core.
	case "$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment":
		return Keyword{Core: true}
	case "$defs", "definitions":
		return Keyword{Core: true, Holds: HoldsMap, Applies: AppliesThroughRef}
	case "$ref", "$dynamicRef", "$recursiveRef":
		return Keyword{Core: true, Applies: AppliesInPlace, Constraint: true}

	// Applicators, in place.
	case "allOf", "anyOf", "oneOf":
		return Keyword{Holds: HoldsList, Applies: AppliesInPlace, Constraint: true}
	case "not", "if", "then", "else":
		return Keyword{Holds: HoldsOne, Applies: AppliesInPlace, Constraint: true}
	case "dependentSchemas":
		return Keyword{Holds: HoldsMap, Applies: AppliesInPlace, Constraint: true, Object: true}
	case "dependencies":
		return Keyword{Holds: HoldsMapOrNames, Applies: AppliesInPlace, Constraint: true}

	// Applicators, to parts.
	case "properties", "patternProperties":
		return Keyword{Holds: HoldsMap, Applies: AppliesToParts, Constraint: true, Object: true}
	case "additionalProperties", "propertyNames", "unevaluatedProperties":
		return Keyword{Holds: HoldsOne, Applies: AppliesToParts, Constraint: true, Object: true}
	case "items":
		return Keyword{Holds: HoldsOneOrList, Applies: AppliesToParts, Constraint: true}
	case "prefixItems":
		return Keyword{Holds: HoldsList, Applies: AppliesToParts, Constraint: true}
	case "additionalItems", "contains", "unevaluatedItems":
		return Keyword{Holds: HoldsOne, Applies: AppliesToParts, Constraint: true}

	// Validation, and content.
	case "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum",
		"minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "format",
		"maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
		"contentEncoding", "contentMediaType":
		return Keyword{Constraint: true}
	case "maxProperties", "minProperties", "required", "dependentRequired":
		return Keyword{Constraint: true, Object: true}
	case "contentSchema":
		return Keyword{Holds: HoldsOne, Constraint: true}
	}
	// Annotations (title, description, default, examples, deprecated,
	// readOnly, writeOnly…) and keywords the walker does not know.
	return Keyword{}
}

// Position is where a subschema sits in the schema object holding it.
type Position struct {
	// Keyword holds the subschema.
	Keyword string
	// Name is the member name under a keyword that holds an object of
	// subschemas ("" otherwise, or for a member named "").
	Name string
	// Index is the position in a list of subschemas, -1 when the keyword's
	// value is not a list.
	Index int
}

// Pointer returns the JSON pointer of the position below base, the pointer
// of the schema object holding it: base + "/properties/a~1b", "/allOf/0".
func (p Position) Pointer(base string) string {
	ptr := base + "/" + escapeToken(p.Keyword)
	switch h := KeywordOf(p.Keyword).Holds; {
	case p.Index >= 0:
		return ptr + "/" + strconv.Itoa(p.Index)
	case h == HoldsMap || h == HoldsMapOrNames:
		return ptr + "/" + escapeToken(p.Name)
	}
	return ptr
}

// ShapeError says that a keyword's value does not have the shape the
// keyword takes (Holds): properties that is not an object, allOf that is not
// an array.
type ShapeError struct {
	Keyword string
	Value   any
	// At is the JSON pointer of the value, when the caller of Rewrite knows
	// it ("" otherwise); the message names it.
	At string
}

func (e *ShapeError) Error() string {
	var want string
	switch KeywordOf(e.Keyword).Holds {
	case HoldsList:
		want = "want an array of schemas, got "
	case HoldsMap:
		want = "want an object of schemas, got "
	default:
		want = "want an object, got "
	}
	if e.At != "" {
		return fmt.Sprintf("at %q: %s%s", "#"+pointerFragment(e.At), want, jsonKind(e.Value))
	}
	return e.Keyword + ": " + want + jsonKind(e.Value)
}

// Subschemas calls fn for every subschema directly inside the schema object
// s: in sorted keyword order, then in list order or sorted member order. A
// value whose shape does not fit its keyword holds no subschema here
// (Rewrite reports it); the name lists of dependencies are not subschemas.
// It stops at, and returns, the first error fn returns.
func Subschemas(s map[string]any, fn func(at Position, sub any) error) error {
	var buf [keyBuf]member
	for _, m := range appendSorted(buf[:0], s) {
		if _, err := eachIn(m.key, KeywordOf(m.key).Holds, m.value, fn); err != nil {
			return err
		}
	}
	return nil
}

// Rewrite returns a copy of the schema object s in which every subschema
// directly inside it (as Subschemas visits them, in the same order) is
// replaced by what fn returns for it; every other value is kept as it is,
// except that keywords drop reports true for are left out (nil drop keeps
// them all). s is not modified. Rewrite fails with a *ShapeError when a
// keyword's value does not have the shape the keyword takes, and returns
// the first error fn returns as it is.
func Rewrite(s map[string]any, drop func(kw string, k Keyword) bool, fn func(at Position, sub any) (any, error)) (map[string]any, error) {
	out := make(map[string]any, len(s))
	var buf [keyBuf]member
	for _, m := range appendSorted(buf[:0], s) {
		kw, v := m.key, m.value
		k := KeywordOf(kw)
		if drop != nil && drop(kw, k) {
			continue
		}
		if k.Holds == HoldsNone {
			out[kw] = v
			continue
		}
		// The rewritten value: a list, members, or one subschema.
		var (
			list    []any
			members map[string]any
			one     any
		)
		switch k.Holds {
		case HoldsList, HoldsOneOrList:
			if arr, ok := v.([]any); ok {
				list = make([]any, len(arr))
			}
		case HoldsMap, HoldsMapOrNames:
			if obj, ok := v.(map[string]any); ok {
				members = make(map[string]any, len(obj))
				if k.Holds == HoldsMapOrNames {
					for name, m := range obj {
						if names, ok := m.([]any); ok {
							members[name] = names // not a subschema: kept
						}
					}
				}
			}
		}
		fits, err := eachIn(kw, k.Holds, v, func(at Position, sub any) error {
			r, err := fn(at, sub)
			switch {
			case err != nil:
				return err
			case list != nil:
				list[at.Index] = r
			case members != nil:
				members[at.Name] = r
			default:
				one = r
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !fits {
			return nil, &ShapeError{Keyword: kw, Value: v}
		}
		switch {
		case list != nil:
			out[kw] = list
		case members != nil:
			out[kw] = members
		default:
			out[kw] = one
		}
	}
	return out, nil
}

// keyBuf is how many members a walker sorts without allocating.
const keyBuf = 16

// member is one member of a JSON object.
type member struct {
	key   string
	value any
}

// appendSorted appends m's members, sorted by key, to dst. Walkers pass a
// small array of their own as dst so that most schema objects need no
// allocation.
func appendSorted(dst []member, m map[string]any) []member {
	start := len(dst)
	for k, v := range m {
		dst = append(dst, member{k, v})
	}
	ms := dst[start:]
	if len(ms) > keyBuf {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return dst
	}
	// Most schema objects have a handful of members: insertion sort.
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].key < ms[j-1].key; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
	return dst
}

// eachIn calls fn for every subschema in v, the value of keyword kw, which
// holds subschemas as holds says. fits is false, and fn never called, when
// v does not have that shape.
func eachIn(kw string, holds Holds, v any, fn func(at Position, sub any) error) (fits bool, err error) {
	if holds == HoldsOneOrList {
		holds = HoldsOne
		if _, ok := v.([]any); ok {
			holds = HoldsList
		}
	}
	switch holds {
	case HoldsOne:
		return true, fn(Position{Keyword: kw, Index: -1}, v)
	case HoldsList:
		arr, ok := v.([]any)
		if !ok {
			return false, nil
		}
		for i, sub := range arr {
			if err := fn(Position{Keyword: kw, Index: i}, sub); err != nil {
				return true, err
			}
		}
	case HoldsMap, HoldsMapOrNames:
		obj, ok := v.(map[string]any)
		if !ok {
			return false, nil
		}
		var buf [keyBuf]member
		for _, m := range appendSorted(buf[:0], obj) {
			if _, names := m.value.([]any); names && holds == HoldsMapOrNames {
				continue
			}
			if err := fn(Position{Keyword: kw, Name: m.key, Index: -1}, m.value); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}
