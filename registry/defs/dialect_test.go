package defs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/jsonschema"
)

// TestDialectGoldens converts every testdata/dialects/*.json schema with
// every dialect and compares with testdata/dialects/golden/<name>.<dialect>.json.
// Run with -update to rewrite the goldens.
func TestDialectGoldens(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "dialects", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		raw, err := os.ReadFile(in)
		require.NoError(t, err)
		for _, d := range Dialects() {
			t.Run(name+"/"+string(d), func(t *testing.T) {
				got, err := ConvertSchema(d, raw)
				require.NoError(t, err)
				again, err := ConvertSchema(d, raw)
				require.NoError(t, err)
				require.Equal(t, got, again, "conversion is deterministic")
				pretty := []byte("null")
				if got != nil {
					var buf bytes.Buffer
					require.NoError(t, json.Indent(&buf, got, "", "  "))
					pretty = buf.Bytes()
				}
				pretty = append(pretty, '\n')
				golden := filepath.Join("testdata", "dialects", "golden", name+"."+string(d)+".json")
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
					require.NoError(t, os.WriteFile(golden, pretty, 0o644))
					return
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "run go test -update to create the golden file")
				require.Equal(t, string(want), string(pretty))
				checkDialectInvariants(t, d, got)
			})
		}
	}
}

// checkDialectInvariants asserts the provider rules independently of the
// goldens, so a wrong -update is caught.
func checkDialectInvariants(t *testing.T, d Dialect, out json.RawMessage) {
	t.Helper()
	if d == DialectJSONSchema {
		return
	}
	if out == nil {
		require.Equal(t, DialectGemini, d, "only gemini omits parameters")
		return
	}
	v, err := jsonschema.Decode(out)
	require.NoError(t, err)
	top := v.(map[string]any)
	require.Equal(t, "object", top["type"])
	for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not", "const"} {
		require.NotContains(t, top, k, "top level %s", k)
	}
	var walk func(node any, path string)
	walk = func(node any, path string) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		for _, k := range []string{"$ref", "$defs", "definitions", "allOf", "oneOf", "not", "if"} {
			require.NotContains(t, m, k, "%s has %s", path, k)
		}
		if d == DialectGemini {
			for k := range m {
				require.Contains(t, geminiKept, k, "%s has %s", path, k)
			}
			_, isString := m["type"].(string)
			_, hasAnyOf := m["anyOf"]
			require.True(t, isString || hasAnyOf, "%s has no single type", path)
			if m["type"] == "array" {
				require.Contains(t, m, "items", path)
			}
			if enum, ok := m["enum"].([]any); ok {
				require.Equal(t, "string", m["type"], path)
				for _, e := range enum {
					require.IsType(t, "", e, path)
				}
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(p, path+"."+name)
			}
		}
		walk(m["items"], path+"[]")
		if list, ok := m["anyOf"].([]any); ok {
			for _, b := range list {
				walk(b, path+"|")
			}
		}
	}
	walk(top, "$")
}

func TestConvertSchemaEdgeCases(t *testing.T) {
	for _, d := range []Dialect{DialectJSONSchema, DialectOpenAI} {
		got, err := ConvertSchema(d, nil)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object","properties":{}}`, string(got))
	}
	got, err := ConvertSchema(DialectGemini, nil)
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = ConvertSchema(DialectOpenAI, json.RawMessage(`{`))
	require.Error(t, err)
	_, err = ConvertSchema(Dialect("x"), json.RawMessage(`{}`))
	require.Error(t, err)
	// Self-reference through "#" terminates.
	got, err = ConvertSchema(DialectOpenAI, json.RawMessage(`{"type":"object","properties":{"next":{"$ref":"#"}}}`))
	require.NoError(t, err)
	require.Contains(t, string(got), `"next"`)
}
