package mcp

import (
	"context"
	"encoding/json"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChildEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"LANG=C.UTF-8",
		"OPENAI_API_KEY=sk-secret",
		"FREECODE_TEST_SECRET=hunter2",
		"HTTPS_PROXY=http://proxy:3128",
		"NOEQUALS",
	}
	got, withheld := childEnv(parent, map[string]string{"TOKEN": "t", "LANG": "de_DE.UTF-8"})
	require.Equal(t, []string{
		"HOME=/home/u",
		"HTTPS_PROXY=http://proxy:3128",
		"LANG=de_DE.UTF-8", // the server's env wins
		"PATH=/usr/bin:/bin",
		"TOKEN=t",
	}, got)
	// Names only, and not those the server gets through its env.
	require.Equal(t, []string{"FREECODE_TEST_SECRET", "OPENAI_API_KEY"}, withheld)
	_, withheld = childEnv(parent, map[string]string{"OPENAI_API_KEY": "${OPENAI_API_KEY}"})
	require.Equal(t, []string{"FREECODE_TEST_SECRET"}, withheld)
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// Every pipe end of a session is closed when it ends, whether it was
// closed or its server crashed, rather than left to the garbage collector.
func TestSessionsReleaseFileDescriptors(t *testing.T) {
	// With the collector off, only explicit closes free descriptors.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs(t)
	for i := range 4 {
		s, err := Connect(context.Background(), localServer("fds", "--crash-after", "1"), Options{})
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
			require.ErrorIs(t, err, ErrTransport)
			waitClosed(t, s.Done(), "Done after crash")
		}
		require.NoError(t, s.Close())
		requireGroupGone(t, s.PID())
	}
	require.LessOrEqual(t, openFDs(t), before, "descriptors left open by four ended sessions")
}
