package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/internal/testutil"
)

// The TypeScript SDK's example server with --oauth --oauth-strict: an MCP
// server on MCP_PORT whose demo authorization server (MCP_AUTH_PORT)
// registers clients dynamically, approves every authorization at once and
// accepts only tokens issued for this server's resource. No one here
// wrote it.
const tsOAuthScript = "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"

// startTSOAuthServer runs it on free ports and returns its MCP URL, its
// issuer and its output; it is killed at cleanup. Without node_modules it skips, except
// in CI, where it fails.
func startTSOAuthServer(t *testing.T) (mcpURL, issuer string, output *syncBuffer) {
	t.Helper()
	modules := filepath.Join(testutil.RepoRoot(), "testdata", "npm", "node_modules")
	node, script := filepath.Join(modules, ".bin", "node"), filepath.Join(modules, filepath.FromSlash(tsOAuthScript))
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("%s missing; install the test servers with: npm ci --prefix testdata/npm", f)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	port, authPort := freePort(t), freePort(t)
	cmd := exec.Command(node, script, "--oauth", "--oauth-strict")
	cmd.Env = append(os.Environ(), "MCP_PORT="+strconv.Itoa(port), "MCP_AUTH_PORT="+strconv.Itoa(authPort))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Its own output (it logs requests, tokens included) is not
	// FreeCode's; shown only if the test fails.
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		killTestServer(cmd)
		if t.Failed() {
			t.Logf("example server output:\n%s", out.String())
		}
	})
	for _, p := range []int{port, authPort} {
		require.Eventually(t, func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err == nil {
				c.Close()
			}
			return err == nil
		}, waitFor, 20*time.Millisecond, "the example server does not listen on %d:\n%s", p, out.String())
	}
	return fmt.Sprintf("http://localhost:%d/mcp", port), fmt.Sprintf("http://localhost:%d/", authPort), out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// authURLLine is the authorization URL as login prints it.
var authURLLine = regexp.MustCompile(`^\s+(https?://\S+/authorize\?\S+)$`)

// loginFollowing runs `freecode mcp login <name> --no-browser` for home and
// plays the browser: it reads the authorization URL from the command's
// output and follows it to the loopback callback. It returns everything
// the command wrote.
func loginFollowing(t *testing.T, home, name string) string {
	t.Helper()
	cmd := exec.Command("freecode", "mcp", "login", name, "--no-browser")
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	cmd.Dir = home
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	followed := false
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if m := authURLLine.FindStringSubmatch(line); m != nil && !followed {
			followed = true
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			require.NoError(t, testauth.Follow(ctx, m[1]))
			cancel()
		}
	}
	err = cmd.Wait()
	out.WriteString(stderr.String())
	require.NoError(t, err, "login:\n%s", out.String())
	require.True(t, followed, "login printed no authorization URL:\n%s", out.String())
	return out.String()
}

// storedTokens returns the tokens in home's token store.
func storedTokens(t *testing.T, home string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, "auth", "tokens", "*.json"))
	require.NoError(t, err)
	var toks []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var rec struct {
			Access  string `json:"access_token"`
			Refresh string `json:"refresh_token"`
		}
		require.NoError(t, json.Unmarshal(data, &rec))
		for _, tok := range []string{rec.Access, rec.Refresh} {
			if tok != "" {
				toks = append(toks, tok)
			}
		}
	}
	return toks
}

// TestOAuthRealServer signs in to a real OAuth-protected MCP server that
// no one here wrote (the TS SDK's example, strict about the resource), in
// a home that exists with loose modes: `mcp start` fails naming `freecode
// mcp login`; `login --no-browser` completes when the test follows the
// printed URL; `mcp start` then lists the tools; serve (text and JSON
// logs at -vv) goes from needs-login to ready without a restart when a
// login lands, answers a call, and returns to needs-login on `logout`.
// No token appears in any command's output, any log, the API, or any file
// under the home but the 0600 store.
func TestOAuthRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	mcpURL, issuer, serverOut := startTSOAuthServer(t)
	home := shortHome(t)
	require.NoError(t, os.Chmod(home, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "auth", "tokens"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(home, "auth"), 0o755))
	conf := cfg(map[string]any{"name": "demo", "type": "remote", "url": mcpURL})
	conf["permission"] = map[string]any{"allow": []string{"mcp__demo"}}
	config{t, filepath.Join(home, "config.json")}.write(conf, false)

	var outputs outputsLog
	var tokens []string
	run := func(args ...string) string {
		t.Helper()
		out := runFreecode(t, home, args...)
		outputs.add(strings.Join(args, " "), out)
		return out
	}
	login := func() {
		t.Helper()
		out := loginFollowing(t, home, "demo")
		outputs.add("mcp login demo --no-browser", out)
		assert.Contains(t, out, "To sign in to demo, open this URL in a browser:")
		assert.Contains(t, out, "Signed in to demo ("+issuer+"), scopes mcp:tools")
		toks := storedTokens(t, home)
		require.NotEmpty(t, toks, "no token stored")
		tokens = append(tokens, toks...)
	}

	out := run("mcp", "start", "demo")
	assert.Contains(t, out, "✗ Server \"demo\" failed to start")
	assert.Contains(t, out, "Error: server \"demo\" needs sign-in (no stored credentials): run `freecode mcp login demo`")
	assert.NotContains(t, out, "401")

	login()
	out = run("mcp", "start", "demo")
	assert.Contains(t, out, "✓ Server \"demo\" started with")
	assert.Contains(t, out, "mcp__demo__greet")
	out = run("mcp", "get", "demo")
	assert.Regexp(t, `sign-in: +signed in \(`+regexp.QuoteMeta(issuer)+`\), scopes mcp:tools; until `, out)
	run("mcp", "get", "demo", "--json")
	out = run("mcp", "status", "--probe")
	assert.Regexp(t, `(?m)^demo +user +yes +ready `, out)
	run("mcp", "status", "--probe", "--json")
	out = run("mcp", "tools", "demo")
	assert.Contains(t, out, "mcp__demo__greet")

	out = run("mcp", "logout", "demo")
	assert.Contains(t, out, "Signed out of demo: the tokens are deleted (the authorization server offers no revocation).")
	out = run("mcp", "logout", "demo")
	assert.Contains(t, out, "Not signed in to demo; nothing to delete.")
	for _, format := range []string{"text", "json"} {
		p := startServe(t, home, "-v", "--log-format", format)
		events := rawEvents(t, home)
		st := p.waitPhase("demo", "needs-login")
		assert.Equal(t, "run `freecode mcp login demo`", st.Reason)
		out = run("mcp", "status")
		assert.Regexp(t, `(?m)^demo +user +yes +needs-login `, out)
		assert.Contains(t, out, "needs-login: run `freecode mcp login demo`")

		login()
		ready := p.waitPhase("demo", "ready")
		require.NotNil(t, ready.SignIn)
		assert.Equal(t, "signed-in", string(ready.SignIn.State))
		assert.Equal(t, issuer, ready.SignIn.Issuer)
		res, err := p.client.Call(t.Context(), "mcp__demo__greet", json.RawMessage(`{"name":"FreeCode"}`))
		require.NoError(t, err)
		require.NotEmpty(t, res.Result.Content)
		assert.Equal(t, "Hello, FreeCode!", res.Result.Content[0].Text)
		out = run("mcp", "status")
		assert.Regexp(t, `(?m)^demo +user +yes +ready `, out)
		assert.Regexp(t, `(?m)^  demo +signed in \(`+regexp.QuoteMeta(issuer)+`\), scopes mcp:tools; until `, out)
		out = run("mcp", "status", "--json")
		assert.Contains(t, out, `"signIn": {`+"\n"+`        "state": "signed-in",`)
		raw := rawGet(t, home, "/v1/status")
		assert.Contains(t, raw, `"signIn":{"state":"signed-in","grant":"authorization_code","issuer":"`+issuer+`","scopes":["mcp:tools"]`)
		outputs.add("GET /v1/status", raw)

		out = run("mcp", "logout", "demo")
		assert.Contains(t, out, "Signed out of demo")
		st = p.waitPhase("demo", "needs-login")
		assert.Contains(t, st.LastError, "run `freecode mcp login demo`")
		// Its tools stay registered and answer with the reason.
		res, err = p.client.Call(t.Context(), "mcp__demo__greet", json.RawMessage(`{"name":"again"}`))
		var ae *api.Error
		require.ErrorAs(t, err, &ae)
		assert.Contains(t, res.Error, "run `freecode mcp login demo`")
		outputs.add("GET /v1/status after logout", rawGet(t, home, "/v1/status"))

		serveLog := func() string { return p.stderr.String() }
		p.signal(syscall.SIGTERM)
		<-p.exited
		require.NoError(t, p.err, "serve:\n%s", serveLog())
		assert.Equal(t, 1, strings.Count(serveLog(), `"msg":"serving"`)+strings.Count(serveLog(), "msg=serving"), "one serve, never restarted")
		outputs.add("serve log ("+format+")", serveLog())
		outputs.add("GET /v1/events ("+format+")", events.String())
	}

	// The audit log has every sign-in and sign-out and the calls, and no
	// token (the outputs and the home are scanned for them below).
	out = run("mcp", "audit", "--json")
	assert.Equal(t, 3, strings.Count(out, `"kind":"signin"`), "three sign-ins:\n%s", out)
	assert.Equal(t, 3, strings.Count(out, `"kind":"signout"`), "three sign-outs:\n%s", out)
	assert.Contains(t, out, `"server":"demo","status":"ok","issuer":"`+issuer+`"`)
	assert.Regexp(t, `"host":"api \(unnamed client\)".*"tool":"mcp__demo__greet","server":"demo","args":"hmac-sha256:[0-9a-f]{32}","decision":"allow","rule":"mcp__demo","status":"ok"`, out)
	assert.NotContains(t, out, "FreeCode\"")
	out = run("mcp", "audit", "--verify")
	assert.Contains(t, out, "The audit log is whole")

	require.NotEmpty(t, tokens)
	// The tokens looked for are the ones that went over the wire: the
	// example server logs those it accepted.
	used := 0
	for _, tok := range tokens {
		if strings.Contains(serverOut.String(), tok) {
			used++
		}
	}
	assert.NotZero(t, used, "no token looked for was ever sent")
	for _, o := range outputs.all() {
		for _, tok := range tokens {
			assert.False(t, strings.Contains(o.text, tok), "%s shows a token", o.what)
		}
	}
	requireTokensOnlyInStore(t, home, tokens)
	if t.Failed() {
		t.Logf("outputs:\n%s", outputs.String())
	}
}

// requireTokensOnlyInStore reads every file under home: the tokens are in
// no file but the token store's, whose files are 0600 and directories
// 0700.
func requireTokensOnlyInStore(t *testing.T, home string, tokens []string) {
	t.Helper()
	store := filepath.Join(home, "auth")
	files := 0
	err := filepath.WalkDir(home, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		require.NoError(t, err)
		inStore := p == store || strings.HasPrefix(p, store+string(filepath.Separator))
		switch {
		case e.IsDir():
			if inStore {
				assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "%s", p)
			}
			return nil
		case !info.Mode().IsRegular():
			return nil // the API socket
		}
		files++
		if inStore {
			assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "%s", p)
			return nil
		}
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		data, err := io.ReadAll(f)
		require.NoError(t, err)
		for _, tok := range tokens {
			assert.False(t, strings.Contains(string(data), tok), "%s holds a token", p)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, files)
}
