package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// `mcp call <tool> ...` takes a tool's arguments as one JSON object or as
// key=value words. A word's value is text; the tool's input schema says
// what it is meant to be (a number, true or false, a list), so the words
// are made into JSON only once that schema is known: through serve from
// serve's listing of the tool, in a one-shot session from the registry.

// callInput is the arguments of a call as given.
type callInput struct {
	// raw is the JSON object given, or nil for key=value words.
	raw   json.RawMessage
	pairs []keyValue
}

type keyValue struct{ key, value string }

// parseCallInput reads the words after the tool id: nothing ({}), one
// JSON object, or key=value words.
func parseCallInput(words []string) (callInput, error) {
	if len(words) == 0 {
		return callInput{raw: json.RawMessage("{}")}, nil
	}
	if len(words) == 1 && strings.HasPrefix(strings.TrimSpace(words[0]), "{") {
		if !json.Valid([]byte(words[0])) {
			return callInput{}, usageError{fmt.Errorf("arguments are not valid JSON: %s", words[0])}
		}
		return callInput{raw: json.RawMessage(words[0])}, nil
	}
	var in callInput
	seen := map[string]bool{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case strings.HasPrefix(strings.TrimSpace(w), "{"):
			return callInput{}, usageError{fmt.Errorf("give the arguments as one JSON object or as key=value words, not both: %s", w)}
		case !ok || k == "":
			return callInput{}, usageError{fmt.Errorf("argument %q is not key=value (or give every argument as one JSON object: '{\"key\": \"value\"}')", w)}
		case seen[k]:
			return callInput{}, usageError{fmt.Errorf("argument %q is given twice", k)}
		}
		seen[k] = true
		in.pairs = append(in.pairs, keyValue{k, v})
	}
	return in, nil
}

// resolve returns the arguments as the JSON object to send: the object
// given, or the key=value words typed by inputSchema, the tool's input
// schema (nil when not known: every value is then a string).
func (in callInput) resolve(inputSchema json.RawMessage) (json.RawMessage, error) {
	if in.raw != nil {
		return in.raw, nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(inputSchema, &s) // no schema, no types: strings
	out := make(map[string]json.RawMessage, len(in.pairs))
	for _, p := range in.pairs {
		types := schemaTypes(s.Properties[p.key])
		v, ok := typedValue(p.value, types)
		if !ok {
			return nil, usageError{fmt.Errorf("argument %s: the tool's input schema wants %s, not %q",
				p.key, describeTypes(types), p.value)}
		}
		out[p.key] = v
	}
	return json.Marshal(out)
}

// schemaTypes are the JSON types a property's schema allows: its "type"
// (one name or a list), or those of its anyOf/oneOf branches. None: the
// schema does not say.
func schemaTypes(prop json.RawMessage) []string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if json.Unmarshal(prop, &s) != nil {
		return nil
	}
	var types []string
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		types = append(types, one)
	} else {
		_ = json.Unmarshal(s.Type, &types)
	}
	for _, b := range append(s.AnyOf, s.OneOf...) {
		types = append(types, schemaTypes(b)...)
	}
	return types
}

// typeOrder is the order a value is tried in when several types are
// allowed: a string last, since any text is one.
func typeOrder() []string {
	return []string{"null", "boolean", "integer", "number", "array", "object", "string"}
}

// typedValue is text as a JSON value of one of types; any text is a
// string when types is empty. ok is false when it is none of them.
func typedValue(text string, types []string) (json.RawMessage, bool) {
	if len(types) == 0 {
		types = []string{"string"}
	}
	for _, t := range typeOrder() {
		if !slices.Contains(types, t) {
			continue
		}
		trimmed := strings.TrimSpace(text)
		switch t {
		case "null":
			if text == "null" {
				return json.RawMessage("null"), true
			}
		case "boolean":
			if text == "true" || text == "false" {
				return json.RawMessage(text), true
			}
		case "integer":
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return json.RawMessage(strconv.FormatInt(n, 10)), true
			}
		case "number":
			if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				b, _ := json.Marshal(f)
				return b, true
			}
		case "array", "object":
			open := map[string]string{"array": "[", "object": "{"}[t]
			if strings.HasPrefix(trimmed, open) && json.Valid([]byte(trimmed)) {
				return json.RawMessage(trimmed), true
			}
		case "string":
			b, _ := json.Marshal(text)
			return b, true
		}
	}
	return nil, false
}

// describeTypes says in words what values of types look like.
func describeTypes(types []string) string {
	words := map[string]string{
		"null":    "null",
		"boolean": "true or false",
		"integer": "an integer (3)",
		"number":  "a number (2.5)",
		"array":   `a JSON array (["a", "b"])`,
		"object":  `a JSON object ({"k": "v"})`,
		"string":  "a string",
	}
	var out []string
	for _, t := range typeOrder() {
		if slices.Contains(types, t) {
			out = append(out, words[t])
		}
	}
	if len(out) == 0 {
		return "a value of a type it names (" + strings.Join(types, ", ") + ")"
	}
	return strings.Join(out, " or ")
}
