package gateway

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// TestClaudeCodeOverHTTPWithTheSnippet: Claude Code, given the snippet
// --print-config claude --http prints (which holds no token), reports the
// HTTP gateway connected once FREECODE_GATEWAY_TOKEN holds the token, and
// not without it.
func TestClaudeCodeOverHTTPWithTheSnippet(t *testing.T) {
	claude := npmFile(t, ".bin/claude")
	node := npmFile(t, ".bin/node")
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	g := startHTTPGateway(t, home)
	token, err := os.ReadFile(TokenFile(home))
	require.NoError(t, err)

	snippet, _, err := HostConfig("claude", Launch{Name: "fc", URL: g.url, TokenFile: TokenFile(home)})
	require.NoError(t, err)
	require.NotContains(t, snippet, strings.TrimSpace(string(token)))
	var doc struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(snippet), &doc))

	userHome := t.TempDir()
	run := func(env ...string) string {
		t.Helper()
		cmd := exec.Command(claude, "mcp", "list")
		cmd.Dir = userHome
		cmd.Env = append(os.Environ(), "HOME="+userHome, "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Env = append(cmd.Env, env...)
		out, _ := cmd.CombinedOutput() // it exits 0 either way
		return string(out)
	}
	add := exec.Command(claude, "mcp", "add-json", "fc", string(doc.Servers["fc"]))
	add.Dir = userHome
	add.Env = append(os.Environ(), "HOME="+userHome, "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := add.CombinedOutput()
	require.NoError(t, err, "claude mcp add-json: %s", out)

	assert.Regexp(t, `(?m)^fc: .*\(HTTP\) - ✔ Connected$`, run(TokenEnvVar+"="+strings.TrimSpace(string(token))))
	assert.NotRegexp(t, `(?m)^fc: .* - ✔ Connected$`, run(TokenEnvVar+"=wrong"), "a wrong token is refused")
}
