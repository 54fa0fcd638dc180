package defs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/jsonschema"
)

// Schemas with references jsonschema.Resolve does not follow come out of it
// with {} (any value) in their place, or a guard keyword left out: every
// dialect still converts them within its provider's rules.
func TestDialectsOfDegradedSchemas(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		// gemini is what the gemini dialect makes of property "v".
		gemini string
	}{
		{"bare", `{"properties":{"v":{"$ref":"https://example.com/v.json"}},"required":["v"]}`, `{"type":"string"}`},
		{"with siblings", `{"properties":{"v":{"$ref":"other.json","type":"object","description":"V."}}}`, `{"type":"object","description":"V."}`},
		{"in items", `{"properties":{"v":{"type":"array","items":{"$ref":"#/$defs/missing"}}}}`, `{"type":"array","items":{"type":"string"}}`},
		{"in anyOf", `{"properties":{"v":{"anyOf":[{"type":"integer"},{"$ref":"https://example.com/v.json"}]}}}`, `{"anyOf":[{"type":"integer"},{"type":"string"}]}`},
		{"oneOf left out", `{"properties":{"v":{"oneOf":[{"$ref":"https://example.com/a.json"},{"type":"string"}],"description":"A or text."}}}`, `{"type":"string","description":"A or text."}`},
		{"whole schema", `{"$ref":"https://example.com/tool.json"}`, ``},
		{"recursive", `{"properties":{"v":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"ext":{"$ref":"https://example.com/e.json"},"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resolved, warnings, err := jsonschema.Resolve(json.RawMessage(tc.raw))
			require.NoError(t, err)
			require.NotEmpty(t, warnings)
			for _, d := range Dialects() {
				got, err := ConvertSchema(d, resolved)
				require.NoError(t, err, d)
				again, err := ConvertSchema(d, resolved)
				require.NoError(t, err)
				require.Equal(t, got, again, "%s: deterministic", d)
				checkDialectInvariants(t, d, got)
				if d == DialectJSONSchema {
					require.JSONEq(t, string(resolved), string(got))
				}
				if d == DialectGemini && tc.gemini != "" {
					var top struct {
						Properties map[string]json.RawMessage `json:"properties"`
					}
					require.NoError(t, json.Unmarshal(got, &top))
					require.JSONEq(t, tc.gemini, string(top.Properties["v"]))
				}
			}
		})
	}
}
