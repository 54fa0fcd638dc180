package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testForm has a field of every kind the revision allows.
const testForm = `{"type":"object","required":["name"],"properties":{
	"name":{"type":"string","minLength":2,"maxLength":5},
	"mail":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"day":{"type":"string","format":"date"},
	"at":{"type":"string","format":"date-time"},
	"age":{"type":"integer","minimum":0,"maximum":150,"default":30},
	"score":{"type":"number","default":9.5},
	"ok":{"type":"boolean","default":true},
	"color":{"type":"string","enum":["red","green"],"default":"red"},
	"hero":{"type":"string","oneOf":[{"const":"h1","title":"Superman"},{"const":"h2","title":"Batman"}]},
	"pet":{"type":"string","enum":["p1","p2"],"enumNames":["Cats","Dogs"]},
	"tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]},"default":["a"]},
	"fish":{"type":"array","items":{"anyOf":[{"const":"f1","title":"Tuna"},{"const":"f2","title":"Trout"}]}}}}`

func mustForm(t *testing.T, schema string) *Form {
	t.Helper()
	f, err := ParseForm(json.RawMessage(schema))
	require.NoError(t, err)
	return f
}

// Typed text becomes a value of the field's kind, or an error that says
// what to type.
func TestFormParse(t *testing.T) {
	f := mustForm(t, testForm)
	for _, c := range []struct {
		field, text string
		want        any
		err         string
	}{
		{"name", "Ada", "Ada", ""},
		{"name", "A", nil, "name: at least 2 characters, got 1"},
		{"name", "Adaline", nil, "name: at most 5 characters, got 7"},
		{"mail", "ada@example.com", "ada@example.com", ""},
		{"mail", "Ada <ada@example.com>", nil, `mail: "Ada <ada@example.com>" is not an email address`},
		{"site", "https://example.com", "https://example.com", ""},
		{"site", "example.com", nil, "is not an absolute URI"},
		{"day", "2025-11-25", "2025-11-25", ""},
		{"day", "25.11.2025", nil, "is not a date (YYYY-MM-DD)"},
		{"at", "2025-11-25T14:30:00Z", "2025-11-25T14:30:00Z", ""},
		{"at", "2025-11-25", nil, "is not a date and time"},
		{"age", " 42 ", 42.0, ""},
		{"age", "4.5", nil, "age: want a whole number, got 4.5"},
		{"age", "200", nil, "age: at most 150, got 200"},
		{"age", "forty", nil, `age: "forty" is not a whole number`},
		{"score", "-1.25", -1.25, ""},
		{"ok", "y", true, ""},
		{"ok", "No", false, ""},
		{"ok", "maybe", nil, `ok: "maybe" is not yes or no`},
		{"color", "green", "green", ""},
		{"color", "2", "green", ""},
		{"color", "blue", nil, `color: "blue" is not one of "red", "green" (or their numbers, 1 to 2)`},
		{"hero", "Batman", "h2", ""},
		{"hero", "h1", "h1", ""},
		{"pet", "dogs", "p2", ""},
		{"tags", "a, c", []any{"a", "c"}, ""},
		{"tags", "1,2,3", nil, "tags: choose at most 2, got 3"},
		{"tags", "", nil, "tags: choose at least 1, got 0"},
		{"fish", "Tuna,f2", []any{"f1", "f2"}, ""},
		{"nope", "x", nil, "nope: the form has no such field (it has name, age, at, color, day, fish, hero, mail, ok, pet, score, site, tags)"},
	} {
		got, err := f.Parse(c.field, c.text)
		if c.err != "" {
			require.Error(t, err, "%s=%q", c.field, c.text)
			assert.ErrorIs(t, err, ErrInvalidAnswer)
			assert.Contains(t, err.Error(), c.err, "%s=%q", c.field, c.text)
			continue
		}
		require.NoError(t, err, "%s=%q", c.field, c.text)
		assert.Equal(t, c.want, got, "%s=%q", c.field, c.text)
	}
}

// Complete fills the defaults of omitted fields (SEP-1034), keeps what was
// answered, and refuses what does not fit, naming every problem.
func TestFormComplete(t *testing.T) {
	f := mustForm(t, testForm)
	got, err := f.Complete(map[string]any{"name": "Ada", "age": 7.0})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": 7.0, "score": 9.5, "ok": true, "color": "red", "tags": []string{"a"}}, got)

	_, err = f.Complete(map[string]any{"age": "x", "nmae": "Ada", "tags": []any{"z"}})
	var fe *FormError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, []FieldProblem{
		{"age", `want a number, got "x"`},
		{"nmae", "the form has no such field (it has name, age, at, color, day, fish, hero, mail, ok, pet, score, site, tags)"},
		{"tags", `"z" is not one of "a", "b", "c"`},
		{"name", "required, and not answered"},
	}, fe.Problems)

	// The whole schema is validated too: here additionalProperties.
	strict := mustForm(t, `{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`)
	_, err = strict.Complete(map[string]any{"a": "y"})
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "a", fe.Problems[0].Field)
	assert.Contains(t, fe.Problems[0].Message, "does not match pattern")
}

// What is not an elicitation schema is refused with the reason.
func TestParseFormRefuses(t *testing.T) {
	for schema, want := range map[string]string{
		`[]`:                                "requestedSchema: must be a JSON object",
		`{"properties":{}}`:                 `"type" must be "object", not none`,
		`{"type":"object","properties":[]}`: `"properties" must be an object`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`:                     `"required" must be an array`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`:                                    `property "a": "type" must be "string", "number", "integer", "boolean" or "array" (of choices), not "object"`,
		`{"type":"object","properties":{"a":{"type":"string","format":"ipv4"}}}`:                    `"format" must be "email", "uri", "date" or "date-time", not "ipv4"`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[1]}}}`:                         `"enum" must hold strings, not 1`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["x"],"enumNames":[]}}}`:        `"enumNames" must be a non-empty array`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"enumNames":["X"]}}}`: `"enumNames" has 1 names for 2 "enum" values`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`:           `an array must have "items" with "enum" or "anyOf" choices`,
		`{"type":"object","properties":{"a":{"type":"string","oneOf":[{"title":"x"}]}}}`:            `each choice needs a string "const"`,
		`{"type":"object","properties":{"a":{"type":"string","default":"toolong","maxLength":3}}}`:  `default "toolong": at most 3 characters`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`:                     `"minLength" must be a whole number ≥ 0, not -1`,
	} {
		_, err := ParseForm(json.RawMessage(schema))
		require.Error(t, err, schema)
		assert.Contains(t, err.Error(), want, schema)
	}
	// Keywords the revision does not define are allowed, and validated.
	f := mustForm(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string","pattern":"^x"}},"additionalProperties":false}`)
	assert.Error(t, f.Check("a", "y"))
	assert.NoError(t, f.Check("a", "xy"))
}

// Each field says what it takes, as Parse reads it.
func TestFieldHint(t *testing.T) {
	f := mustForm(t, testForm)
	for name, want := range map[string]string{
		"name":  "text, 2 to 5 characters, required",
		"mail":  "text (email)",
		"age":   "whole number from 0 to 150, default 30",
		"score": "number, default 9.5",
		"ok":    "yes or no, default yes",
		"color": "one of red, green, default red",
		"hero":  "one of h1 (Superman), h2 (Batman)",
		"pet":   "one of p1 (Cats), p2 (Dogs)",
		"tags":  "any of a, b, c, separated by commas, 1 to 2 choices, default a",
		"fish":  "any of f1 (Tuna), f2 (Trout), separated by commas",
	} {
		fd, ok := f.Field(name)
		require.True(t, ok, name)
		assert.Equal(t, want, fd.Hint(), name)
	}
	one := mustForm(t, `{"type":"object","properties":{"n":{"type":"number","minimum":0.5},"s":{"type":"string","minLength":1}}}`)
	n, _ := one.Field("n")
	assert.Equal(t, "number of at least 0.5", n.Hint())
	s, _ := one.Field("s")
	assert.Equal(t, "text, at least 1 character", s.Hint())
	line := mustForm(t, `{"type":"object","properties":{"l":{"type":"string","default":"It was a dark, stormy night."}}}`)
	l, _ := line.Field("l")
	assert.Equal(t, `text, default "It was a dark, stormy night."`, l.Hint())
}
