package defs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/registry"
)

// defsVersion must hash exactly the bytes jsonschema.Encode gives for the list,
// so versions stay what they were before it stopped re-encoding schemas.
func TestDefsVersionIsHashOfEncodedList(t *testing.T) {
	r := registry.NewRegistry(nil)
	call := func(t registry.Tool) registry.Tool {
		t.Call = nopCall
		return t
	}
	_, err := r.ReplaceSource("s", []registry.Tool{
		call(registry.Tool{ID: "mcp__s__a", Description: `<b>&"quoted"</b> ünïcode \ tab	`, InputSchema: json.RawMessage(` { "type" : "object", "properties": {"z": {"type":"string"}, "a": {"enum": [1.50, "<x>"]}} }`)}),
		call(registry.Tool{ID: "mcp__s__b", Title: "only a title"}),
		call(registry.Tool{ID: "mcp__s__c", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}),
	})
	require.NoError(t, err)
	c := NewDefsCache(r, Options{})
	for _, d := range []Dialect{DialectJSONSchema, DialectOpenAI, DialectGemini} {
		defs := c.Defs(d)
		require.Empty(t, defs.Problems)
		b, err := jsonschema.Encode(defs.Tools)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		require.Equal(t, hex.EncodeToString(sum[:]), defs.Version, "dialect %s", d)
	}
}
