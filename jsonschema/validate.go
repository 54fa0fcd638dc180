package jsonschema

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaLocation names the in-memory resource the schema is compiled as.
const schemaLocation = "mem:///input-schema.json"

// maxViolations bounds how many violations one ValidationError lists.
const maxViolations = 20

// maxMessageBytes is about the longest message of one violation: an
// anyOf/oneOf that failed lists its alternatives' violations until then.
const maxMessageBytes = 2000

// MaxValidationSteps bounds the work of one validation. A step is one
// subschema applied to one value, or one regular-expression match (a match
// over a long string or with a large expression counts more, see
// meteredRegexp). Ordinary arguments take tens to thousands of steps, a
// megabyte of small values a few hundred thousand; at the limit a validation
// takes about half a second of CPU.
const MaxValidationSteps = 1_000_000

// ErrTooCostly is returned (wrapped) by ValidateContext when validating the
// arguments would take more than MaxValidationSteps: estimated up front, or
// counted while validating.
var ErrTooCostly = errors.New("validation too costly")

// Validator checks tool arguments against a compiled schema. It is safe for
// concurrent use; validations of one Validator run one at a time (see
// ValidateContext).
type Validator struct {
	schema *sjs.Schema
	shape  schemaShape
	// turn holds one token: the validation that took it owns meter.cur.
	turn  chan struct{}
	meter *meterSlot
}

// schemaShape is what the up-front cost estimate needs to know about a
// schema, counted once at Compile.
type schemaShape struct {
	patternProperties int // entries of every patternProperties
	patterns          int // "pattern" keywords
	maxEnum           int // entries of the largest enum
}

// meterSlot is shared by a Validator and the hooks compiled into its schema.
// cur is guarded by Validator.turn: it is set and cleared by the goroutine
// holding the token, and the hooks run on that goroutine.
type meterSlot struct {
	cur *meter
	run meter // what cur points to during a validation
}

// meter counts the steps of one validation and stops it, by panicking with
// stopValidation, when the budget is spent or ctx ends. Panicking is how a
// hook aborts the library's validation: nothing of the compiled schema is
// modified while validating, so unwinding leaves it intact.
type meter struct {
	ctx     context.Context
	left    int64 // steps still allowed
	sinceCk int64 // steps since ctx was last looked at
}

type stopValidation struct{ err error }

// ctxEvery is how many steps pass between two looks at ctx: a few
// microseconds of work, so a cancelled validation stops at once.
const ctxEvery = 1024

func (s *meterSlot) charge(w int64) {
	m := s.cur
	if m == nil {
		return
	}
	m.left -= w
	if m.left < 0 {
		panic(stopValidation{fmt.Errorf("validation stopped at %d steps, the limit (a step is one subschema applied to one value, or one pattern match, more over long strings); send smaller or simpler arguments: %w", MaxValidationSteps, ErrTooCostly)})
	}
	m.sinceCk += w
	if m.sinceCk >= ctxEvery {
		m.sinceCk = 0
		if m.ctx.Err() != nil {
			panic(stopValidation{fmt.Errorf("validation stopped: %w", context.Cause(m.ctx))})
		}
	}
}

// meterExt is compiled into every schema object that applies subschemas
// (see applies): the library calls it once each time that schema has
// been applied to a value. Schemas without applicators are not counted:
// their work is bounded by the count of the schema that applied them, and
// leaving them out keeps ordinary validations as fast as without a meter.
type meterExt struct{ slot *meterSlot }

// applies reports whether keyword k applies subschemas to a value or its
// parts (the references included).
func applies(k string) bool {
	a := KeywordOf(k).Applies
	return a == AppliesToParts || a == AppliesInPlace
}

func (e meterExt) Validate(*sjs.ValidatorContext, any) { e.slot.charge(1) }

// meteredRegexp charges the meter for every match: one step, plus one per
// 4096 of input bytes × program instructions, so that one match over a
// megabyte with a large expression cannot hide inside a single step. The
// charge is made before matching.
type meteredRegexp struct {
	re    *regexp.Regexp
	insts int64
	slot  *meterSlot
}

func (r meteredRegexp) MatchString(s string) bool {
	r.slot.charge(1 + int64(len(s))*r.insts>>12)
	return r.re.MatchString(s)
}

func (r meteredRegexp) String() string { return r.re.String() }

func meteredEngine(slot *meterSlot) sjs.RegexpEngine {
	return func(expr string) (sjs.Regexp, error) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, err
		}
		insts := int64(1)
		if parsed, err := syntax.Parse(expr, syntax.Perl); err == nil {
			if prog, err := syntax.Compile(parsed.Simplify()); err == nil {
				insts = int64(len(prog.Inst))
			}
		}
		return meteredRegexp{re: re, insts: insts, slot: slot}, nil
	}
}

// meterVocabURL names the vocabulary that carries meterExt; it has no
// keywords of its own and is never named by a schema.
const meterVocabURL = "urn:freecode:jsonschema:meter"

// Compile builds a Validator for a schema, normally the output of Resolve.
// No URL loader is installed: a reference that is not inside the schema
// fails here instead of being fetched. $schema must name draft-04, -06, -07,
// 2019-09 or 2020-12 when present; a missing $schema means 2020-12. Formats
// are never asserted (see the package documentation).
func Compile(resolved json.RawMessage) (*Validator, error) {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(resolved))
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
	slot := &meterSlot{}
	c := sjs.NewCompiler()
	c.UseLoader(sjs.SchemeURLLoader{})
	c.DefaultDraft(sjs.Draft2020)
	c.UseRegexpEngine(meteredEngine(slot))
	c.RegisterVocabulary(&sjs.Vocabulary{
		URL: meterVocabURL,
		Compile: func(_ *sjs.CompilerContext, obj map[string]any) (sjs.SchemaExt, error) {
			for k := range obj {
				if applies(k) {
					return meterExt{slot}, nil
				}
			}
			return nil, nil
		},
	})
	// Custom vocabularies apply only when asserted; this changes nothing
	// else (the drafts' own vocabularies stay as the schema declares).
	c.AssertVocabs()
	// Drafts before 2019-09 assert formats; an always-true checker under each
	// format name used turns them back into annotations.
	for name := range formatNames(doc, map[string]bool{}) {
		if name != "regex" {
			c.RegisterFormat(&sjs.Format{Name: name, Validate: func(any) error { return nil }})
		}
	}
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	sch, err := c.Compile(schemaLocation)
	if err != nil {
		nameMetaschema(err, doc)
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	v := &Validator{schema: sch, shape: shapeOf(doc, schemaShape{}), turn: make(chan struct{}, 1), meter: slot}
	v.turn <- struct{}{}
	return v, nil
}

// shapeOf counts, in a schema and its subschemas, the keywords whose cost
// grows with the product of schema and instance sizes. It walks subschemas
// only, so a property that happens to be named "pattern" or "enum", or an
// enum value that looks like a schema, is not counted.
func shapeOf(v any, sh schemaShape) schemaShape {
	obj, ok := v.(map[string]any)
	if !ok {
		return sh
	}
	if _, ok := obj["pattern"].(string); ok {
		sh.patterns++
	}
	if a, ok := obj["enum"].([]any); ok {
		sh.maxEnum = max(sh.maxEnum, len(a))
	}
	if m, ok := obj["patternProperties"].(map[string]any); ok {
		sh.patternProperties += len(m)
	}
	// Definitions count: references apply them. contentSchema never
	// applies.
	_ = Subschemas(obj, func(at Position, sub any) error {
		if KeywordOf(at.Keyword).Applies != AppliesNone {
			sh = shapeOf(sub, sh)
		}
		return nil
	})
	return sh
}

// instanceShape counts the values of an argument document.
type instanceShape struct {
	values, members, strings int64
}

func shapeOfInstance(v any, sh *instanceShape) {
	sh.values++
	switch x := v.(type) {
	case map[string]any:
		sh.members += int64(len(x))
		for _, e := range x {
			shapeOfInstance(e, sh)
		}
	case []any:
		for _, e := range x {
			shapeOfInstance(e, sh)
		}
	case string:
		sh.strings++
	}
}

// estimate is an upper bound of the steps spent in the keywords shapeOf
// counts: every object member may be matched against every
// patternProperties expression, every string against every pattern, every
// value compared with every entry of the largest enum. (Enum comparisons are
// not metered while validating, so this bound is their only guard.) When it
// is over MaxValidationSteps, what says where the cost comes from.
func (v *Validator) estimate(inst any) (n int64, what string, over bool) {
	if v.shape == (schemaShape{}) {
		return 0, "", false
	}
	var is instanceShape
	shapeOfInstance(inst, &is)
	pp, p, e := is.members*int64(v.shape.patternProperties), is.strings*int64(v.shape.patterns), is.values*int64(v.shape.maxEnum)
	n = pp + p + e
	if n <= MaxValidationSteps {
		return n, "", false
	}
	var parts []string
	if pp > 0 {
		parts = append(parts, fmt.Sprintf("%d object members × %d patternProperties", is.members, v.shape.patternProperties))
	}
	if p > 0 {
		parts = append(parts, fmt.Sprintf("%d strings × %d pattern keywords", is.strings, v.shape.patterns))
	}
	if e > 0 {
		parts = append(parts, fmt.Sprintf("%d values × an enum of %d", is.values, v.shape.maxEnum))
	}
	return n, strings.Join(parts, " + "), true
}

// nameMetaschema gives a metaschema violation the name of the draft's
// metaschema. With a vocabulary of our own registered, the library checks
// schemas against a metaschema it assembles and names "urn:mem:metaschema",
// which would mean nothing to the reader.
func nameMetaschema(err error, doc any) {
	var sve *sjs.SchemaValidationError
	var ve *sjs.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return
	}
	k, ok := ve.ErrorKind.(*kind.Schema)
	if !ok || k.Location != "urn:mem:metaschema" {
		return
	}
	name := sjs.Draft2020.String()
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok && s != "" {
			name = s
		}
	}
	ve.ErrorKind = &kind.Schema{Location: strings.TrimSuffix(name, "#") + "#"}
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

// Validate is ValidateContext without a context: it is bounded only by
// MaxValidationSteps.
func (v *Validator) Validate(args json.RawMessage) error {
	return v.ValidateContext(context.Background(), args)
}

// ValidateContext checks args, the JSON object of a tool call's arguments.
// Empty input and null count as {}. It returns nil, a *ValidationError, or
// an error wrapping ErrTooCostly (the estimate or the step count went past
// MaxValidationSteps) or context.Cause(ctx) (ctx ended first).
//
// The work is bounded before and while validating: an up-front estimate
// refuses arguments whose product with the schema's pattern and enum
// keywords is too large, without validating anything; then every subschema
// applied and every regular-expression match is counted, and the validation
// stops at MaxValidationSteps or within a few microseconds of work after ctx
// ends. Validations of one Validator take turns (the step count is kept per
// Validator); waiting for the turn also ends with ctx.
func (v *Validator) ValidateContext(ctx context.Context, args json.RawMessage) (err error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return &ValidationError{Violations: []Violation{{Path: "/", Message: "arguments are not valid JSON: " + err.Error()}}}
	}
	if n, what, over := v.estimate(inst); over {
		return fmt.Errorf("validating these arguments would take up to %d steps (%s), more than the limit of %d; send fewer or smaller values: %w",
			n, what, MaxValidationSteps, ErrTooCostly)
	}
	select {
	case <-v.turn:
	case <-ctx.Done():
		return fmt.Errorf("validation not started: %w", context.Cause(ctx))
	}
	v.meter.run = meter{ctx: ctx, left: MaxValidationSteps}
	v.meter.cur = &v.meter.run
	defer func() {
		v.meter.cur, v.meter.run = nil, meter{}
		v.turn <- struct{}{}
		if r := recover(); r != nil {
			stop, ok := r.(stopValidation)
			if !ok {
				panic(r)
			}
			err = stop.err
		}
	}()
	return v.check(inst)
}

// check validates inst; the caller holds the turn.
func (v *Validator) check(inst any) error {
	err := v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *sjs.ValidationError
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
func collect(e *sjs.ValidationError, out *[]Violation) {
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
				if b.Len() > maxMessageBytes {
					// Nested alternatives multiply: say no more.
					fmt.Fprintf(&b, " [%d-%d] …", i+1, len(e.Causes))
					break
				}
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
func leafMessage(e *sjs.ValidationError) string {
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
