package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveDegrades covers the references Resolve cannot follow: each
// case's output, its warnings (exact), arguments the validator must accept
// and arguments it must still reject.
func TestResolveDegrades(t *testing.T) {
	const anything = "; that value accepts anything"
	for _, tc := range []struct {
		name, schema, want string
		warnings           []string
		good, bad          []string
	}{
		{
			name:     "remote ref",
			schema:   `{"type":"object","properties":{"config":{"$ref":"https://example.com/s.json"},"name":{"type":"string"}},"required":["name"]}`,
			want:     `{"type":"object","properties":{"config":{},"name":{"type":"string"}},"required":["name"]}`,
			warnings: []string{`$ref "https://example.com/s.json" at #/properties/config is not fetched` + anything},
			good:     []string{`{"name":"a","config":{"deep":[1,{"x":null}]}}`, `{"name":"a","config":"text"}`, `{"name":"a","config":null}`},
			bad:      []string{`{"config":{}}`, `{"name":1,"config":{}}`},
		},
		{
			name:     "remote ref with a fragment",
			schema:   `{"properties":{"a":{"$ref":"http://example.com/defs.json#/definitions/a"}}}`,
			want:     `{"type":"object","properties":{"a":{}}}`,
			warnings: []string{`$ref "http://example.com/defs.json#/definitions/a" at #/properties/a is not fetched` + anything},
			good:     []string{`{"a":[true]}`},
		},
		{
			name:   "file refs",
			schema: `{"properties":{"a":{"$ref":"file:///etc/passwd"},"b":{"$ref":"other.json#/definitions/b"},"c":{"$ref":"../c.json"}}}`,
			want:   `{"type":"object","properties":{"a":{},"b":{},"c":{}}}`,
			warnings: []string{
				`$ref "file:///etc/passwd" at #/properties/a is not fetched` + anything,
				`$ref "other.json#/definitions/b" at #/properties/b is not fetched` + anything,
				`$ref "../c.json" at #/properties/c is not fetched` + anything,
			},
			good: []string{`{"a":1,"b":"x","c":{}}`},
		},
		{
			name:     "urn ref",
			schema:   `{"properties":{"a":{"$ref":"urn:example:a"}}}`,
			want:     `{"type":"object","properties":{"a":{}}}`,
			warnings: []string{`$ref "urn:example:a" at #/properties/a is not fetched` + anything},
		},
		{
			name:     "ref with siblings",
			schema:   `{"properties":{"n":{"$ref":"https://example.com/n.json","type":"integer","minimum":1,"description":"How many."}}}`,
			want:     `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"description":"How many."}}}`,
			warnings: []string{`$ref "https://example.com/n.json" at #/properties/n is not fetched` + anything},
			good:     []string{`{"n":2}`},
			bad:      []string{`{"n":0}`, `{"n":"2"}`},
		},
		{
			name:     "ref with annotations only",
			schema:   `{"properties":{"n":{"$ref":"https://example.com/n.json","description":"Settings.","title":"S"}}}`,
			want:     `{"type":"object","properties":{"n":{"description":"Settings.","title":"S"}}}`,
			warnings: []string{`$ref "https://example.com/n.json" at #/properties/n is not fetched` + anything},
			good:     []string{`{"n":[]}`},
		},
		{
			name:     "ref in allOf",
			schema:   `{"allOf":[{"$ref":"https://example.com/base.json"},{"properties":{"id":{"type":"string"}},"required":["id"]}]}`,
			want:     `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`,
			warnings: []string{`$ref "https://example.com/base.json" at #/allOf/0 is not fetched` + anything},
			good:     []string{`{"id":"a","extra":1}`},
			bad:      []string{`{}`, `{"id":1}`},
		},
		{
			name:     "ref in anyOf",
			schema:   `{"properties":{"v":{"anyOf":[{"type":"integer"},{"$ref":"https://example.com/v.json"}]}}}`,
			want:     `{"type":"object","properties":{"v":{"anyOf":[{"type":"integer"},{}]}}}`,
			warnings: []string{`$ref "https://example.com/v.json" at #/properties/v/anyOf/1 is not fetched` + anything},
			good:     []string{`{"v":1}`, `{"v":"s"}`},
		},
		{
			name:     "ref in items",
			schema:   `{"properties":{"list":{"type":"array","items":{"$ref":"https://example.com/item.json"},"maxItems":2}}}`,
			want:     `{"type":"object","properties":{"list":{"type":"array","items":{},"maxItems":2}}}`,
			warnings: []string{`$ref "https://example.com/item.json" at #/properties/list/items is not fetched` + anything},
			good:     []string{`{"list":[1,{"a":"b"}]}`},
			bad:      []string{`{"list":[1,2,3]}`, `{"list":{}}`},
		},
		{
			name: "ref inside nested properties",
			schema: `{"properties":{"outer":{"type":"object","properties":{"inner":{"type":"object",
				"properties":{"x":{"$ref":"https://example.com/x.json"},"y":{"type":"boolean"}},"required":["x"]}}}}}`,
			want: `{"type":"object","properties":{"outer":{"type":"object","properties":{"inner":{"type":"object",
				"properties":{"x":{},"y":{"type":"boolean"}},"required":["x"]}}}}}`,
			warnings: []string{`$ref "https://example.com/x.json" at #/properties/outer/properties/inner/properties/x is not fetched` + anything},
			good:     []string{`{"outer":{"inner":{"x":5}}}`},
			bad:      []string{`{"outer":{"inner":{"y":true}}}`, `{"outer":{"inner":{"x":5,"y":1}}}`},
		},
		{
			name: "ref in an inlined definition is reported once, where it is",
			schema: `{"properties":{"a":{"$ref":"#/$defs/P"},"b":{"$ref":"#/$defs/P"}},
				"$defs":{"P":{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"},"n":{"type":"integer"}}}}}`,
			want: `{"type":"object","properties":{
				"a":{"type":"object","properties":{"x":{},"n":{"type":"integer"}}},
				"b":{"type":"object","properties":{"x":{},"n":{"type":"integer"}}}}}`,
			warnings: []string{`$ref "https://example.com/x.json" at #/$defs/P/properties/x is not fetched` + anything},
			good:     []string{`{"a":{"x":1},"b":{"x":"s"}}`},
			bad:      []string{`{"a":{"n":"1"}}`},
		},
		{
			name:   "unresolved local pointer",
			schema: `{"properties":{"a":{"$ref":"#/$defs/nope"},"b":{"$ref":"#/definitions/x/properties/y"}},"definitions":{"x":{"properties":{}}}}`,
			want:   `{"type":"object","properties":{"a":{},"b":{}}}`,
			warnings: []string{
				`$ref "#/$defs/nope" at #/properties/a: no "$defs" at "#": reference target not found` + anything,
				`$ref "#/definitions/x/properties/y" at #/properties/b: no "y" at "#/definitions/x/properties": reference target not found` + anything,
			},
			good: []string{`{"a":1,"b":[]}`},
		},
		{
			name:     "unresolved anchor",
			schema:   `{"properties":{"a":{"$ref":"#nope"},"b":{"$ref":"#yes"}},"$defs":{"y":{"$anchor":"yes","type":"string"}}}`,
			want:     `{"type":"object","properties":{"a":{},"b":{"type":"string"}}}`,
			warnings: []string{`$ref "#nope" at #/properties/a: no anchor "nope": reference target not found` + anything},
			good:     []string{`{"a":{},"b":"s"}`},
			bad:      []string{`{"b":1}`},
		},
		{
			name:   "malformed local pointers",
			schema: `{"properties":{"a":{"$ref":"#/$defs/x~2"},"b":{"$ref":"#/allOf/01"},"c":{"$ref":"#/%zz"}},"allOf":[{},{}],"$defs":{"x~2":{}}}`,
			want:   `{"type":"object","properties":{"a":{},"b":{},"c":{}}}`,
			warnings: []string{
				`$ref "#/$defs/x~2" at #/properties/a: bad JSON pointer escape in "x~2": reference target not found` + anything,
				`$ref "#/allOf/01" at #/properties/b: no index "01" at "#/allOf": reference target not found` + anything,
				`$ref "#/%zz" at #/properties/c: bad percent-encoding: reference target not found` + anything,
			},
		},
		{
			name: "every property a remote ref",
			schema: `{"type":"object","properties":{"owner":{"$ref":"https://example.com/owner.json"},
				"repo":{"$ref":"https://example.com/repo.json"},"issue":{"$ref":"https://example.com/issue.json"}},"required":["owner","repo"]}`,
			want: `{"type":"object","properties":{"owner":{},"repo":{},"issue":{}},"required":["owner","repo"]}`,
			warnings: []string{
				`$ref "https://example.com/issue.json" at #/properties/issue is not fetched` + anything,
				`$ref "https://example.com/owner.json" at #/properties/owner is not fetched` + anything,
				`$ref "https://example.com/repo.json" at #/properties/repo is not fetched` + anything,
			},
			good: []string{`{"owner":"a","repo":{"name":"b"}}`, `{"owner":1,"repo":2,"issue":[3],"more":4}`},
			bad:  []string{`{"owner":"a"}`},
		},
		{
			name:     "the whole schema a remote ref",
			schema:   `{"$ref":"https://example.com/tool.json"}`,
			want:     `{"type":"object","properties":{}}`,
			warnings: []string{`$ref "https://example.com/tool.json" at # is not fetched` + anything},
			good:     []string{`{"anything":1}`},
		},
		{
			name:     "the root's own $id is local, another document is not",
			schema:   `{"$id":"https://example.com/root.json","properties":{"a":{"$ref":"https://example.com/root.json#/$defs/a"},"b":{"$ref":"https://example.com/other.json#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
			want:     `{"type":"object","properties":{"a":{"type":"string"},"b":{}}}`,
			warnings: []string{`$ref "https://example.com/other.json#/$defs/a" at #/properties/b is not fetched` + anything},
			good:     []string{`{"a":"s","b":1}`},
			bad:      []string{`{"a":1}`},
		},

		// Below a guard keyword {} could reject more, not less: the
		// keyword is left out.
		{
			name:   "oneOf of remote refs",
			schema: `{"properties":{"v":{"oneOf":[{"$ref":"https://example.com/a.json"},{"$ref":"https://example.com/b.json"}],"description":"A or B."}}}`,
			want:   `{"type":"object","properties":{"v":{"description":"A or B."}}}`,
			warnings: []string{
				`$ref "https://example.com/a.json" at #/properties/v/oneOf/0 is not fetched; the oneOf at #/properties/v is left out, so that value is not checked against it`,
				`$ref "https://example.com/b.json" at #/properties/v/oneOf/1 is not fetched; the oneOf at #/properties/v is left out, so that value is not checked against it`,
			},
			// With {} in place of each, every value would match both.
			good: []string{`{"v":1}`, `{"v":{"a":1}}`},
		},
		{
			name:     "oneOf with one remote ref",
			schema:   `{"properties":{"v":{"type":["string","integer"],"oneOf":[{"type":"string"},{"$ref":"https://example.com/b.json"}]}}}`,
			want:     `{"type":"object","properties":{"v":{"type":["string","integer"]}}}`,
			warnings: []string{`$ref "https://example.com/b.json" at #/properties/v/oneOf/1 is not fetched; the oneOf at #/properties/v is left out, so that value is not checked against it`},
			good:     []string{`{"v":"s"}`, `{"v":1}`},
			bad:      []string{`{"v":true}`},
		},
		{
			name:     "not",
			schema:   `{"properties":{"v":{"type":"string","not":{"$ref":"https://example.com/reserved.json"}}}}`,
			want:     `{"type":"object","properties":{"v":{"type":"string"}}}`,
			warnings: []string{`$ref "https://example.com/reserved.json" at #/properties/v/not is not fetched; the not at #/properties/v is left out, so that value is not checked against it`},
			good:     []string{`{"v":"x"}`},
			bad:      []string{`{"v":1}`},
		},
		{
			name:     "if",
			schema:   `{"properties":{"v":{"if":{"$ref":"#/$defs/missing"},"then":{"type":"string"},"else":{"type":"integer"},"description":"V."}},"$defs":{}}`,
			want:     `{"type":"object","properties":{"v":{"description":"V."}}}`,
			warnings: []string{`$ref "#/$defs/missing" at #/properties/v/if: no "missing" at "#/$defs": reference target not found; the if/then/else at #/properties/v is left out, so that value is not checked against it`},
			good:     []string{`{"v":true}`},
		},
		{
			name:     "then and else accept more as their subschemas do",
			schema:   `{"properties":{"v":{"if":{"type":"string"},"then":{"$ref":"https://example.com/s.json"},"else":{"type":"integer"}}}}`,
			want:     `{"type":"object","properties":{"v":{"if":{"type":"string"},"then":{},"else":{"type":"integer"}}}}`,
			warnings: []string{`$ref "https://example.com/s.json" at #/properties/v/then is not fetched` + anything},
			good:     []string{`{"v":"s"}`, `{"v":1}`},
			bad:      []string{`{"v":true}`},
		},
		{
			name:     "contains beside maxContains",
			schema:   `{"properties":{"l":{"type":"array","contains":{"$ref":"https://example.com/c.json"},"minContains":1,"maxContains":1,"maxItems":3}}}`,
			want:     `{"type":"object","properties":{"l":{"type":"array","maxItems":3}}}`,
			warnings: []string{`$ref "https://example.com/c.json" at #/properties/l/contains is not fetched; the contains at #/properties/l is left out, so that value is not checked against it`},
			good:     []string{`{"l":[1,2]}`, `{"l":[]}`},
			bad:      []string{`{"l":[1,2,3,4]}`},
		},
		{
			name:     "contains alone",
			schema:   `{"properties":{"l":{"type":"array","contains":{"$ref":"https://example.com/c.json"}}}}`,
			want:     `{"type":"object","properties":{"l":{"type":"array","contains":{}}}}`,
			warnings: []string{`$ref "https://example.com/c.json" at #/properties/l/contains is not fetched` + anything},
			good:     []string{`{"l":[1]}`},
		},
		{
			name:     "the outermost guard goes",
			schema:   `{"properties":{"v":{"type":"object","not":{"anyOf":[{"oneOf":[{"$ref":"https://example.com/a.json"},{"type":"object"}]}]}}}}`,
			want:     `{"type":"object","properties":{"v":{"type":"object"}}}`,
			warnings: []string{`$ref "https://example.com/a.json" at #/properties/v/not/anyOf/0/oneOf/0 is not fetched; the not at #/properties/v is left out, so that value is not checked against it`},
			good:     []string{`{"v":{}}`},
			bad:      []string{`{"v":1}`},
		},
		{
			name: "guard over an inlined definition",
			schema: `{"properties":{"v":{"not":{"$ref":"#/$defs/r"}},"w":{"$ref":"#/$defs/r"}},
				"$defs":{"r":{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}}}`,
			want: `{"type":"object","properties":{"v":{},"w":{"type":"object","properties":{"x":{}}}}}`,
			warnings: []string{
				`$ref "https://example.com/x.json" at #/$defs/r/properties/x is not fetched; the not at #/properties/v is left out, so that value is not checked against it`,
				`$ref "https://example.com/x.json" at #/$defs/r/properties/x is not fetched` + anything,
			},
			good: []string{`{"v":{"x":1},"w":{"x":2}}`},
			bad:  []string{`{"w":1}`},
		},
		{
			name: "guard over a recursive definition that accepts more",
			schema: `{"properties":{"t":{"oneOf":[{"$ref":"#/$defs/node"},{"type":"string"}]},"root":{"$ref":"#/$defs/node"}},
				"$defs":{"node":{"type":"object","properties":{"ext":{"$ref":"https://example.com/e.json"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			want: `{"type":"object","properties":{"t":{},"root":{"$ref":"#/$defs/node"}},
				"$defs":{"node":{"type":"object","properties":{"ext":{},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			warnings: []string{`$ref "https://example.com/e.json" at #/$defs/node/properties/ext is not fetched` + anything},
			good:     []string{`{"t":{"ext":1,"kids":[{"ext":"x"}]},"root":{"kids":[{"ext":[1]}]}}`},
			bad:      []string{`{"root":{"kids":[1]}}`},
		},
		{
			name: "a guard left out takes an unused definition with it",
			schema: `{"properties":{"t":{"oneOf":[{"$ref":"#/$defs/node"},{"$ref":"https://example.com/n.json"}]}},
				"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			want:     `{"type":"object","properties":{"t":{}}}`,
			warnings: []string{`$ref "https://example.com/n.json" at #/properties/t/oneOf/1 is not fetched; the oneOf at #/properties/t is left out, so that value is not checked against it`},
			good:     []string{`{"t":1}`},
		},
		// What unevaluatedProperties/Items accept depends on what the
		// reference's target would have evaluated in place.
		{
			name:     "extending a remote schema",
			schema:   `{"$ref":"https://example.com/base.json","properties":{"extra":{"type":"string"}},"unevaluatedProperties":false}`,
			want:     `{"type":"object","properties":{"extra":{"type":"string"}}}`,
			warnings: []string{`$ref "https://example.com/base.json" at # is not fetched; that value accepts anything; the unevaluatedProperties at # is left out as well`},
			good:     []string{`{"extra":"x","fromBase":1}`},
			bad:      []string{`{"extra":1}`},
		},
		{
			name:     "extending through allOf",
			schema:   `{"allOf":[{"$ref":"https://example.com/base.json"}],"properties":{"a":{"type":"integer"}},"unevaluatedProperties":false}`,
			want:     `{"type":"object","properties":{"a":{"type":"integer"}}}`,
			warnings: []string{`$ref "https://example.com/base.json" at #/allOf/0 is not fetched; that value accepts anything; the unevaluatedProperties at # is left out as well`},
			good:     []string{`{"a":1,"b":2}`},
			bad:      []string{`{"a":"1"}`},
		},
		{
			name:     "a property's ref does not touch its parent's unevaluatedProperties",
			schema:   `{"properties":{"p":{"$ref":"https://example.com/p.json"}},"unevaluatedProperties":false}`,
			want:     `{"type":"object","properties":{"p":{}},"unevaluatedProperties":false}`,
			warnings: []string{`$ref "https://example.com/p.json" at #/properties/p is not fetched` + anything},
			good:     []string{`{"p":{"q":1}}`},
			bad:      []string{`{"q":1}`},
		},
		{
			name:     "oneOf beside unevaluatedProperties",
			schema:   `{"oneOf":[{"$ref":"https://example.com/a.json"},{"properties":{"x":{"type":"string"}},"required":["x"]}],"unevaluatedProperties":false}`,
			want:     `{"type":"object","properties":{}}`,
			warnings: []string{`$ref "https://example.com/a.json" at #/oneOf/0 is not fetched; the oneOf at # is left out, so that value is not checked against it; the unevaluatedProperties at # is left out as well`},
			good:     []string{`{"x":"s","y":1}`},
		},
		{
			name:     "unevaluatedItems",
			schema:   `{"properties":{"l":{"type":"array","prefixItems":[{"type":"string"}],"allOf":[{"$ref":"https://example.com/more.json"}],"unevaluatedItems":false}}}`,
			want:     `{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"string"}],"allOf":[{}]}}}`,
			warnings: []string{`$ref "https://example.com/more.json" at #/properties/l/allOf/0 is not fetched; that value accepts anything; the unevaluatedItems at #/properties/l is left out as well`},
			good:     []string{`{"l":["a",1,2]}`},
			bad:      []string{`{"l":[1]}`},
		},
		{
			name:   "draft-07 definitions",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/a"}},"definitions":{"a":{"type":"array","items":[{"$ref":"https://example.com/first.json"},{"type":"integer"}]}}}`,
			want:   `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"array","items":[{},{"type":"integer"}]}}}`,
			warnings: []string{
				`$ref "https://example.com/first.json" at #/definitions/a/items/0 is not fetched` + anything,
			},
			good: []string{`{"a":["x",1]}`},
			bad:  []string{`{"a":["x","y"]}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, warnings, err := Resolve(json.RawMessage(tc.schema))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(out))
			var got []string
			for _, w := range warnings {
				got = append(got, w.String())
				require.True(t, w.Err != nil && (isExternal(w) || isUnresolved(w)), "%s: %v", w, w.Err)
			}
			require.Equal(t, tc.warnings, got)

			again, againWarnings, err := Resolve(out)
			require.NoError(t, err)
			require.Empty(t, againWarnings, "the output is self-contained")
			require.JSONEq(t, string(out), string(again), "resolving the output again changes it")

			v, err := Compile(out)
			require.NoError(t, err)
			for _, args := range tc.good {
				require.NoError(t, v.Validate(json.RawMessage(args)), args)
			}
			for _, args := range tc.bad {
				require.Error(t, v.Validate(json.RawMessage(args)), args)
			}
		})
	}
}

func isExternal(w Warning) bool   { return errors.Is(w.Err, ErrExternalRef) }
func isUnresolved(w Warning) bool { return errors.Is(w.Err, ErrUnresolvedRef) }

func TestWarningsCapped(t *testing.T) {
	var props []string
	for i := range MaxWarnings + 5 {
		props = append(props, fmt.Sprintf(`"p%02d":{"$ref":"https://example.com/p%02d.json"}`, i, i))
	}
	out, warnings, err := Resolve(json.RawMessage(`{"properties":{` + strings.Join(props, ",") + `}}`))
	require.NoError(t, err)
	require.Len(t, warnings, MaxWarnings)
	for i, w := range warnings[:MaxWarnings-1] {
		require.Equal(t, fmt.Sprintf("#/properties/p%02d", i), w.At)
		require.Zero(t, w.More)
	}
	last := warnings[MaxWarnings-1]
	require.Equal(t, 5, last.More)
	require.Equal(t, fmt.Sprintf(`$ref "https://example.com/p%02d.json" at #/properties/p%02d is not fetched; that value accepts anything (and 5 more references of this schema, not listed, treated the same way)`, MaxWarnings-1, MaxWarnings-1), last.String())
	require.Contains(t, string(out), fmt.Sprintf(`"p%02d":{}`, MaxWarnings+4), "the ones not listed are degraded too")
}

// TestPrepareKeepsWarnings: Prepare reports what Resolve does, beside a
// validator of the degraded schema.
func TestPrepareKeepsWarnings(t *testing.T) {
	p, err := Prepare(json.RawMessage(`{"properties":{"a":{"$ref":"https://example.com/a.json"},"n":{"type":"integer"}}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"a":{},"n":{"type":"integer"}}}`, string(p.Schema))
	require.Len(t, p.Warnings, 1)
	require.Equal(t, Warning{Ref: "https://example.com/a.json", At: "#/properties/a", Err: ErrExternalRef}, p.Warnings[0])
	require.NoError(t, p.Validator.Validate(json.RawMessage(`{"a":{"b":1},"n":1}`)))
	require.Error(t, p.Validator.Validate(json.RawMessage(`{"a":{"b":1},"n":"1"}`)))

	p, err = Prepare(json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`))
	require.NoError(t, err)
	require.Nil(t, p.Warnings)
}

// A warning quotes what the server wrote (the reference, property names,
// anchors) with escapes: none of its terminal controls reaches the text.
func TestWarningTextIsInert(t *testing.T) {
	evil := "\x1b]52;c;eA==\x07\x1b[2J\r\u202e\u2066\u009b31m\x7f"
	schema, err := json.Marshal(map[string]any{"properties": map[string]any{
		"p" + evil: map[string]any{"$ref": "https://example.com/" + evil},
		"q" + evil: map[string]any{"$ref": "#" + evil},
		"r" + evil: map[string]any{"$ref": "#/$defs/" + evil},
	}})
	require.NoError(t, err)
	_, warnings, err := Resolve(schema)
	require.NoError(t, err)
	require.Len(t, warnings, 3)
	for _, w := range warnings {
		require.NotRegexp(t, "[\x00-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]", w.String())
	}
}
