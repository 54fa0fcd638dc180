package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/require"
)

// `logs --follow` prints exactly the lines a server wrote, each once, even
// when the same line repeats past the ring's 200 lines, and marks a restart
// between the lines of the two sessions.
func TestLogsFollowRepeatedLinesAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("a", ts, "--stderr-echo")), true)
	p := startServe(t, home)
	p.waitPhase("a", "ready")

	// stdout and stderr on one pipe: the marker (stderr) shows where it
	// falls among the lines (stdout).
	follow := exec.Command("freecode", "mcp", "logs", "a", "--follow")
	follow.Env = append(os.Environ(), "FREECODE_HOME="+home)
	out := &syncBuffer{}
	follow.Stdout, follow.Stderr = out, out
	require.NoError(t, follow.Start())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = follow.Process.Kill()
			_ = follow.Wait()
		}
	})
	// echo makes a write text and a newline to its stderr, in one write.
	echo := func(text string) {
		t.Helper()
		args, err := json.Marshal(map[string]string{"text": text})
		require.NoError(t, err)
		_, err = p.client.Call(t.Context(), "mcp__a__echo", args)
		require.NoError(t, err)
	}
	waitOut := func(what string, cond func(string) bool) {
		t.Helper()
		require.Eventually(t, func() bool { return cond(out.String()) }, waitFor, 10*time.Millisecond,
			"waiting for %s; logs --follow printed %d lines:\n%s", what, strings.Count(out.String(), "\n"), out)
	}

	// Two bursts of 150 identical lines: after the second the ring holds
	// 200 lines that all read "same".
	burst := strings.TrimSuffix(strings.Repeat("same\n", 150), "\n")
	echo(burst)
	waitOut("150 lines", func(s string) bool { return strings.Count(s, "same\n") == 150 })
	echo(burst)
	waitOut("300 lines", func(s string) bool { return strings.Count(s, "same\n") >= 300 })

	require.NoError(t, p.client.Restart(t.Context(), "a"))
	p.waitStatus("a restarted", func(st wire.Status) bool {
		s, _ := server(st, "a")
		return s.Phase == "ready" && s.Restarts == 1
	})
	waitOut("the restart marker", func(s string) bool { return strings.Contains(s, "--- a restarted\n") })
	echo("same\nsame\nsame")
	echo("end")
	waitOut("the last line", func(s string) bool { return strings.HasSuffix(s, "end\n") })

	require.NoError(t, follow.Process.Signal(os.Interrupt))
	require.NoError(t, follow.Wait())
	stopped = true
	require.Equal(t, strings.Repeat("same\n", 300)+"--- a restarted\nsame\nsame\nsame\nend\n", out.String())
}
