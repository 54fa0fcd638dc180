package gateway

import (
	"fmt"
	"io"
	"net/http"
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

// TestModernHTTPProgressBeforeTheAnswer: over streamable HTTP at
// 2026-07-28 (no session), every progress notice of a call reaches the
// host on the call's stream before its answer, the last ones too, however
// quickly the server answers after them.
func TestModernHTTPProgressBeforeTheAnswer(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t", "--progress", "--modern")))
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	const steps = 20
	for round := range 5 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t__progress","arguments":{"steps":%d,"ms":0},`+
			`"_meta":{"progressToken":"p%d","io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
			`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, round, steps, round)
		req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "t__progress")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		out := string(b)
		assert.Equal(t, steps, strings.Count(out, `"method":"notifications/progress"`), "round %d:\n%s", round, out)
		last := strings.LastIndex(out, `"method":"notifications/progress"`)
		assert.Greater(t, strings.Index(out, `done 20 steps`), last, "the answer comes after every notice")
	}
}
