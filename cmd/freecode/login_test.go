package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
)

// loginProc is a `freecode mcp login` running for home, its output read
// line by line.
type loginProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // closed at EOF
	out   *syncBuffer // everything it wrote
}

func startLogin(t *testing.T, home string, args ...string) *loginProc {
	t.Helper()
	p := &loginProc{lines: make(chan string, 100), out: &syncBuffer{}}
	p.cmd = exec.Command("freecode", append([]string{"mcp", "login"}, args...)...)
	p.cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	p.cmd.Dir = home
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = p.out.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		for range p.lines {
		}
		_ = p.cmd.Wait()
	})
	return p
}

// authURL waits for the authorization URL the command prints.
func (p *loginProc) authURL(t *testing.T) string {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "login ended without an authorization URL:\n%s", p.out.String())
			if m := authURLLine.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("no authorization URL within %s:\n%s", waitFor, p.out.String())
		}
	}
}

// wait waits for the command to end and returns its exit code.
func (p *loginProc) wait(t *testing.T) int {
	t.Helper()
	for range p.lines {
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// redirectTarget approves authURL as a browser on another machine would:
// it follows the authorization server's redirects but stops at the one
// to the loopback callback, which that browser could not reach, and
// returns it.
func redirectTarget(t *testing.T, authURL string) string {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Hostname() == "127.0.0.1" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	return resp.Header.Get("Location")
}

func loginHome(t *testing.T, as *testauth.Server) string {
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(map[string]any{"name": "remote", "type": "remote", "url": as.URL}), false)
	return home
}

// TestLoginPastedRedirect: a browser that cannot reach this machine's
// loopback listener ends on an unreachable page; pasting that address
// completes the sign-in.
func TestLoginPastedRedirect(t *testing.T) {
	as := testauth.New(t, testauth.Options{})
	home := loginHome(t, as)
	p := startLogin(t, home, "remote", "--no-browser")
	target := redirectTarget(t, p.authURL(t))
	u, err := url.Parse(target)
	require.NoError(t, err)
	require.Equal(t, "/callback", u.Path)

	_, err = io.WriteString(p.stdin, "not the address\n"+target+"\n")
	require.NoError(t, err)
	require.Equal(t, 0, p.wait(t), "%s", p.out.String())
	out := p.out.String()
	assert.Contains(t, out, "paste the address it ended on here")
	assert.Contains(t, out, "That is not the address the browser ended on")
	assert.Contains(t, out, "Signed in to remote ("+as.Issuer()+"), no scopes; FreeCode renews the token by itself.")
	for _, s := range as.Secrets() {
		assert.NotContains(t, out, s)
	}
	assert.Equal(t, 1, as.Counts().CodeExchanges)
	// The callback listener is gone.
	_, err = net.DialTimeout("tcp", u.Host, time.Second)
	require.Error(t, err)

	out = runFreecode(t, home, "mcp", "get", "remote")
	assert.Regexp(t, `sign-in: +signed in \(`+as.Issuer()+`\); renewed by FreeCode \(token until `, out)
	out = runFreecode(t, home, "mcp", "logout", "remote")
	assert.Contains(t, out, "Signed out of remote: the tokens are deleted (the authorization server offers no revocation).")
}

// TestLoginInterrupted: Ctrl-C ends the wait, closes the listener and
// stores nothing; so does the --timeout.
func TestLoginInterrupted(t *testing.T) {
	as := testauth.New(t, testauth.Options{})
	home := loginHome(t, as)

	p := startLogin(t, home, "remote", "--no-browser")
	authURL := p.authURL(t)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	callback, err := url.Parse(u.Query().Get("redirect_uri"))
	require.NoError(t, err)
	c, err := net.DialTimeout("tcp", callback.Host, time.Second)
	require.NoError(t, err, "the callback listener is up while login waits")
	c.Close()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 1, p.wait(t))
	assert.Contains(t, p.out.String(), `Error: sign-in to "remote" interrupted; nothing was stored`)
	_, err = net.DialTimeout("tcp", callback.Host, time.Second)
	require.Error(t, err, "the callback listener is closed")
	// The browser arriving late finds nothing.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.Error(t, testauth.Follow(ctx, authURL))
	files, err := filepath.Glob(filepath.Join(home, "auth", "tokens", "*.json"))
	require.NoError(t, err)
	assert.Empty(t, files)

	p = startLogin(t, home, "remote", "--no-browser", "--timeout", "300ms")
	p.authURL(t)
	assert.Equal(t, 1, p.wait(t))
	assert.Contains(t, p.out.String(), "Error: sign-in to \"remote\": no answer from the browser within 300ms; nothing was stored (run `freecode mcp login remote` again, or raise --timeout)")
	assert.Zero(t, as.Counts().CodeExchanges)
	assert.False(t, strings.Contains(runFreecode(t, home, "mcp", "get", "remote"), "signed in ("))
}

// TestLoginOpensBrowser: login opens $BROWSER (and still prints the
// authorization URL); --no-browser never does. The browser's command
// line, which every user of the machine can read in /proc/<pid>/cmdline,
// carries neither the state nor the PKCE challenge: it is a one-shot
// address of login's own that redirects to the printed URL.
func TestLoginOpensBrowser(t *testing.T) {
	as := testauth.New(t, testauth.Options{})
	home := loginHome(t, as)
	opened := filepath.Join(home, "opened")
	browser := filepath.Join(home, "browser.sh")
	// The browser records its whole command line, one argument a line.
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> "+opened+"\n"), 0o700))
	t.Setenv("BROWSER", browser)

	p := startLogin(t, home, "remote")
	printed := p.authURL(t)
	pu, err := url.Parse(printed)
	require.NoError(t, err)
	state, challenge := pu.Query().Get("state"), pu.Query().Get("code_challenge")
	require.NotEmpty(t, state)
	require.NotEmpty(t, challenge)
	var argv []string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(opened)
		argv = strings.Fields(string(b))
		return len(argv) == 2
	}, waitFor, 10*time.Millisecond, "the browser was not opened")
	cmdline := strings.Join(argv, " ")
	assert.NotContains(t, cmdline, state)
	assert.NotContains(t, cmdline, challenge)
	handed, err := url.Parse(argv[1])
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", handed.Hostname())
	assert.Empty(t, handed.RawQuery)

	// Following it leads to the printed URL, state and challenge included,
	// and signs in.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	noFollow := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(argv[1])
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, printed, resp.Header.Get("Location"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, testauth.Follow(ctx, resp.Header.Get("Location")))
	require.Equal(t, 0, p.wait(t), "%s", p.out.String())
	assert.NotContains(t, p.out.String(), "Could not open a browser")
	assert.Equal(t, 1, as.Counts().CodeExchanges)

	require.NoError(t, os.Remove(opened))
	p = startLogin(t, home, "remote", "--no-browser")
	require.NoError(t, testauth.Follow(ctx, p.authURL(t)))
	require.Equal(t, 0, p.wait(t), "%s", p.out.String())
	_, err = os.Stat(opened)
	require.ErrorIs(t, err, os.ErrNotExist, "--no-browser opened a browser")
}

// TestLoginMetadataTimeout: a metadata request that gets no answer within
// --timeout is reported as that, with its URL, not as a wait for the
// browser.
func TestLoginMetadataTimeout(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		// The MCP endpoint asks for authorization, with metadata that
		// never comes.
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(map[string]any{"name": "remote", "type": "remote", "url": hang.URL + "/mcp"}), false)

	p := startLogin(t, home, "remote", "--no-browser", "--timeout", "500ms")
	assert.Equal(t, 1, p.wait(t))
	out := p.out.String()
	assert.Regexp(t, `no answer from `+regexp.QuoteMeta(hang.URL)+`/\.well-known/oauth-protected-resource within \d+ms`, out)
	assert.NotContains(t, out, "browser")
}

func TestWithURL(t *testing.T) {
	assert.Equal(t, []string{"firefox", "--new-window", "u"}, withURL([]string{"firefox", "--new-window"}, "u"))
	assert.Equal(t, []string{"open", "-a", "x=u"}, withURL([]string{"open", "-a", "x=%s"}, "u"))
}
