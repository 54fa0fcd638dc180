package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcp.registries and a server's registry object are read as written; the
// provenance is not part of the spec (it changes nothing of how the
// server runs), but it is part of a project's definition hash.
func TestRegistriesAndProvenance(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	digest := "sha256:" + "ab12000000000000000000000000000000000000000000000000000000000000"
	doc := []byte(`{"mcp": {"registries": ["https://registry.example.com/sub", "http://127.0.0.1:8080"],
		"servers": [{"name": "mem", "type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-memory@2025.8.4"],
		"registry": {"url": "https://registry.example.com/sub", "name": "io.github.a/mem", "version": "2025.8.4", "digest": "` + digest + `", "kind": "npm"}}]}}`)
	cfg, err := v.Parse("c.json", doc, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"https://registry.example.com/sub", "http://127.0.0.1:8080"}, cfg.MCP.Registries)
	s := cfg.MCP.Servers[0]
	require.NotNil(t, s.Registry)
	assert.Equal(t, Provenance{URL: "https://registry.example.com/sub", Name: "io.github.a/mem", Version: "2025.8.4", Digest: digest, Kind: "npm"}, *s.Registry)
	plain := s
	plain.Registry = nil
	assert.Equal(t, plain.SpecHash(), s.SpecHash())

	h1, err := DefinitionHash(doc)
	require.NoError(t, err)
	h2, err := DefinitionHash([]byte(`{"mcp": {"registries": ["https://registry.example.com/sub", "http://127.0.0.1:8080"],
		"servers": [{"name": "mem", "type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-memory@2025.8.4"]}]}}`))
	require.NoError(t, err)
	assert.NotEqual(t, h1, h2, "a project's provenance is part of what trust hashes")

	for _, bad := range []struct{ doc, want string }{
		{`{"mcp": {"registries": ["ftp://x"]}}`, `mcp.registries[0]`},
		{`{"mcp": {"servers": [{"name": "m", "type": "local", "command": ["x"], "registry": {"url": "https://r", "name": "a/b", "version": "1", "digest": "md5:1"}}]}}`, `mcp.servers[0].registry.digest (server "m")`},
		{`{"mcp": {"servers": [{"name": "m", "type": "local", "command": ["x"], "registry": {"url": "https://r", "name": "a/b", "digest": "` + digest + `"}}]}}`, `mcp.servers[0].registry (server "m"): missing required field "version"`},
	} {
		_, err := v.Parse("c.json", []byte(bad.doc), LoadOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), bad.want)
	}
}
