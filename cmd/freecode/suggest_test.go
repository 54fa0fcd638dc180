package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/require"
)

// hostileURIs are resource URIs a server may send: each would run a
// command if pasted unquoted into a shell.
var hostileURIs = []string{
	"test://x;touch PWNED",
	"test://x$(touch PWNED)",
	"test://x`touch PWNED`",
	"test://x';touch PWNED;'",
	"test://x\";touch PWNED;\"",
	"test://a b|touch PWNED",
}

// suggested is the command of a resource link's line: "[resource link
// <uri>: read it with `<command>`]".
func suggested(t *testing.T, line string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)read it with `(freecode .*)`\\]\n?$").FindStringSubmatch(line)
	require.NotNil(t, m, "no command in %q", line)
	return m[1]
}

// shellWords runs command's arguments through sh in an empty directory and
// returns the words sh got, failing if anything else happened there.
func shellWords(t *testing.T, command string) []string {
	t.Helper()
	dir := t.TempDir()
	args := strings.TrimPrefix(command, "freecode ")
	out, err := exec.Command("sh", "-c", "cd "+dir+" && printf '%s\\0' "+args).Output()
	require.NoError(t, err, "sh -c %q", args)
	matches, _ := filepath.Glob(filepath.Join(dir, "*"))
	require.Empty(t, matches, "pasting %q created files", command)
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestResourceLinkSuggestionsArePasteable: the `freecode mcp read` that
// `mcp call` and `mcp prompt` suggest for a resource link reads back, in a
// shell, as exactly the server and the URI, and runs nothing.
func TestResourceLinkSuggestionsArePasteable(t *testing.T) {
	for _, uri := range hostileURIs {
		var out bytes.Buffer
		a := &app{stdout: &out}
		v := outcomeView{Tool: "mcp__ts__links", Content: []wire.Content{{Type: "resource_link", URI: uri}}}
		require.NoError(t, a.printOutcome(v, "", nil, false))
		require.Equal(t, []string{"mcp", "read", "ts", uri}, shellWords(t, suggested(t, out.String())), "mcp call: %s", out.String())

		raw, err := json.Marshal(map[string]string{"type": "resource_link", "uri": uri})
		require.NoError(t, err)
		line := blockText("ts", raw)
		require.Equal(t, []string{"mcp", "read", "ts", uri}, shellWords(t, suggested(t, line)), "prompt: %s", line)
	}
}
