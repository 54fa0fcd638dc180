package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// TestServeInvalidProject runs serve in a repository whose
// .freecode/settings.json is invalid: the user's server becomes ready all
// the same, the project's error is in the status, and a trusted project
// that turns invalid stops even though its trust hash did not change.
func TestServeInvalidProject(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	repo := filepath.Join(shortHome(t), "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".freecode"), 0o755))
	pidFile := filepath.Join(repo, "docs.pid")
	project := config{t, filepath.Join(repo, ".freecode", "settings.json")}
	docs := map[string]any{"servers": []any{local("docs", ts, "--name", "docs", "--pid-file", pidFile)}}
	project.write(map[string]any{"MCP": map[string]any{}, "mcp": docs}, false)
	user := config{t, filepath.Join(home, "config.json")}
	user.write(cfg(local("mine", ts, "--name", "mine")), false)

	p := startServe(t, home, "--project", repo)
	mine := p.waitPhase("mine", "ready")
	st := p.status()
	assert.Empty(t, st.ConfigError, "the user's config is fine")
	assert.Contains(t, st.ProjectError, "project "+project.path+" is invalid and ignored:\n")
	assert.Contains(t, st.ProjectError, project.path+`:2:3: MCP: key "MCP" is too close to "mcp"`)
	held, ok := server(st, "docs")
	require.True(t, ok, "the project's server is listed")
	assert.Equal(t, "untrusted", string(held.Phase))
	assert.Equal(t, st.ProjectError, held.Reason)
	_, err := os.Stat(pidFile)
	require.ErrorIs(t, err, os.ErrNotExist, "an invalid project's server never starts")

	// Another kind of invalid: the error follows, the user's server stays.
	project.writeBytes([]byte(`{"mcp": {"servers": [`), true)
	p.waitStatus("the syntax error", func(st wire.Status) bool {
		_, listed := server(st, "docs")
		return !listed && strings.Contains(st.ProjectError, project.path+":1:22: invalid JSON: unexpected end of file")
	})
	assert.Equal(t, mine.PID, p.waitPhase("mine", "ready").PID, "the user's server was not restarted")

	// Trusted, then invalid through a key the trust hash does not cover:
	// it stops, and runs again once the file is valid.
	project.write(map[string]any{"mcp": docs}, true)
	p.waitPhase("docs", "untrusted")
	cmd := exec.Command("freecode", "mcp", "trust", "--yes")
	cmd.Env, cmd.Dir = append(os.Environ(), "FREECODE_HOME="+home), repo
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	running := p.waitPhase("docs", "ready")
	project.write(map[string]any{"Mcp": map[string]any{}, "mcp": docs}, true)
	stopped := p.waitPhase("docs", "untrusted")
	assert.Contains(t, stopped.Reason, `key "Mcp" is too close to "mcp"`)
	require.Eventually(t, func() bool { return !testutil.Alive(running.PID) }, waitFor, 10*time.Millisecond)
	project.write(map[string]any{"mcp": docs}, true)
	p.waitPhase("docs", "ready")
	assert.Empty(t, p.status().ProjectError)
	assert.Equal(t, mine.PID, p.waitPhase("mine", "ready").PID)
}
