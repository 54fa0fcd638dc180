package mcp

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSchemaCacheSharesAcrossLists(t *testing.T) {
	raws := []json.RawMessage{
		json.RawMessage(`{"name": "a", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}}`),
		json.RawMessage(`{"name": "b", "inputSchema": {"type": "object", "required": ["y"], "properties": {"y": {"type": "string"}}}}`),
	}
	c := NewSchemaCache(100)
	first, errs := c.ConvertTools("s1", raws)
	require.Empty(t, errs)
	require.Equal(t, 2, c.Len())
	// Another server (a restart, or another session) with the same schemas
	// gets the very same validators: nothing was prepared again.
	second, errs := c.ConvertTools("s2", raws)
	require.Empty(t, errs)
	require.Equal(t, 2, c.Len())
	for i := range first {
		require.Same(t, first[i].Validator, second[i].Validator)
		require.JSONEq(t, string(first[i].InputSchema), string(second[i].InputSchema))
	}
	require.Error(t, second[1].Validator.Validate(json.RawMessage(`{}`)), "a shared validator still validates")

	// Without a cache, lists share nothing.
	third, _ := ConvertTools("s3", raws)
	require.NotSame(t, first[0].Validator, third[0].Validator)
}

func TestSchemaCacheIsBounded(t *testing.T) {
	c := NewSchemaCache(10)
	for i := range 100 {
		raw := json.RawMessage(fmt.Sprintf(`{"name": "t", "inputSchema": {"type": "object", "description": "%d"}}`, i))
		_, errs := c.ConvertTools("s", []json.RawMessage{raw})
		require.Empty(t, errs)
		require.LessOrEqual(t, c.Len(), 10)
	}
	var nilCache *SchemaCache
	require.Zero(t, nilCache.Len())
}

// A cached schema keeps its warnings: a tool converted from the cache
// (another session of the same server, say) reports them as the first did,
// under its own server and tool names.
func TestSchemaCacheKeepsWarnings(t *testing.T) {
	raw := func(name string) json.RawMessage {
		return json.RawMessage(`{"name": "` + name + `", "inputSchema": {"type": "object", "properties": {"c": {"$ref": "https://example.com/c.json"}}}}`)
	}
	c := NewSchemaCache(100)
	first, errs := c.ConvertTools("s1", []json.RawMessage{raw("a")})
	require.Empty(t, errs)
	second, errs := c.ConvertTools("s2", []json.RawMessage{raw("b")})
	require.Empty(t, errs)
	require.Equal(t, 1, c.Len(), "one entry per distinct schema bytes")
	require.Len(t, second, 1)
	require.Same(t, first[0].Validator, second[0].Validator, "prepared once")
	require.Equal(t, first[0].Warnings, second[0].Warnings)
	got := ToolWarnings(second)
	require.Len(t, got, 1)
	require.Equal(t, `server "s2": tool "b": inputSchema: $ref "https://example.com/c.json" at #/properties/c is not fetched; that value accepts anything`, got[0].String())
}
