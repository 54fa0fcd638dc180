package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/wire"
)

// requireInert fails if out holds anything a terminal would act on: a
// control character other than newline and tab, a bidi control, or an
// invalid UTF-8 byte (a raw 8-bit CSI).
func requireInert(t *testing.T, what, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "%s: invalid UTF-8 in %q", what, out)
	for i, r := range out {
		if r != '\n' && r != '\t' && termtext.IsControl(r) {
			t.Fatalf("%s: raw %U at byte %d:\n%q", what, r, i, out)
		}
	}
}

// evilShown is testserver.EvilText as the CLI shows it.
const evilShown = `evil \x1b]52;c;dG91Y2ggL3RtcC9wd25lZA==\aclipboard \x1b[2J\x1b[Hcleared \x1b[8mhidden\x1b[0m ` +
	`\rovertyped \u202eright-to-left\u202c \u2066isolate\u2069 \u009b31mc1 \x7fdel`

func TestRenderStatusNeutralises(t *testing.T) {
	out := statusOutput{ServeRunning: true, Status: wire.Status{
		ConfigError: "config.json:1:1: quoting \x1b[8mhidden",
		Servers: []wire.ServerStatus{{
			Name: "a", Source: "project:/src/\x1b[2Jrepo", Phase: "backoff",
			Desired:   wire.Desired{Enabled: true},
			LastError: "\x1b]52;c;QQ==\a\u009b2J\ttab \u202eflip",
		}, {
			Name: "b", Phase: "untrusted", Reason: "project /src/\u2066x\u2069 is not trusted\r",
		}},
	}}
	var b strings.Builder
	require.NoError(t, renderStatus(&b, out, false))
	requireInert(t, "table", b.String())
	lines := strings.Split(b.String(), "\n")
	assert.Regexp(t, `^a +project:/src/\\x1b\[2Jrepo +yes +backoff +- +- +- +- +\\x1b\]52;c;QQ==\\a\\u009b2J tab \\u202eflip$`, lines[1])
	assert.Contains(t, b.String(), "\nuntrusted: project /src/\\u2066x\\u2069 is not trusted\\r\n")
	assert.Contains(t, b.String(), "config.json:1:1: quoting \\x1b[8mhidden\n")

	b.Reset()
	require.NoError(t, renderStatus(&b, out, true))
	requireInert(t, "json", strings.ReplaceAll(b.String(), "\n", ""))
	var back statusOutput
	require.NoError(t, json.Unmarshal([]byte(b.String()), &back))
	assert.Equal(t, out.Servers[0].LastError, back.Servers[0].LastError, "JSON keeps the exact text")
	assert.Equal(t, out.Servers[1].Reason, back.Servers[1].Reason)
}

func TestFirstLineCutsWholeCharacters(t *testing.T) {
	s := strings.Repeat("é", 80)
	got := firstLine(s, 70)
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, 70, utf8.RuneCountInString(got))
}

// A hostile server's stderr and tool text reach the user through serve:
// logs, logs --follow, status and serve's own log show them inert.
func TestServeHostileText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	conf := cfg(local("evil", ts, "--evil-text"), local("dies", ts, "--evil-text", "--exit-at-start", "3"))
	conf["permission"] = map[string]any{"allow": []string{"mcp__evil"}}
	config{t, filepath.Join(home, "config.json")}.write(conf, true)
	p := startServe(t, home, "--log-format", "json")
	p.waitPhase("evil", "ready")
	p.waitStatus("dies failed with its stderr", func(st wire.Status) bool {
		s, _ := server(st, "dies")
		return strings.Contains(s.LastError, "evil stderr")
	})
	fc := func(args ...string) *exec.Cmd {
		cmd := exec.Command("freecode", args...)
		cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
		return cmd
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := fc(args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		requireInert(t, strings.Join(args, " "), string(out))
		return string(out)
	}

	// The API keeps the server's text; the raw 8-bit CSI byte became U+FFFD
	// in JSON.
	logs, err := p.client.Logs(t.Context(), "evil")
	require.NoError(t, err)
	require.Equal(t, []string{strings.ToValidUTF8(testserver.EvilStderr, "\ufffd")}, logs.Lines)

	assert.Equal(t, "evil stderr: "+evilShown+" \ufffd2J\n", run("mcp", "logs", "evil"))
	assert.Contains(t, run("mcp", "logs", "dies"), "evil stderr: "+evilShown)
	run("mcp", "status")
	st := run("mcp", "status", "--json")
	assert.Contains(t, st, `evil stderr: evil \u001b]52;c;`)
	assert.Contains(t, st, `\u202eright-to-left\u202c \u2066isolate\u2069 \u009b31mc1 \u007fdel`)

	follow := fc("mcp", "logs", "evil", "--follow")
	fout := &syncBuffer{}
	follow.Stdout, follow.Stderr = fout, fout
	require.NoError(t, follow.Start())
	require.Eventually(t, func() bool { return strings.Count(fout.String(), "evil stderr") == 1 },
		waitFor, 10*time.Millisecond, "follow: %q", fout)
	// A call writes the line to stderr again; it arrives followed.
	res, err := p.client.Call(t.Context(), "mcp__evil__evil", nil)
	require.NoError(t, err)
	require.Equal(t, testserver.EvilText, res.Result.Text(), "the API answers with the server's text")
	require.Eventually(t, func() bool { return strings.Count(fout.String(), "evil stderr") == 2 },
		waitFor, 10*time.Millisecond, "follow: %q", fout)
	require.NoError(t, follow.Process.Signal(os.Interrupt))
	require.NoError(t, follow.Wait())
	requireInert(t, "logs --follow", fout.String())
	// The event stream carries raw lines (a CR as a space, the 8-bit CSI
	// byte as it came), so they are neutralised here too.
	followed := strings.NewReplacer(`hidden\x1b[0m \rovertyped`, `hidden\x1b[0m  overtyped`).Replace(evilShown)
	assert.Equal(t, strings.Repeat("evil stderr: "+followed+` \x9b2J`+"\n", 2), fout.String())

	// serve -v logs servers' stderr; its JSON log escapes what the JSON
	// encoder leaves raw.
	require.Eventually(t, func() bool { return strings.Count(p.stderr.String(), "evil stderr") >= 2 },
		waitFor, 10*time.Millisecond)
	requireInert(t, "serve log", p.stderr.String())
	for line := range strings.Lines(p.stderr.String()) {
		if strings.HasPrefix(line, "{") {
			require.True(t, json.Valid([]byte(line)), "a JSON log line: %s", line)
		}
	}
	assert.Contains(t, p.stderr.String(), `\u202eright-to-left\u202c`)
}
