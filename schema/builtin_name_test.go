package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A server named "builtin" would share the registry source of FreeCode's
// own tools and replace them when it registers.
func TestServerNameBuiltinIsRefused(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	_, err = v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "builtin", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), `c.json:1:23: mcp.servers[0].name (server "builtin"): the server name "builtin" is taken by FreeCode's own tools (read, write); pick another name`)
	_, err = v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "builtins", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
	require.NoError(t, err)
}
