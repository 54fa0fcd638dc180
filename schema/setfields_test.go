package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// SetServerFields replaces the members it is given where they stand, adds
// the missing ones, drops the named ones, and leaves the rest of the entry
// — what a user wrote by hand — and of the file byte for byte.
func TestSetServerFields(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	orig := `{"theme": "dark", "mcp": {"servers": [
  {"name": "m", "type": "local", "command": ["npx", "-y", "pkg@1.0.0"], "timeout": 12000,
   "tools": {"exclude": ["delete_*"]}, "env": {"A": "1"}},
  {"name": "other", "type": "local", "command": ["x"]}
]}}
`
	require.NoError(t, os.WriteFile(path, []byte(orig), 0o600))
	require.NoError(t, v.Edit(t.Context(), path, func(d *Doc) error {
		return d.SetServerFields("m", []Field{
			{"command", []string{"npx", "-y", "pkg@1.1.0"}},
			{"enabled", false},
		}, []string{"env", "url"})
	}))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"theme": "dark", "mcp": {"servers": [
  {"name": "m", "type": "local", "command": ["npx", "-y", "pkg@1.1.0"], "timeout": 12000,
   "tools": {"exclude": ["delete_*"]},
   "enabled": false},
  {"name": "other", "type": "local", "command": ["x"]}
]}}
`, string(got))

	err = v.Edit(t.Context(), path, func(d *Doc) error { return d.SetServerFields("nope", nil, nil) })
	require.ErrorIs(t, err, ErrNoServer)
}
