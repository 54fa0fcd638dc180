package defs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
)

func TestDefsCacheVersion(t *testing.T) {
	r := registry.NewRegistry(event.NewBus())
	c := NewDefsCache(r, Options{})
	empty := c.Defs(DialectOpenAI)
	require.Empty(t, empty.Tools)
	require.Len(t, empty.Version, 64)

	set := func(desc string) []registry.Tool {
		return []registry.Tool{
			tool("mcp__s__b", desc, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
			tool("mcp__s__a", "A", ""),
		}
	}
	_, err := r.ReplaceSource("s", set("B"))
	require.NoError(t, err)
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: t.TempDir()}))

	v1 := c.Defs(DialectOpenAI)
	require.NotEqual(t, empty.Version, v1.Version)
	var names []string
	for _, d := range v1.Tools {
		names = append(names, d.Name)
	}
	require.Equal(t, []string{"mcp__s__a", "mcp__s__b", "read", "write"}, names)
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(v1.Tools[0].InputSchema))

	// Re-registering an identical set (key order differs) keeps the version
	// and the very same cached list.
	same := set("B")
	same[0].InputSchema = json.RawMessage(`{"required":["q"],"properties":{"q":{"type":"string"}},"type":"object"}`)
	changed, err := r.ReplaceSource("s", same)
	require.NoError(t, err)
	require.False(t, changed)
	v2 := c.Defs(DialectOpenAI)
	require.Equal(t, v1.Version, v2.Version)
	require.Same(t, &v1.Tools[0], &v2.Tools[0], "not rebuilt")

	// A fresh cache computes the same version: it is a content hash.
	require.Equal(t, v1.Version, NewDefsCache(r, Options{}).Defs(DialectOpenAI).Version)

	// One description changes the version.
	_, err = r.ReplaceSource("s", set("B, better described"))
	require.NoError(t, err)
	v3 := c.Defs(DialectOpenAI)
	require.NotEqual(t, v1.Version, v3.Version)
	require.Equal(t, "B, better described", v3.Tools[1].Description)

	// Dialects are cached separately and differ where schemas differ.
	g := c.Defs(DialectGemini)
	require.Nil(t, g.Tools[0].InputSchema, "gemini: no parameters")
	require.NotEqual(t, v3.Version, g.Version)
	require.Equal(t, c.Defs(DialectJSONSchema).Version, c.Defs(Dialect("nope")).Version)
}
