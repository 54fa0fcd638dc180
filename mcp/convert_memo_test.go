package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
)

// ConvertTools prepares each distinct schema of a list once: tools with
// byte-equal schemas share the Validator, and every tool is what
// ConvertTool alone makes of it.
func TestConvertToolsSharesPreparedSchemas(t *testing.T) {
	raws := listedTools(t, testserver.Config{Tools: 4, Schemas: testserver.SchemasMixed})
	bad := json.RawMessage(`{"name":"bad1","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":"zero"}}}}`)
	bad2 := json.RawMessage(`{"name":"bad2","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":"zero"}}}}`)
	tools, errs := mcp.ConvertTools("srv", append(raws, bad, bad2))
	require.Len(t, errs, 2)
	require.ErrorContains(t, errs[0], `tool "bad1"`)
	require.ErrorContains(t, errs[1], `tool "bad2"`)

	byName := map[string]mcp.Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	require.Same(t, byName["tool_000"].Validator, byName["tool_002"].Validator)
	require.Same(t, byName["tool_001"].Validator, byName["tool_003"].Validator)
	require.NotSame(t, byName["tool_000"].Validator, byName["tool_001"].Validator)
	for _, raw := range raws {
		alone, err := mcp.ConvertTool("srv", raw)
		require.NoError(t, err)
		got := byName[alone.Name]
		require.Equal(t, string(alone.InputSchema), string(got.InputSchema))
		require.Equal(t, alone.ID, got.ID)
		require.Equal(t, alone.ReadOnly, got.ReadOnly)
		require.Equal(t, alone.Validator.Validate(json.RawMessage(`{}`)) == nil, got.Validator.Validate(json.RawMessage(`{}`)) == nil)
	}
}
