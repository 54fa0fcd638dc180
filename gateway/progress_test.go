package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// TestProgressAndCancellationPassThrough: a server's progress notices of
// a call reach the host that asked for them, and the host cancelling the
// call cancels it at the server.
func TestProgressAndCancellationPassThrough(t *testing.T) {
	home := servetest.ShortHome(t)
	calls := filepath.Join(home, "calls.jsonl")
	writeConfig(t, home, servetest.Config(testServer("t", "--progress", "--call-log", calls)))
	h := startHost(t, home, hostOptions{})
	require.Contains(t, h.tools(), "t__progress")

	h.send(map[string]any{"op": "call", "name": "t__progress", "args": map[string]any{"steps": 3, "ms": 20}, "progress": true})
	for i := 1; i <= 3; i++ {
		ev := h.event("progress")
		assert.Equal(t, float64(i), ev["progress"])
		assert.Equal(t, float64(3), ev["total"])
		assert.Equal(t, "step "+string(rune('0'+i))+" of 3", ev["message"])
	}
	res := h.answer("call")["result"].(map[string]any)
	assert.Equal(t, "done 3 steps", text(res))

	// hold: the call ends only when it is cancelled.
	h.send(map[string]any{"op": "abortAfterProgress", "name": "t__progress", "args": map[string]any{"steps": 1, "hold": true}})
	h.event("progress")
	ans := h.answer("abortAfterProgress")
	assert.Contains(t, ans["error"], "the host cancelled")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), `"phase":"end","tool":"progress"`) == 2
	}, waitFor, 10*time.Millisecond, "the server's call was not cancelled")
}
