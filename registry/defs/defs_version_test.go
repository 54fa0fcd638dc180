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

// A tool whose server's object changed (an icon, an output schema) is a
// change of the registry — hosts behind the gateway must hear of it — but
// not of the definitions: their bytes and version stay, and so does the
// model's prompt cache. The same object in another key order is no change.
func TestRawChangeKeepsTheVersion(t *testing.T) {
	r := registry.NewRegistry(nil)
	tool := func(raw string) []registry.Tool {
		return []registry.Tool{{ID: "mcp__s__a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
			Raw: json.RawMessage(raw), Call: nopCall}}
	}
	changed, err := r.ReplaceSource("s", tool(`{"name":"a","icons":[{"src":"https://x/1.png"}],"_meta":{"k":1}}`))
	require.NoError(t, err)
	require.True(t, changed)
	c := NewDefsCache(r, Options{})
	v1 := c.Defs(DialectJSONSchema)
	changed, err = r.ReplaceSource("s", tool(`{"_meta":{"k":1},"icons":[{"src":"https://x/1.png"}],"name":"a"}`))
	require.NoError(t, err)
	require.False(t, changed, "the same object, keys reordered")
	changed, err = r.ReplaceSource("s", tool(`{"name":"a","icons":[{"src":"https://x/2.png"}],"_meta":{"k":1}}`))
	require.NoError(t, err)
	require.True(t, changed, "a changed icon")
	v2 := c.Defs(DialectJSONSchema)
	require.Equal(t, v1.Version, v2.Version)
	b1, err := jsonschema.Encode(v1.Tools)
	require.NoError(t, err)
	b2, err := jsonschema.Encode(v2.Tools)
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2))
}
