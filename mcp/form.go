package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freecode/freecode/jsonschema"
)

// ErrInvalidAnswer is wrapped by the errors of Form.Complete and
// Form.Check: the answer does not fit the requested schema. A *FormError
// says where.
var ErrInvalidAnswer = errors.New("answer does not fit the requested schema")

// The kinds of a form field (Field.Kind): the primitive types the 2025-11-25
// revision allows in an elicitation's requested schema.
const (
	KindString  = "string"
	KindNumber  = "number"
	KindInteger = "integer"
	KindBoolean = "boolean"
	// KindChoice is a string from a list (enum, or oneOf of const/title).
	KindChoice = "choice"
	// KindChoices is an array of strings from a list (items.enum, or
	// items.anyOf of const/title).
	KindChoices = "choices"
)

// The string formats the revision allows (Field.Format). FreeCode checks
// them, as a validator that asserts formats would.
const (
	FormatEmail    = "email"
	FormatURI      = "uri"
	FormatDate     = "date"
	FormatDateTime = "date-time"
)

// Form is the requested schema of a form-mode elicitation, checked to be
// the restricted JSON Schema the protocol allows there: an object of
// primitive properties (strings, numbers, booleans, single and multiple
// choices), none nested. It is safe for concurrent use.
type Form struct {
	// Schema is the requested schema as the server sent it (re-encoded:
	// the keys of its objects are sorted).
	Schema json.RawMessage
	// Fields are the properties: the required ones first, in the order of
	// "required", then the others by name. (The server's own order of
	// properties does not survive the decoding of its request.)
	Fields []Field

	whole  *jsonschema.Validator
	fields map[string]*jsonschema.Validator
}

// Field is one property of a Form.
type Field struct {
	Name        string
	Title       string // "" if none
	Description string // "" if none
	// Kind is one of the Kind constants.
	Kind     string
	Required bool
	// Default is the schema's default (a string, float64, bool or
	// []string), nil when it has none. An answer that omits the field
	// takes it (SEP-1034).
	Default any
	// Format is a string field's format (the Format constants), or "".
	Format string
	// Options are the choices of a KindChoice or KindChoices field.
	Options []Option
	// Bounds, nil when the schema sets none: MinLength and MaxLength of a
	// string, Minimum and Maximum of a number, MinItems and MaxItems of
	// choices.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int
}

// Option is one choice of a choice field: the value sent and what to show.
type Option struct {
	Value string
	Title string // "" when the schema gives none
}

// Label is what to show for o: its title, or its value.
func (o Option) Label() string {
	if o.Title != "" {
		return o.Title
	}
	return o.Value
}

// FormError lists why an answer does not fit a Form, one problem per field.
// It wraps ErrInvalidAnswer.
type FormError struct {
	Problems []FieldProblem
}

// FieldProblem is one field's problem; Field "" is the answer as a whole.
type FieldProblem struct {
	Field   string
	Message string
}

func (e *FormError) Error() string {
	parts := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		if p.Field == "" {
			parts = append(parts, p.Message)
		} else {
			parts = append(parts, fmt.Sprintf("%s: %s", p.Field, p.Message))
		}
	}
	return "the answer does not fit the requested form: " + strings.Join(parts, "; ")
}

func (e *FormError) Unwrap() error { return ErrInvalidAnswer }

// schemaError is a requested schema that is not an elicitation schema.
func schemaError(format string, args ...any) error {
	return fmt.Errorf("requestedSchema: "+format, args...)
}

// ParseForm checks that schema is an elicitation schema of the 2025-11-25
// revision and prepares it: its fields, and validators of the whole answer
// and of each field. Keywords the revision does not define are kept and
// validated as JSON Schema, but not shown. The error says what is wrong
// with the schema, for the server.
func ParseForm(schema json.RawMessage) (*Form, error) {
	// Plain decoding (numbers as float64): the values are checked and
	// shown here, and answers are compared with them.
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, schemaError("%w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, schemaError("must be a JSON object")
	}
	if root["type"] != "object" {
		return nil, schemaError(`"type" must be "object", not %s`, jsonText(root["type"]))
	}
	props := map[string]any{}
	if p, present := root["properties"]; present {
		if props, ok = p.(map[string]any); !ok {
			return nil, schemaError(`"properties" must be an object`)
		}
	}
	var required []string
	if r, present := root["required"]; present {
		list, ok := r.([]any)
		if !ok {
			return nil, schemaError(`"required" must be an array of property names`)
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return nil, schemaError(`"required" must be an array of property names, not %s`, jsonText(x))
			}
			if _, ok := props[name]; !ok {
				return nil, schemaError(`"required" names %q, which is not a property`, name)
			}
			if !slices.Contains(required, name) {
				required = append(required, name)
			}
		}
	}
	f := &Form{fields: map[string]*jsonschema.Validator{}}
	var err error
	if f.Schema, err = jsonschema.Encode(root); err != nil {
		return nil, schemaError("%w", err)
	}
	names := make([]string, 0, len(props))
	for name := range props {
		if !slices.Contains(required, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range append(required, names...) {
		field, err := parseField(name, props[name], slices.Contains(required, name))
		if err != nil {
			return nil, schemaError("property %q: %w", name, err)
		}
		f.Fields = append(f.Fields, field)
	}
	for _, fd := range f.Fields {
		name := fd.Name
		raw, err := jsonschema.Encode(props[name])
		if err != nil {
			return nil, schemaError("property %q: %w", name, err)
		}
		if f.fields[name], err = jsonschema.Compile(raw); err != nil {
			return nil, schemaError("property %q: %w", name, err)
		}
	}
	// Last: the fields' own messages say more than the metaschema's.
	if f.whole, err = jsonschema.Compile(f.Schema); err != nil {
		return nil, schemaError("%w", err)
	}
	return f, nil
}

// parseField reads one property schema.
func parseField(name string, v any, required bool) (Field, error) {
	s, ok := v.(map[string]any)
	if !ok {
		return Field{}, errors.New("must be a schema object")
	}
	fd := Field{Name: name, Required: required}
	var err error
	if fd.Title, err = optString(s, "title"); err != nil {
		return Field{}, err
	}
	if fd.Description, err = optString(s, "description"); err != nil {
		return Field{}, err
	}
	typ, _ := s["type"].(string)
	switch typ {
	case "string":
		fd.Kind = KindString
		if err := fd.parseString(s); err != nil {
			return Field{}, err
		}
	case "number", "integer":
		fd.Kind = typ
		if fd.Minimum, err = optNumber(s, "minimum"); err != nil {
			return Field{}, err
		}
		if fd.Maximum, err = optNumber(s, "maximum"); err != nil {
			return Field{}, err
		}
	case "boolean":
		fd.Kind = KindBoolean
	case "array":
		fd.Kind = KindChoices
		if err := fd.parseChoices(s); err != nil {
			return Field{}, err
		}
	default:
		return Field{}, fmt.Errorf(`"type" must be "string", "number", "integer", "boolean" or "array" (of choices), not %s`, jsonText(s["type"]))
	}
	if d, present := s["default"]; present {
		if err := fd.check(d); err != nil {
			return Field{}, fmt.Errorf("default %s: %w", jsonText(d), err)
		}
		fd.Default = d
		if fd.Kind == KindChoices {
			fd.Default = stringsOf(d)
		}
	}
	return fd, nil
}

func (fd *Field) parseString(s map[string]any) error {
	var err error
	if fd.MinLength, err = optCount(s, "minLength"); err != nil {
		return err
	}
	if fd.MaxLength, err = optCount(s, "maxLength"); err != nil {
		return err
	}
	if fd.Format, err = optString(s, "format"); err != nil {
		return err
	}
	if fd.Format != "" && !slices.Contains([]string{FormatEmail, FormatURI, FormatDate, FormatDateTime}, fd.Format) {
		return fmt.Errorf(`"format" must be "email", "uri", "date" or "date-time", not %q`, fd.Format)
	}
	if e, present := s["enum"]; present {
		values, err := stringList(e, "enum")
		if err != nil {
			return err
		}
		fd.Kind = KindChoice
		for _, v := range values {
			fd.Options = append(fd.Options, Option{Value: v})
		}
		if n, present := s["enumNames"]; present { // the legacy titled enum
			titles, err := stringList(n, "enumNames")
			if err != nil {
				return err
			}
			if len(titles) != len(values) {
				return fmt.Errorf(`"enumNames" has %d names for %d "enum" values`, len(titles), len(values))
			}
			for i := range fd.Options {
				fd.Options[i].Title = titles[i]
			}
		}
	}
	if o, present := s["oneOf"]; present {
		if fd.Kind == KindChoice {
			return errors.New(`has both "enum" and "oneOf"`)
		}
		opts, err := titledOptions(o, "oneOf")
		if err != nil {
			return err
		}
		fd.Kind, fd.Options = KindChoice, opts
	}
	return nil
}

func (fd *Field) parseChoices(s map[string]any) error {
	var err error
	if fd.MinItems, err = optCount(s, "minItems"); err != nil {
		return err
	}
	if fd.MaxItems, err = optCount(s, "maxItems"); err != nil {
		return err
	}
	items, ok := s["items"].(map[string]any)
	if !ok {
		return errors.New(`an array must have "items" with "enum" or "anyOf" choices`)
	}
	if e, present := items["enum"]; present {
		values, err := stringList(e, "items.enum")
		if err != nil {
			return err
		}
		for _, v := range values {
			fd.Options = append(fd.Options, Option{Value: v})
		}
		return nil
	}
	if a, present := items["anyOf"]; present {
		fd.Options, err = titledOptions(a, "items.anyOf")
		return err
	}
	return errors.New(`an array must have "items" with "enum" or "anyOf" choices`)
}

// titledOptions reads a list of {"const": value, "title": title}.
func titledOptions(v any, where string) ([]Option, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%q must be a non-empty array of {\"const\", \"title\"}", where)
	}
	opts := make([]Option, 0, len(list))
	for _, x := range list {
		m, ok := x.(map[string]any)
		c, okc := m["const"].(string)
		if !ok || !okc {
			return nil, fmt.Errorf("%q: each choice needs a string \"const\", not %s", where, jsonText(x))
		}
		t, err := optString(m, "title")
		if err != nil {
			return nil, fmt.Errorf("%q: %w", where, err)
		}
		opts = append(opts, Option{Value: c, Title: t})
	}
	return opts, nil
}

func stringList(v any, where string) ([]string, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%q must be a non-empty array of strings", where)
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%q must hold strings, not %s", where, jsonText(x))
		}
		out = append(out, s)
	}
	return out, nil
}

func optString(s map[string]any, key string) (string, error) {
	v, present := s[key]
	if !present {
		return "", nil
	}
	str, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%q must be a string, not %s", key, jsonText(v))
	}
	return str, nil
}

func optNumber(s map[string]any, key string) (*float64, error) {
	v, present := s[key]
	if !present {
		return nil, nil
	}
	n, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("%q must be a number, not %s", key, jsonText(v))
	}
	return &n, nil
}

func optCount(s map[string]any, key string) (*int, error) {
	n, err := optNumber(s, key)
	if err != nil || n == nil {
		return nil, err
	}
	if *n < 0 || *n != math.Trunc(*n) || *n > math.MaxInt32 {
		return nil, fmt.Errorf("%q must be a whole number ≥ 0, not %v", key, *n)
	}
	c := int(*n)
	return &c, nil
}

// jsonText shows v as JSON, for messages.
func jsonText(v any) string {
	if v == nil {
		return "none"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Field returns the field named name.
func (f *Form) Field(name string) (Field, bool) {
	i := slices.IndexFunc(f.Fields, func(fd Field) bool { return fd.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return f.Fields[i], true
}

// Complete returns the answer content is, with every field it omits that
// has a default set to that default (SEP-1034), once it fits the requested
// schema and names no other member than its fields; else an error wrapping
// ErrInvalidAnswer (a *FormError) that says why. content is not modified;
// nil means no field answered.
func (f *Form) Complete(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(f.Fields))
	for k, v := range content {
		out[k] = v
	}
	for _, fd := range f.Fields {
		if _, ok := out[fd.Name]; !ok && fd.Default != nil {
			out[fd.Name] = fd.Default
		}
	}
	var problems []FieldProblem
	for _, name := range sortedNames(out) {
		// Check refuses a name that is not a field: an answer carries
		// the fields asked for and nothing else (a mistyped name is
		// not sent on).
		if err := f.Check(name, out[name]); err != nil {
			var fe *FormError
			if !errors.As(err, &fe) {
				return nil, err
			}
			problems = append(problems, fe.Problems...)
		}
	}
	for _, fd := range f.Fields {
		if _, ok := out[fd.Name]; !ok && fd.Required {
			problems = append(problems, FieldProblem{Field: fd.Name, Message: "required, and not answered"})
		}
	}
	if len(problems) > 0 {
		return nil, &FormError{Problems: problems}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	// The whole schema may say more than the fields do (additionalProperties).
	if err := f.whole.ValidateContext(context.Background(), raw); err != nil {
		return nil, violationsOf(err, "")
	}
	return out, nil
}

// Check reports whether v is a valid value of the field name: nil, or an
// error wrapping ErrInvalidAnswer (a *FormError naming the field).
func (f *Form) Check(name string, v any) error {
	fd, ok := f.Field(name)
	if !ok {
		return &FormError{Problems: []FieldProblem{{Field: name, Message: "the form has no such field (" + f.names() + ")"}}}
	}
	if err := fd.check(v); err != nil {
		return &FormError{Problems: []FieldProblem{{Field: name, Message: err.Error()}}}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return &FormError{Problems: []FieldProblem{{Field: name, Message: "not a JSON value"}}}
	}
	if err := f.fields[name].ValidateContext(context.Background(), raw); err != nil {
		return violationsOf(err, name)
	}
	return nil
}

// violationsOf turns a validation error into a *FormError of field ("":
// the answer as a whole).
func violationsOf(err error, field string) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	fe := &FormError{}
	for _, v := range ve.Violations {
		name := field
		if name == "" && v.Path != "/" {
			name = strings.TrimPrefix(v.Path, "/")
		}
		fe.Problems = append(fe.Problems, FieldProblem{Field: name, Message: v.Message})
	}
	return fe
}

// check is the field's own check of a value: its type, choices, bounds and
// format, in words a person answering understands.
func (fd Field) check(v any) error {
	switch fd.Kind {
	case KindString, KindChoice:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want text, got %s", jsonText(v))
		}
		if fd.Kind == KindChoice {
			if !slices.ContainsFunc(fd.Options, func(o Option) bool { return o.Value == s }) {
				return fmt.Errorf("%q is not one of %s", s, fd.choiceList())
			}
			return nil
		}
		n := len([]rune(s))
		if fd.MinLength != nil && n < *fd.MinLength {
			return fmt.Errorf("at least %d characters, got %d", *fd.MinLength, n)
		}
		if fd.MaxLength != nil && n > *fd.MaxLength {
			return fmt.Errorf("at most %d characters, got %d", *fd.MaxLength, n)
		}
		return checkFormat(fd.Format, s)
	case KindNumber, KindInteger:
		n, ok := v.(float64)
		if !ok {
			if i, isInt := v.(int); isInt {
				n, ok = float64(i), true
			}
		}
		if !ok {
			return fmt.Errorf("want a number, got %s", jsonText(v))
		}
		if fd.Kind == KindInteger && n != math.Trunc(n) {
			return fmt.Errorf("want a whole number, got %v", n)
		}
		if fd.Minimum != nil && n < *fd.Minimum {
			return fmt.Errorf("at least %v, got %v", *fd.Minimum, n)
		}
		if fd.Maximum != nil && n > *fd.Maximum {
			return fmt.Errorf("at most %v, got %v", *fd.Maximum, n)
		}
	case KindBoolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("want true or false, got %s", jsonText(v))
		}
	case KindChoices:
		list, ok := v.([]any)
		if !ok {
			if ss, isStrings := v.([]string); isStrings {
				list, ok = anyList(ss), true
			}
		}
		if !ok {
			return fmt.Errorf("want a list of choices, got %s", jsonText(v))
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok || !slices.ContainsFunc(fd.Options, func(o Option) bool { return o.Value == s }) {
				return fmt.Errorf("%s is not one of %s", jsonText(x), fd.choiceList())
			}
		}
		if fd.MinItems != nil && len(list) < *fd.MinItems {
			return fmt.Errorf("choose at least %d, got %d", *fd.MinItems, len(list))
		}
		if fd.MaxItems != nil && len(list) > *fd.MaxItems {
			return fmt.Errorf("choose at most %d, got %d", *fd.MaxItems, len(list))
		}
	}
	return nil
}

func (fd Field) choiceList() string {
	vals := make([]string, 0, len(fd.Options))
	for _, o := range fd.Options {
		vals = append(vals, strconv.Quote(o.Value))
	}
	return strings.Join(vals, ", ")
}

// checkFormat checks s against a string format of the revision.
func checkFormat(format, s string) error {
	switch format {
	case FormatEmail:
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s {
			return fmt.Errorf("%q is not an email address", s)
		}
	case FormatURI:
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() {
			return fmt.Errorf("%q is not an absolute URI (scheme:...)", s)
		}
	case FormatDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
	case FormatDateTime:
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("%q is not a date and time (RFC 3339, e.g. 2025-11-25T14:30:00Z)", s)
		}
	}
	return nil
}

// Parse reads text, as a person types it, as a value of the field name:
// text as it is for a string; a number; yes/no (y, true, 1 / n, false, 0)
// for a boolean; a choice by its value, its title or its number (from 1)
// in Options; several choices separated by commas. It checks the value
// (Check) and returns an error wrapping ErrInvalidAnswer that says what to
// type instead.
func (f *Form) Parse(name, text string) (any, error) {
	fd, ok := f.Field(name)
	if !ok {
		return nil, &FormError{Problems: []FieldProblem{{Field: name, Message: "the form has no such field (" + f.names() + ")"}}}
	}
	v, err := fd.parse(text)
	if err != nil {
		return nil, &FormError{Problems: []FieldProblem{{Field: name, Message: err.Error()}}}
	}
	if err := f.Check(name, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (f *Form) names() string {
	names := make([]string, 0, len(f.Fields))
	for _, fd := range f.Fields {
		names = append(names, fd.Name)
	}
	if len(names) == 0 {
		return "it has none"
	}
	return "it has " + strings.Join(names, ", ")
}

func (fd Field) parse(text string) (any, error) {
	switch fd.Kind {
	case KindNumber, KindInteger:
		t := strings.TrimSpace(text)
		n, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			if fd.Kind == KindInteger {
				return nil, fmt.Errorf("%q is not a whole number", t)
			}
			return nil, fmt.Errorf("%q is not a number", t)
		}
		return n, nil
	case KindBoolean:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", strings.TrimSpace(text))
	case KindChoice:
		return fd.choice(strings.TrimSpace(text))
	case KindChoices:
		list := []any{}
		for part := range strings.SplitSeq(text, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			c, err := fd.choice(part)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(list, c) {
				list = append(list, c)
			}
		}
		return list, nil
	}
	return text, nil
}

// choice finds the option that text names: by value, then title, then
// number.
func (fd Field) choice(text string) (any, error) {
	for _, o := range fd.Options {
		if o.Value == text {
			return o.Value, nil
		}
	}
	for _, o := range fd.Options {
		if o.Title != "" && strings.EqualFold(o.Title, text) {
			return o.Value, nil
		}
	}
	if i, err := strconv.Atoi(text); err == nil && i >= 1 && i <= len(fd.Options) {
		return fd.Options[i-1].Value, nil
	}
	return nil, fmt.Errorf("%q is not one of %s (or their numbers, 1 to %d)", text, fd.choiceList(), len(fd.Options))
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Hint says, in a few words, what fd takes, as a person answering it must
// see it: its kind, bounds, format, choices (value, and title if it has
// one) and default, and whether it is required; e.g. `whole number from
// 1 to 10, default 3`. Parse reads what it describes. Titles, values and
// defaults are the server's own text: neutralise the hint before it
// reaches a terminal.
func (fd Field) Hint() string {
	var parts []string
	switch fd.Kind {
	case KindString:
		s := "text"
		if fd.Format != "" {
			s += " (" + fd.Format + ")"
		}
		parts = append(parts, s)
		if b := bounds(fd.MinLength, fd.MaxLength, "character"); b != "" {
			parts = append(parts, b)
		}
	case KindNumber, KindInteger:
		s := "number"
		if fd.Kind == KindInteger {
			s = "whole number"
		}
		switch lo, hi := fd.Minimum, fd.Maximum; {
		case lo != nil && hi != nil:
			s += fmt.Sprintf(" from %s to %s", num(*lo), num(*hi))
		case lo != nil:
			s += " of at least " + num(*lo)
		case hi != nil:
			s += " of at most " + num(*hi)
		}
		parts = append(parts, s)
	case KindBoolean:
		parts = append(parts, "yes or no")
	case KindChoice:
		parts = append(parts, "one of "+fd.optionList())
	case KindChoices:
		parts = append(parts, "any of "+fd.optionList()+", separated by commas")
		if b := bounds(fd.MinItems, fd.MaxItems, "choice"); b != "" {
			parts = append(parts, b)
		}
	}
	if fd.Required {
		parts = append(parts, "required")
	}
	if fd.Default != nil {
		parts = append(parts, "default "+fd.defaultText())
	}
	return strings.Join(parts, ", ")
}

// optionList is the options as Hint shows them: value (title).
func (fd Field) optionList() string {
	out := make([]string, 0, len(fd.Options))
	for _, o := range fd.Options {
		if o.Title != "" && o.Title != o.Value {
			out = append(out, o.Value+" ("+o.Title+")")
		} else {
			out = append(out, o.Value)
		}
	}
	return strings.Join(out, ", ")
}

// defaultText is the default as it would be typed, a text with spaces or
// commas quoted.
func (fd Field) defaultText() string {
	switch d := fd.Default.(type) {
	case string:
		if d == "" || strings.ContainsAny(d, " ,\"") {
			return strconv.Quote(d) // where it ends must show
		}
		return d
	case float64:
		return num(d)
	case bool:
		if d {
			return "yes"
		}
		return "no"
	case []string:
		if len(d) == 0 {
			return "none"
		}
		return strings.Join(d, ",")
	}
	return jsonText(fd.Default)
}

// bounds says "at least 1 character", "1 to 5 characters", "at most 2
// choices"; "" without bounds.
func bounds(lo, hi *int, unit string) string {
	plural := func(n int) string {
		if n == 1 {
			return unit
		}
		return unit + "s"
	}
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d %s", *lo, *hi, plural(*hi))
	case lo != nil:
		return fmt.Sprintf("at least %d %s", *lo, plural(*lo))
	case hi != nil:
		return fmt.Sprintf("at most %d %s", *hi, plural(*hi))
	}
	return ""
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
