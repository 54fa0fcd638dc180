package jsonschema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// patternSchema has n patternProperties that no argument name matches, so
// the validator tries every one of them on every member, and requires a
// property the arguments never have.
func patternSchema(n int) json.RawMessage {
	pp := make([]string, n)
	for i := range pp {
		pp[i] = fmt.Sprintf(`"^x_%04d$":{"type":"string"}`, i)
	}
	return json.RawMessage(`{"type":"object","required":["must"],"patternProperties":{` + strings.Join(pp, ",") + `}}`)
}

// manyMembers is an arguments object of about size bytes of members
// "k_0000000000":0, "k_0000000001":0, ...
func manyMembers(size int) json.RawMessage {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k_%010d":0`, i)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// nestedAnyOf is a schema whose two anyOf alternatives both descend into
// "a": validating {"a":{"a":…}} of depth d applies 2^d subschemas. Nothing
// in it is a pattern or an enum, so only counting the work can stop it.
const nestedAnyOf = `{"$defs":{"n":{"anyOf":[
	{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["zz"]},
	{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}]}},
	"$ref":"#/$defs/n"}`

func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, depth) + "{}" + strings.Repeat("}", depth))
}

func prepare(t testing.TB, schema json.RawMessage) *Validator {
	t.Helper()
	p, err := Prepare(schema)
	require.NoError(t, err)
	return p.Validator
}

// validateAsync runs ValidateContext on its own goroutine and waits (up to
// a generous bound) for its answer.
func validateAsync(t *testing.T, ctx context.Context, v *Validator, args json.RawMessage) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- v.ValidateContext(ctx, args) }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("validation did not return")
		return nil
	}
}

// 2,000 patternProperties and 2.7 MB of arguments: about 320 million
// pattern matches (20 s of CPU when it was attempted). The estimate refuses
// it before validating: the answer is the cost error, not the missing
// "must" that validation would report.
func TestCostGuardRefusesBeforeValidating(t *testing.T) {
	v := prepare(t, patternSchema(2000))
	err := validateAsync(t, t.Context(), v, manyMembers(2_700_000))
	require.ErrorIs(t, err, ErrTooCostly)
	var ve *ValidationError
	require.False(t, errors.As(err, &ve), "nothing was validated: %v", err)
	require.ErrorContains(t, err, "object members × 2000 patternProperties")

	// The same schema with few arguments validates as usual.
	err = v.ValidateContext(t.Context(), json.RawMessage(`{"x_0001":"s"}`))
	require.ErrorAs(t, err, &ve)
	require.Equal(t, `invalid arguments: /must: missing property "must"`, err.Error())
}

// A validation the estimate cannot see through stops when its context
// ends, mid-way, and its goroutine is free again.
func TestValidationStopsWhenContextEnds(t *testing.T) {
	v := prepare(t, json.RawMessage(nestedAnyOf))
	// 2^60 subschemas: without a stop this never returns.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := validateAsync(t, ctx, v, nested(60))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrTooCostly)

	// The validator is usable at once.
	require.NoError(t, v.ValidateContext(t.Context(), nested(3)))
}

func TestValidationStopsAtStepLimit(t *testing.T) {
	v := prepare(t, json.RawMessage(nestedAnyOf))
	err := validateAsync(t, t.Context(), v, nested(60))
	require.ErrorIs(t, err, ErrTooCostly)
	require.ErrorContains(t, err, fmt.Sprintf("validation stopped at %d steps", MaxValidationSteps))
}

// One match of a large expression over a megabyte is charged by its size,
// before it runs (Go's regexp took 9.7 s for this one).
func TestLargePatternOverLongStringIsCharged(t *testing.T) {
	var alts []string
	for _, c := range "abcdefghi" {
		alts = append(alts, string(c)+"{1000}")
	}
	schema := `{"type":"object","properties":{"s":{"type":"string","pattern":"(` + strings.Join(alts, "|") + `)z"}}}`
	v := prepare(t, json.RawMessage(schema))
	err := validateAsync(t, t.Context(), v, json.RawMessage(`{"s":"`+strings.Repeat("a", 1<<20)+`"}`))
	require.ErrorIs(t, err, ErrTooCostly)
	// A short string is one cheap match.
	var ve *ValidationError
	require.ErrorAs(t, v.ValidateContext(t.Context(), json.RawMessage(`{"s":"aaa"}`)), &ve)
}

func TestEnumTimesValuesIsEstimated(t *testing.T) {
	enum := make([]string, 5000)
	for i := range enum {
		enum[i] = fmt.Sprintf(`"v%d"`, i)
	}
	v := prepare(t, json.RawMessage(`{"type":"object","properties":{"xs":{"type":"array","items":{"enum":[`+strings.Join(enum, ",")+`]}}}}`))
	items := make([]string, 1000)
	for i := range items {
		items[i] = `"nope"`
	}
	err := v.ValidateContext(t.Context(), json.RawMessage(`{"xs":[`+strings.Join(items, ",")+`]}`))
	require.ErrorIs(t, err, ErrTooCostly)
	require.ErrorContains(t, err, "× an enum of 5000")
	require.NoError(t, v.ValidateContext(t.Context(), json.RawMessage(`{"xs":["v1","v4999"]}`)))
}

// A property named like a counted keyword is not counted.
func TestShapeCountsKeywordsOnly(t *testing.T) {
	v := prepare(t, json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","pattern":"^a"},"enum":{"enum":[1,2]},"patternProperties":{"type":"object"}}}`))
	require.Equal(t, schemaShape{patterns: 1, maxEnum: 2}, v.shape)
}

// Validations of one Validator take turns and each is metered on its own:
// endless ones stopped by their deadlines beside cheap ones change none of
// the cheap ones' answers.
func TestConcurrentValidationsOfOneValidator(t *testing.T) {
	v := prepare(t, json.RawMessage(nestedAnyOf))
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			if i%4 != 0 {
				errs[i] = v.ValidateContext(t.Context(), nested(4))
				return
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			errs[i] = v.ValidateContext(ctx, nested(60))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%4 == 0 {
			require.ErrorIs(t, err, context.DeadlineExceeded, "call %d", i)
		} else {
			require.NoError(t, err, "call %d", i)
		}
	}
}

func TestWaitingForTheTurnEndsWithContext(t *testing.T) {
	v := prepare(t, json.RawMessage(`{"type":"object"}`))
	<-v.turn // another validation holds the turn
	defer func() { v.turn <- struct{}{} }()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := v.ValidateContext(ctx, json.RawMessage(`{}`))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "validation not started")
}

// A metaschema violation still names the draft's metaschema, not the one
// the library assembles around the metering vocabulary.
func TestMetaschemaErrorNamesTheDraft(t *testing.T) {
	_, err := Compile(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"minLength":-1}}}`))
	require.ErrorContains(t, err, "'http://json-schema.org/draft-07/schema#'")
	require.NotContains(t, err.Error(), "urn:mem")
}

// Benchmarks: validating ordinary arguments with the bounded validator and,
// in the same run, with the library alone as the validator was before
// (UnmarshalJSON, then Schema.Validate of a schema compiled without the
// metering hooks).
func BenchmarkValidate(b *testing.B) {
	schema := json.RawMessage(`{
	  "type": "object",
	  "properties": {
	    "query": {"type": "string", "minLength": 1, "pattern": "^[^\\n]*$"},
	    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
	    "mode": {"type": "string", "enum": ["fast", "thorough"]},
	    "tags": {"type": "array", "items": {"type": "string"}},
	    "options": {"type": "object", "properties": {"verbose": {"type": "boolean"}, "depth": {"type": "integer"}}, "additionalProperties": false}
	  },
	  "required": ["query"],
	  "additionalProperties": false
	}`)
	args := json.RawMessage(`{"query":"find the config loader","limit":20,"mode":"fast","tags":["go","config","cue"],"options":{"verbose":true,"depth":3}}`)
	p, err := Prepare(schema)
	require.NoError(b, err)
	resolved, v := p.Schema, p.Validator
	c := sjs.NewCompiler()
	c.UseLoader(sjs.SchemeURLLoader{})
	doc, err := sjs.UnmarshalJSON(strings.NewReader(string(resolved)))
	require.NoError(b, err)
	require.NoError(b, c.AddResource(schemaLocation, doc))
	plain, err := c.Compile(schemaLocation)
	require.NoError(b, err)

	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			inst, err := sjs.UnmarshalJSON(strings.NewReader(string(args)))
			if err != nil {
				b.Fatal(err)
			}
			if err := plain.Validate(inst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bounded", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if err := v.ValidateContext(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
