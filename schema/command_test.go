package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandWarning(t *testing.T) {
	dir := t.TempDir()
	spaced := filepath.Join(dir, "my server")
	if err := os.WriteFile(spaced, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	inPath := func(p string) bool { return p == "my tool" }
	for _, tc := range []struct {
		command []string
		want    string // in the warning; "" for none
	}{
		{[]string{"npx", "-y", "pkg"}, ""},
		{[]string{"npx -y pkg"}, `"command": ["npx", "-y", "pkg"]`},
		{[]string{"uvx  mcp-server-git", "--repository", "."}, `"command": ["uvx", "mcp-server-git", "--repository", "."]`},
		{[]string{"node 'my dir/index.js'"}, `"command": ["node", "my dir/index.js"]`},
		// A program that exists, or is found on the PATH, is what it says.
		{[]string{spaced, "--flag"}, ""},
		{[]string{"my tool"}, ""},
		// Nothing to split into: a lone word with trailing space.
		{[]string{"npx "}, ""},
		{[]string{"/no such/dir/server"}, ""},
		{[]string{dir + " --flag"}, `"--flag"]`},
	} {
		got := CommandWarning(tc.command, inPath)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CommandWarning(%q) = %q, want one with %q", tc.command, got, tc.want)
		}
	}
}
