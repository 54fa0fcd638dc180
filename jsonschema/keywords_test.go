package jsonschema

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Subschemas visits every subschema position once, in sorted keyword and
// member order, with its pointer; values that are not subschemas (name
// lists, enum members, misshapen values) are not visited.
func TestSubschemasVisitsEveryPosition(t *testing.T) {
	s, err := Decode([]byte(`{
		"type": "object",
		"enum": [{"type": "string"}],
		"properties": {"b": {}, "a/b": true},
		"items": [{}, false],
		"not": {"type": "null"},
		"dependencies": {"x": ["y"], "z": {}},
		"$defs": {"d": {}},
		"allOf": "misshapen",
		"contentSchema": {}
	}`))
	require.NoError(t, err)
	var got []string
	require.NoError(t, Subschemas(s.(map[string]any), func(at Position, sub any) error {
		got = append(got, at.Pointer("#"))
		return nil
	}))
	require.Equal(t, []string{
		"#/$defs/d", "#/contentSchema", "#/dependencies/z", "#/items/0", "#/items/1",
		"#/not", "#/properties/a~1b", "#/properties/b",
	}, got)

	stop := errors.New("stop")
	n := 0
	err = Subschemas(s.(map[string]any), func(Position, any) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
}

// Rewrite replaces subschemas only, leaves its input alone and reports a
// value that does not have its keyword's shape.
func TestRewrite(t *testing.T) {
	raw := `{"type":"object","properties":{"a":{"type":"string"}},"items":[{"type":"string"}],"dependencies":{"x":["y"],"z":{"type":"string"}},"const":{"type":"string"}}`
	s, err := Decode([]byte(raw))
	require.NoError(t, err)
	out, err := Rewrite(s.(map[string]any), nil, func(at Position, sub any) (any, error) {
		return map[string]any{"at": at.Pointer("")}, nil
	})
	require.NoError(t, err)
	b, err := Encode(out)
	require.NoError(t, err)
	require.Equal(t, `{"const":{"type":"string"},"dependencies":{"x":["y"],"z":{"at":"/dependencies/z"}},"items":[{"at":"/items/0"}],"properties":{"a":{"at":"/properties/a"}},"type":"object"}`, string(b))
	again, err := Encode(s)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(again), "the input is not modified")

	// Dropped keywords are left out, and their subschemas never visited.
	out, err = Rewrite(s.(map[string]any), func(kw string, k Keyword) bool { return k.Object || kw == "const" },
		func(at Position, sub any) (any, error) {
			require.Contains(t, []string{"items", "dependencies"}, at.Keyword)
			return sub, nil
		})
	require.NoError(t, err)
	b, err = Encode(out)
	require.NoError(t, err)
	require.Equal(t, `{"dependencies":{"x":["y"],"z":{"type":"string"}},"items":[{"type":"string"}],"type":"object"}`, string(b))

	for kw, want := range map[string]string{
		"properties":   "properties: want an object of schemas, got an array",
		"anyOf":        "anyOf: want an array of schemas, got an object",
		"dependencies": "dependencies: want an object, got a string",
	} {
		bad := map[string]any{kw: map[string]any{}}
		switch kw {
		case "properties":
			bad[kw] = []any{}
		case "dependencies":
			bad[kw] = "x"
		}
		_, err := Rewrite(bad, nil, func(_ Position, sub any) (any, error) { return sub, nil })
		var se *ShapeError
		require.ErrorAs(t, err, &se, kw)
		require.EqualError(t, err, want)
		se.At = "/" + kw
		require.Equal(t, fmt.Sprintf("at %q: %s", "#/"+kw, want[len(kw)+2:]), se.Error())
	}
}

// The table agrees with itself: every keyword holding subschemas says what
// they apply to, and only those do.
func TestKeywordTable(t *testing.T) {
	for _, name := range []string{
		"$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment",
		"$defs", "definitions", "$ref", "$dynamicRef", "$recursiveRef",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
		"properties", "patternProperties", "additionalProperties", "propertyNames", "unevaluatedProperties",
		"items", "prefixItems", "additionalItems", "contains", "unevaluatedItems",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems",
		"maxContains", "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
		"contentEncoding", "contentMediaType", "contentSchema",
	} {
		k := KeywordOf(name)
		require.True(t, k.Core || k.Constraint, "%s is known", name)
		if k.Holds != HoldsNone && k.Applies == AppliesNone {
			require.Equal(t, "contentSchema", name, "only contentSchema holds subschemas it never applies")
		}
		if k.Holds == HoldsNone && k.Applies != AppliesNone {
			require.Contains(t, []string{"$ref", "$dynamicRef", "$recursiveRef"}, name, "only references apply without holding")
		}
		if k.Applies == AppliesThroughRef {
			require.True(t, k.Core, name)
		}
	}
	for _, annotation := range []string{"title", "description", "default", "examples", "readOnly", "x-vendor"} {
		require.Equal(t, Keyword{}, KeywordOf(annotation), "%s is an annotation", annotation)
	}
	require.True(t, KeywordOf("required").Object)
}
