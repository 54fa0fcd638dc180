package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

// `make install PREFIX=DIR` puts a freecode into DIR/bin that reports the
// checkout's git describe, and says how to put DIR/bin on the PATH when it
// is not there.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds freecode with make")
	}
	root := testutil.RepoRoot()
	describe, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	require.NoError(t, err, "git describe")
	want := strings.TrimSpace(string(describe))

	prefix := filepath.Join(t.TempDir(), "prefix with space")
	// make rebuilds bin/freecode, the Makefile's (ignored) build output.
	// VERSION is what the Makefile computes, given so that the two cannot
	// differ while the tree changes; the Makefile's own default is checked
	// by running it without VERSION in the demo and by hand.
	make := exec.Command("make", "-s", "-C", root, "install", "PREFIX="+prefix, "VERSION="+want)
	make.Env = append(os.Environ(), "PATH=/usr/bin:/bin:"+filepath.Dir(goBinary(t)))
	out, err := make.CombinedOutput()
	require.NoError(t, err, "make install:\n%s", out)
	require.Contains(t, string(out), prefix+"/bin is not on your PATH")
	require.Contains(t, string(out), `export PATH="`+prefix+`/bin:$PATH"`)

	bin := filepath.Join(prefix, "bin", "freecode")
	st, err := os.Stat(bin)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	got, err := exec.Command(bin, "--version").CombinedOutput()
	require.NoError(t, err, "%s", got)
	require.True(t, strings.HasPrefix(string(got), "freecode "+want+" ("), "freecode --version: %q, want git describe %q", got, want)
}

// goBinary is the go command that runs this test.
func goBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	require.NoError(t, err)
	return p
}
