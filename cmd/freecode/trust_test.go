package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/testutil"
)

// TestServeProjectTrust runs serve for a repository whose
// .freecode/settings.json ships a server: it must not start (no process)
// until trusted, must stop when its definition changes, and a name defined
// by both the user and the project starts neither copy.
func TestServeProjectTrust(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	repo := filepath.Join(shortHome(t), "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".freecode"), 0o755))
	pidFile := filepath.Join(repo, "proj.pid")
	project := config{t, filepath.Join(repo, ".freecode", "settings.json")}
	projDef := func(extra ...string) map[string]any {
		return map[string]any{
			"mcp":        map[string]any{"servers": []any{local("proj", append([]string{ts, "--name", "proj", "--pid-file", pidFile}, extra...)...)}},
			"permission": map[string]any{"allow": []string{"mcp__proj", "mcp__b"}},
		}
	}
	project.write(projDef(), false)
	user := config{t, filepath.Join(home, "config.json")}
	user.write(cfg(local("a", ts, "--name", "a"), local("b", ts, "--name", "b")), false)

	freecode := func(args ...string) (string, error) {
		cmd := exec.Command("freecode", args...)
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	p := startServe(t, home, "--project", repo)
	p.waitPhase("b", "ready")
	proj := p.waitPhase("proj", "untrusted")
	assert.Equal(t, "project:"+repo, proj.Source)
	assert.Contains(t, proj.Reason, "is not trusted; review it with `freecode mcp trust "+repo+"`")
	assert.Zero(t, proj.PID)
	_, err := os.Stat(pidFile)
	require.ErrorIs(t, err, os.ErrNotExist, "an untrusted project server never starts")

	// Its allow rules have no effect: a mutating call of the user's server
	// b, which only the project allows, still asks.
	events := p.events()
	callDone := make(chan error, 1)
	go func() {
		_, err := p.client.Call(t.Context(), "mcp__b__note", json.RawMessage(`{"text":"x"}`))
		callDone <- err
	}()
	until(t, events, "approval requested", func(ev api.Event) bool { return ev.Kind == "approval_requested" })
	approvals, err := p.client.Approvals(t.Context())
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.NoError(t, p.client.Answer(t.Context(), approvals[0].ID, false))
	require.Error(t, <-callDone, "refused")

	// Trusting starts it, without restarting serve; the record lives in the
	// home, not in the repository.
	out, err := freecode("mcp", "trust", "--yes")
	require.NoError(t, err, out)
	assert.Contains(t, out, `server "proj"`)
	assert.Contains(t, out, "permission.allow: mcp__proj")
	ready := p.waitPhase("proj", "ready")
	assert.Equal(t, readPID(t, pidFile), ready.PID)
	trust, err := os.ReadFile(filepath.Join(home, "trust.json"))
	require.NoError(t, err)
	assert.Contains(t, string(trust), project.path)
	require.NoError(t, filepath.WalkDir(repo, func(path string, d os.DirEntry, err error) error {
		assert.NotContains(t, d.Name(), "trust", "nothing about trust is written into the repository")
		return err
	}))
	// Now the project's allow rule applies: no question asked.
	resp, err := p.client.Call(t.Context(), "mcp__b__note", json.RawMessage(`{"text":"y"}`))
	require.NoError(t, err)
	assert.False(t, resp.Result.IsError, "%+v", resp)

	// Editing the project's command makes it untrusted again and stops it.
	project.write(projDef("--tools", "1"), true)
	proj = p.waitPhase("proj", "untrusted")
	assert.Contains(t, proj.Reason, "changed since it was trusted")
	require.Eventually(t, func() bool { return !testutil.Alive(ready.PID) }, waitFor, 10*time.Millisecond)

	// Re-trust, then untrust: it stops again.
	out, err = freecode("mcp", "trust", "--yes")
	require.NoError(t, err, out)
	p.waitPhase("proj", "ready")
	out, err = freecode("mcp", "untrust")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Untrusted")
	p.waitPhase("proj", "untrusted")

	// A name defined in both files: neither copy runs, the error names both.
	out, err = freecode("mcp", "trust", "--yes")
	require.NoError(t, err, out)
	p.waitPhase("proj", "ready")
	user.write(cfg(local("a", ts, "--name", "a"), local("proj", ts, "--name", "user-proj")), false)
	clash := p.waitPhase("proj", "conflict")
	assert.Contains(t, clash.Reason, `server "proj" is defined both in `+user.path+" and in "+project.path)
	assert.Zero(t, clash.PID)
	for _, pid := range testutil.GroupMembers(ready.PID) {
		t.Errorf("process %d of the project server still runs", pid)
	}
	assert.False(t, strings.Contains(p.stderr.String(), "user-proj") && strings.Contains(p.stderr.String(), "server ready"), "the user's copy never started")
}
