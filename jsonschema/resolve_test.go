package jsonschema

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAbsentSchemas(t *testing.T) {
	for _, raw := range []string{"", "  ", "null", "{}", "true", ` { } `} {
		out, _, err := Resolve(json.RawMessage(raw))
		require.NoError(t, err, "%q", raw)
		require.JSONEq(t, `{"type":"object","properties":{}}`, string(out), "%q", raw)
	}
}

func TestResolveRejects(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
		is                 error
	}{
		{"not an object", `[1]`, "must be a JSON object, got an array", nil},
		{"false", `false`, "must be a JSON object", nil},
		{"trailing data", `{} {}`, "unexpected data", nil},
		{"non-string ref", `{"properties":{"a":{"$ref":1}}}`, `at "#/properties/a": $ref must be a string`, nil},
		{"dynamic ref", `{"$dynamicRef":"#meta"}`, "$dynamicRef", ErrUnsupported},
		{"ref into non-schema", `{"properties":{"a":{"$ref":"#/required"}},"required":["a"]}`, "must be an object or a boolean, got an array", nil},
		{"bad properties", `{"properties":[1]}`, "want an object of schemas", nil},
		{"self ref only", `{"$ref":"#"}`, "", ErrRefCycle},
		// What cannot be followed degrades; what is wrong in the schema
		// itself stays an error beside it.
		{"cycle beside a remote ref", `{"properties":{"a":{"$ref":"https://example.com/a.json"}},"allOf":[{"$ref":"#"}]}`, "", ErrRefCycle},
		{"dynamic ref beside a remote ref", `{"properties":{"a":{"$ref":"https://example.com/a.json"},"b":{"$dynamicRef":"#meta"}}}`, "$dynamicRef", ErrUnsupported},
		{"remote refs fanned out", fanOut(`{"$ref":"https://example.com/a.json","description":"` + strings.Repeat("x", 100) + `"}`), "would exceed", ErrTooComplex},
		{"type array without object", `{"type":["string","null"]}`, `must include "object"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Resolve(json.RawMessage(tc.schema))
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// TestRefsNeverFetched checks both layers: Resolve never follows external
// refs (it reports them), and Compile, given such a schema directly, has no
// loader to fetch them with.
func TestRefsNeverFetched(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("schema fetched over HTTP: %s", r.URL)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()

	for _, ref := range []string{
		"file:///etc/passwd",
		"file:///etc/passwd#/x",
		"/etc/passwd",
		"../../../../etc/passwd",
		srv.URL + "/x.json",
		srv.URL + "/x.json#/definitions/a",
		"http://127.0.0.1:1/x.json",
	} {
		schema := fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":%q}}}`, ref)
		out, warnings, err := Resolve(json.RawMessage(schema))
		require.NoError(t, err, ref)
		require.JSONEq(t, `{"type":"object","properties":{"a":{}}}`, string(out), ref)
		require.Len(t, warnings, 1, ref)
		require.ErrorIs(t, warnings[0].Err, ErrExternalRef, ref)
		require.Equal(t, ref, warnings[0].Ref)

		_, err = Compile(json.RawMessage(schema))
		require.Error(t, err, "Compile must not load %s", ref)
	}
}

// fanOut is the "billion laughs" of JSON Schema with leaf as its last
// definition: each definition refers to the previous one twice, so inlining
// doubles at every level.
func fanOut(leaf string) string {
	defs := []string{`"d0":` + leaf}
	for i := 1; i <= 40; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/d%d"},"r":{"$ref":"#/$defs/d%d"}}}`, i, i-1, i-1))
	}
	return `{"properties":{"x":{"$ref":"#/$defs/d40"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

func TestFanOutBounded(t *testing.T) {
	schema := fanOut(`{"type":"string","description":"` + strings.Repeat("x", 100) + `"}`)
	_, _, err := Resolve(json.RawMessage(schema))
	require.ErrorIs(t, err, ErrTooComplex)
	require.ErrorContains(t, err, "would exceed")
}

func TestDepthBounded(t *testing.T) {
	deep := strings.Repeat(`{"properties":{"a":`, MaxDepth+5) + `{}` + strings.Repeat(`}}`, MaxDepth+5)
	_, _, err := Resolve(json.RawMessage(deep))
	require.ErrorIs(t, err, ErrTooComplex)

	big := `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	_, _, err = Resolve(json.RawMessage(big))
	require.ErrorIs(t, err, ErrTooComplex)
}

func TestRefTargetsBounded(t *testing.T) {
	var props, defs []string
	for i := range MaxRefTargets + 1 {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, i))
	}
	schema := `{"properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
	_, _, err := Resolve(json.RawMessage(schema))
	require.ErrorIs(t, err, ErrTooComplex)
}

func TestResolveDeterministic(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"z":{"$ref":"#/$defs/n"},"a":{"$ref":"#/$defs/m"}},
		"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/m"}},"m":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}}}`)
	first, _, err := Resolve(schema)
	require.NoError(t, err)
	for range 20 {
		again, _, err := Resolve(schema)
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
	require.Contains(t, string(first), `"$defs":{"m":`)
	_, err = Compile(first)
	require.NoError(t, err)
}

func TestUnknownSchemaDialect(t *testing.T) {
	out, _, err := Resolve(json.RawMessage(`{"$schema":"https://example.com/my-dialect","properties":{"a":{"type":"string"}}}`))
	require.NoError(t, err)
	require.NotContains(t, string(out), "$schema")

	_, err = Compile(json.RawMessage(`{"$schema":"https://example.com/my-dialect"}`))
	require.ErrorContains(t, err, "unknown $schema")
}

func TestFormatsAreAnnotations(t *testing.T) {
	for _, draft := range []string{"", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#", "https://json-schema.org/draft/2020-12/schema"} {
		schema := `{"type":"object","properties":{"e":{"type":"string","format":"email"},"d":{"format":"date-time"}}}`
		if draft != "" {
			schema = `{"$schema":"` + draft + `",` + schema[1:]
		}
		out, _, err := Resolve(json.RawMessage(schema))
		require.NoError(t, err)
		v, err := Compile(out)
		require.NoError(t, err)
		require.NoError(t, v.Validate(json.RawMessage(`{"e":"not an email","d":"yesterday"}`)), draft)
		require.Error(t, v.Validate(json.RawMessage(`{"e":1}`)), draft)
	}
}

func TestValidateArguments(t *testing.T) {
	out, _, err := Resolve(json.RawMessage(`{"properties":{"path":{"type":"string"},"count":{"type":"integer"}},"required":["path"]}`))
	require.NoError(t, err)
	v, err := Compile(out)
	require.NoError(t, err)

	for _, args := range []string{"", "null", " {} "} {
		err := v.Validate(json.RawMessage(args))
		require.EqualError(t, err, `invalid arguments: /path: missing property "path"`, "%q", args)
	}
	err = v.Validate(json.RawMessage(`{"count":"3"}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []Violation{
		{Path: "/count", Message: "got string, want integer"},
		{Path: "/path", Message: `missing property "path"`},
	}, ve.Violations)
	require.EqualError(t, err, `invalid arguments: /count: got string, want integer; /path: missing property "path"`)

	err = v.Validate(json.RawMessage(`{"path":`))
	require.ErrorAs(t, err, &ve)
	require.ErrorContains(t, err, "arguments are not valid JSON")

	require.NoError(t, v.Validate(json.RawMessage(`{"path":"a","count":3}`)))
}

func TestValidateCapsViolations(t *testing.T) {
	var props, args []string
	for i := range 30 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		args = append(args, fmt.Sprintf(`"p%02d":"x"`, i))
	}
	out, _, err := Resolve(json.RawMessage(`{"properties":{` + strings.Join(props, ",") + `}}`))
	require.NoError(t, err)
	v, err := Compile(out)
	require.NoError(t, err)
	err = v.Validate(json.RawMessage(`{` + strings.Join(args, ",") + `}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Violations, 30)
	require.True(t, strings.HasSuffix(err.Error(), "; and 10 more"), err.Error())
}

func TestValidatorConcurrentUse(t *testing.T) {
	out, _, err := Resolve(json.RawMessage(`{"properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`))
	require.NoError(t, err)
	v, err := Compile(out)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if (i+j)%2 == 0 {
					require.NoError(t, v.Validate(json.RawMessage(`{"n":1}`)))
				} else {
					require.Error(t, v.Validate(json.RawMessage(`{"n":-1}`)))
				}
			}
		})
	}
	wg.Wait()
}

func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
		`{"properties":{"t":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`,
		`{"allOf":[{"properties":{"a":{}}},{"required":["a"]}],"oneOf":[{"$ref":"#/allOf/0"}]}`,
		`{"properties":{"a":{"$ref":"#"}},"definitions":{"x":{"$ref":"#/definitions/x"}}}`,
		`{"properties":{"a":{"$ref":"#/$defs/a~1b","description":"d"}},"$defs":{"a/b":{"$anchor":"x","enum":[1]}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#/definitions/a"}],"definitions":{"a":{"dependencies":{"x":["y"],"z":{"$ref":"#"}}}}}`,
		`{"properties":{"a":{"$ref":"https://example.com/a.json","type":"string"},"b":{"oneOf":[{"$ref":"#/$defs/n"},{"$ref":"#nope"}]}},"$defs":{"n":{"items":{"$ref":"#/$defs/n"}}}}`,
		`{"not":{"$ref":"#/$defs/x"},"if":{"contains":{"$ref":"other.json"},"maxContains":1},"then":{"$ref":"#"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, _, err := Resolve(raw)
		if err != nil {
			return
		}
		v, err := Compile(out)
		if err != nil {
			t.Fatalf("Resolve output does not compile: %v\ninput:  %s\noutput: %s", err, raw, out)
		}
		if _, again, err := Resolve(out); err != nil || len(again) > 0 {
			t.Fatalf("Resolve output is not self-contained: %v %v\ninput:  %s\noutput: %s", err, again, raw, out)
		}
		_ = v.Validate(json.RawMessage(`{"a":[1,{"b":null}]}`))
	})
}
