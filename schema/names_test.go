package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tool ids are mcp__<server>__<tool>: a server name may neither hold the
// separator nor end next to it, or "mcp__fs" would read as a prefix of the
// ids of a server "fs_".
func TestServerNameRules(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for name, ok := range map[string]bool{
		"fs": true, "fs-": true, "f_s": true, "a-_b": true, "A1": true,
		"fs_": false, "fs__": false, "a__b": false, "_a": false, "1a": false, "a-_": false,
	} {
		t.Run(name, func(t *testing.T) {
			err := v.Validate("c.json", []byte(`{"mcp": {"servers": [{"name": "`+name+`", "type": "local", "command": ["x"]}]}}`), LoadOptions{})
			if ok {
				require.NoError(t, err)
				return
			}
			var errs Errors
			require.ErrorAs(t, err, &errs)
			require.Len(t, errs, 1)
			require.Equal(t, []string{"mcp", "servers", "0", "name"}, errs[0].Path)
			require.Equal(t, `server name must start with a letter, contain only letters, digits, "_" and "-", be at most 48 characters, and neither contain "__" nor end in "_" (tool ids are mcp__<server>__<tool>)`, errs[0].Msg)
		})
	}
}
