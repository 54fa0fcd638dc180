package procguard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The helper is a regular executable file named fc-reaper beside the
// program's executable, and not the program itself.
func TestHelperBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "freecode")
	helper := filepath.Join(dir, ReaperName)
	_, ok := helperBeside(exe)
	assert.False(t, ok, "none installed")

	require.NoError(t, os.WriteFile(helper, []byte("#!/bin/sh\n"), 0o644))
	_, ok = helperBeside(exe)
	assert.False(t, ok, "not executable")

	require.NoError(t, os.Chmod(helper, 0o755))
	got, ok := helperBeside(exe)
	assert.True(t, ok)
	assert.Equal(t, helper, got)

	_, ok = helperBeside(helper)
	assert.False(t, ok, "the program is the helper itself")

	require.NoError(t, os.Remove(helper))
	require.NoError(t, os.Mkdir(helper, 0o755))
	_, ok = helperBeside(exe)
	assert.False(t, ok, "a directory")
}
