package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `freecode serve` with three servers, one of them with an unset
// variable: the two others get ready, that one is invalid with its
// positioned error, and the commands that edit the file while serve runs
// say truly what serve does with the change.
func TestServeHoldsOnlyTheBadServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	c := config{t, filepath.Join(home, "config.json")}
	bad := local("bad", ts, "--name", "bad")
	bad["env"] = map[string]string{"TOKEN": "${FREECODE_TEST_NEVER_SET}"}
	c.write(cfg(local("a", ts, "--name", "a"), bad, local("b", ts, "--name", "b")), true)
	p := startServe(t, home)
	p.waitPhase("a", "ready")
	p.waitPhase("b", "ready")
	st := p.waitStatus("bad invalid", func(st wire.Status) bool {
		s, _ := server(st, "bad")
		return s.Phase == "invalid"
	})
	assert.Empty(t, st.ConfigError)
	s, _ := server(st, "bad")
	assert.Zero(t, s.PID)
	assert.Contains(t, s.Reason, c.path+`:20:11: mcp.servers[1].env.TOKEN (server "bad"): environment variable FREECODE_TEST_NEVER_SET is not set`)

	fc := func(args ...string) (string, error) {
		cmd := exec.Command("freecode", args...)
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := fc("mcp", "status")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^a +user +yes +ready +\d+ +7 `, out)
	assert.Regexp(t, `(?m)^bad +user +yes +invalid +- +- +- `, out)
	assert.Regexp(t, `(?m)^b +user +yes +ready +\d+ +7 `, out)
	assert.Contains(t, out, "\ninvalid: server \"bad\" has errors; set the variable where freecode runs, or turn the server off with `freecode mcp disable bad`; the other servers run meanwhile:\n"+c.path+":20:11:")
	assert.NotContains(t, out, "No MCP servers configured")

	// Edits go on applying, and add says what serve does with each one.
	out, err = fc("mcp", "add", "c", "local", "--", ts, "--name", "c")
	require.NoError(t, err, out)
	assert.Contains(t, out, "freecode serve is running and applies the change now; see `freecode mcp status`.\n")
	p.waitPhase("c", "ready")
	out, err = fc("mcp", "add", "d", "local", "--env", "K=${FREECODE_TEST_NEVER_SET}", "--", ts)
	require.NoError(t, err, out)
	assert.Regexp(t, regexp.MustCompile(`(?s)freecode serve is running but will not start what cannot run:\nserver "d" has errors; .*environment variable FREECODE_TEST_NEVER_SET is not set`), out)
	assert.NotContains(t, out, "applies the change now")
	p.waitPhase("d", "invalid")

	// The bad server can be taken out; the others never restarted.
	out, err = fc("mcp", "remove", "bad")
	require.NoError(t, err, out)
	p.waitStatus("bad removed", func(st wire.Status) bool { _, ok := server(st, "bad"); return !ok })
	for _, name := range []string{"a", "b"} {
		s, _ := server(p.status(), name)
		assert.Equal(t, "ready", string(s.Phase), name)
		assert.Zero(t, s.Restarts, name)
	}
}
