package jschema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaLocation names the in-memory resource the schema is compiled as.
const schemaLocation = "mem:///input-schema.json"

// maxViolations bounds how many violations one ValidationError lists.
const maxViolations = 20

// Validator checks tool arguments against a compiled schema. It is safe for
// concurrent use.
type Validator struct {
	schema *jsonschema.Schema
}

// Compile builds a Validator for a schema, normally the output of Resolve.
// No URL loader is installed: a reference that is not inside the schema
// fails here instead of being fetched. $schema must name draft-04, -06, -07,
// 2019-09 or 2020-12 when present; a missing $schema means 2020-12. Formats
// are never asserted (see the package documentation).
func Compile(resolved json.RawMessage) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(resolved))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	if m, ok := doc.(map[string]any); ok {
		if s, present := m["$schema"]; present {
			str, _ := s.(string)
			if _, known := defsKeyword(str); !known {
				return nil, fmt.Errorf("unknown $schema %v: want draft-04, -06, -07, 2019-09 or 2020-12", s)
			}
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	// Drafts before 2019-09 assert formats; an always-true checker under each
	// format name used turns them back into annotations.
	for name := range formatNames(doc, map[string]bool{}) {
		if name != "regex" {
			c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(any) error { return nil }})
		}
	}
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	sch, err := c.Compile(schemaLocation)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Validator{schema: sch}, nil
}

// formatNames collects every string value of a "format" member anywhere in v.
func formatNames(v any, into map[string]bool) map[string]bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "format" {
				into[s] = true
			}
			formatNames(e, into)
		}
	case []any:
		for _, e := range x {
			formatNames(e, into)
		}
	}
	return into
}

// Validate checks args, the JSON object of a tool call's arguments. Empty
// input and null count as {}. It returns nil or a *ValidationError.
func (v *Validator) Validate(args json.RawMessage) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return &ValidationError{Violations: []Violation{{Path: "/", Message: "arguments are not valid JSON: " + err.Error()}}}
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate arguments: %w", err)
	}
	out := &ValidationError{}
	collect(ve, &out.Violations)
	sortViolations(out.Violations)
	if len(out.Violations) == 0 {
		out.Violations = []Violation{{Path: pathOf(ve.InstanceLocation), Message: leafMessage(ve)}}
	}
	return out
}

// Violation is one reason arguments were rejected.
type Violation struct {
	// Path is the JSON pointer of the offending value, "/" for the whole
	// arguments object. For a missing property it names the property.
	Path    string
	Message string
}

// ValidationError lists every violation found in one argument document.
type ValidationError struct {
	Violations []Violation
}

// Error reads, for example:
//
//	invalid arguments: /path: missing property "path"; /count: got string, want integer
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments: ")
	writeViolations(&b, e.Violations)
	return b.String()
}

func writeViolations(b *strings.Builder, vs []Violation) {
	for i, v := range vs {
		if i == maxViolations {
			fmt.Fprintf(b, "; and %d more", len(vs)-i)
			return
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.Path + ": " + v.Message)
	}
}

// collect flattens the library's error tree into violations. Wrappers
// (schema, reference, allOf, property groups) are looked through; a failed
// anyOf/oneOf becomes one violation that says what each alternative lacked.
func collect(e *jsonschema.ValidationError, out *[]Violation) {
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			*out = append(*out, Violation{
				Path:    pathOf(append(append([]string(nil), e.InstanceLocation...), name)),
				Message: fmt.Sprintf("missing property %q", name),
			})
		}
		return
	case *kind.OneOf:
		if len(k.Subschemas) >= 2 {
			*out = append(*out, Violation{
				Path:    pathOf(e.InstanceLocation),
				Message: fmt.Sprintf("matches alternatives %d and %d of oneOf, but must match exactly one", k.Subschemas[0]+1, k.Subschemas[1]+1),
			})
			return
		}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			word := "anyOf"
			if _, ok := k.(*kind.OneOf); ok {
				word = "oneOf"
			}
			var b strings.Builder
			fmt.Fprintf(&b, "matches none of the %d alternatives (%s):", len(e.Causes), word)
			for i, c := range e.Causes {
				var sub []Violation
				collect(c, &sub)
				sortViolations(sub)
				fmt.Fprintf(&b, " [%d] ", i+1)
				writeViolations(&b, sub)
			}
			*out = append(*out, Violation{Path: pathOf(e.InstanceLocation), Message: b.String()})
			return
		}
	}
	if len(e.Causes) == 0 {
		*out = append(*out, Violation{Path: pathOf(e.InstanceLocation), Message: leafMessage(e)})
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}

// leafMessage is the library's English message for e alone, without its
// location.
func leafMessage(e *jsonschema.ValidationError) string {
	leaf := *e
	leaf.Causes = nil
	if u := leaf.DetailedOutput(); u.Error != nil {
		return u.Error.String()
	}
	return "invalid"
}

// sortViolations orders violations by path and message; the library's order
// depends on map iteration.
func sortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message))
	})
}

func pathOf(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + escapeToken(t))
	}
	return b.String()
}
