package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server that crashed and is ready again shows no LAST-ERROR; the
// failure stays in --json as lastFailure.
func TestServeStatusAfterRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("a", ts)), true)
	p := startServe(t, home)
	a := p.waitPhase("a", "ready")
	require.NoError(t, syscall.Kill(a.PID, syscall.SIGKILL))
	st := p.waitStatus("a ready again", func(st wire.Status) bool {
		s, _ := server(st, "a")
		return s.Phase == "ready" && s.Restarts == 1
	})
	s, _ := server(st, "a")
	assert.Empty(t, s.LastError)
	assert.Contains(t, s.LastFailure, "SIGKILL")
	assert.False(t, s.LastFailureAt.IsZero())

	cmd := exec.Command("freecode", "mcp", "status")
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, fmt.Sprintf(`(?m)^a +user +yes +ready +%d +7 +1 \(1 crash\) +\S+ +-$`, s.PID), string(out))
}
