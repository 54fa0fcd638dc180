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
