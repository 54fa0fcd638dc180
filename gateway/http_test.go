package gateway

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// httpGateway is a gateway child serving streamable HTTP.
type httpGateway struct {
	cmd    *exec.Cmd
	url    string
	stderr *servetest.SyncBuffer
	done   chan struct{}
}

// startHTTPGateway starts the gateway of home on a loopback port and
// waits until it listens. It is stopped (SIGTERM) at the end of the test.
func startHTTPGateway(t *testing.T, home string, env ...string) *httpGateway {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", childHome+"="+home, childHTTP+"=127.0.0.1:0")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g := &httpGateway{cmd: cmd, stderr: &servetest.SyncBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	require.NoError(t, cmd.Start())
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			g.stderr.Write([]byte(line + "\n"))
			if a, ok := strings.CutPrefix(line, "listening on "); ok {
				addr <- a
			}
		}
	}()
	go func() {
		defer close(g.done)
		_ = cmd.Wait()
		pw.Close()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(waitFor):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-g.done
		}
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", g.stderr.String())
		}
	})
	select {
	case a := <-addr:
		g.url = "http://" + a + HTTPPath
	case <-g.done:
		t.Fatalf("the gateway ended:\n%s", g.stderr.String())
	case <-time.After(waitFor):
		t.Fatalf("the gateway does not listen:\n%s", g.stderr.String())
	}
	return g
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func post(t *testing.T, url, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPHostNeedsTheToken: over streamable HTTP, a request without the
// bearer token, or with another, gets 401; the SDK client with it lists,
// calls and hears list_changed; the token is kept 0600 in a 0700
// directory and appears in no log.
func TestHTTPHostNeedsTheToken(t *testing.T) {
	home := servetest.ShortHome(t)
	cfg := servetest.Config(testServer("t"))
	cfg["permission"] = map[string]any{"allow": []string{"mcp__t__crash"}}
	writeConfig(t, home, cfg)
	g := startHTTPGateway(t, home)

	resp := post(t, g.url, "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	resp = post(t, g.url, "Bearer "+strings.Repeat("0", 64))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	b, err := os.ReadFile(TokenFile(home))
	require.NoError(t, err)
	token := strings.TrimSpace(string(b))
	fi, err := os.Stat(TokenFile(home))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(TokenFile(home)))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	resp = post(t, g.url, "Bearer "+token)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	h := startHost(t, home, hostOptions{http: g.url, token: token})
	tools := h.tools()
	require.Contains(t, tools, "t__echo")
	assert.Equal(t, "over http", text(h.call("t__echo", map[string]any{"text": "over http"}, false)))

	// A restart with the same tools sends nothing: the first list_changed
	// after it is the edit's.
	assert.Equal(t, true, h.call("t__crash", nil, false)["isError"])
	require.Eventually(t, func() bool {
		return strings.Contains(g.stderr.String(), `msg="server ready" server=t generation=2`)
	}, waitFor, 10*time.Millisecond, "t restarted")
	cfg["mcp"] = servetest.Config(testServer("t"), testServer("u"))["mcp"]
	writeConfig(t, home, cfg)
	h.event("tools_changed")
	assert.Contains(t, h.tools(), "u__echo", "the first list_changed after the restart is not the edit's")

	assert.NotContains(t, g.stderr.String(), token)
	assert.NotContains(t, h.stderr.String(), token)
}

// TestHTTPShutdownEndsTheHostsStreams: SIGTERM ends a gateway whose host
// is connected over HTTP, its standing GET stream open, without waiting
// for that stream until HTTPShutdownWait: every request has ended when
// the shutdown starts waiting.
func TestHTTPShutdownEndsTheHostsStreams(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	h := startHost(t, home, hostOptions{http: g.url, token: token})
	require.Contains(t, h.tools(), "t__echo")
	// A list_changed comes on the standing GET stream: it is open.
	writeConfig(t, home, servetest.Config(testServer("t"), testServer("u")))
	h.event("tools_changed")

	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-g.done:
	case <-time.After(waitFor):
		t.Fatalf("the gateway did not end after SIGTERM:\n%s", g.stderr.String())
	}
	assert.Equal(t, 0, g.cmd.ProcessState.ExitCode(), "gateway:\n%s", g.stderr.String())
	log := g.stderr.String()
	assert.True(t, strings.Contains(log, `msg="http requests ended"`) && !strings.Contains(log, "still running at the shutdown deadline"),
		"the shutdown waited for the host's requests until its deadline:\n%s", log)
}

// TestHTTPRefusesForeignHostAndOrigin: a request naming a Host that is not
// loopback, or a foreign Origin, is refused 403 before its token is looked
// at (with or without it); a loopback Host and Origin go on to the token.
func TestHTTPRefusesForeignHostAndOrigin(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	for _, c := range []struct {
		name, host, origin, auth string
		want                     int
	}{
		{"foreign host, no token", "evil.example.com", "", "", http.StatusForbidden},
		{"foreign host, token", "evil.example.com:80", "", "Bearer " + token, http.StatusForbidden},
		{"foreign origin, token", "", "http://evil.example.com", "Bearer " + token, http.StatusForbidden},
		{"opaque origin", "", "null", "Bearer " + token, http.StatusForbidden},
		{"loopback origin, no token", "localhost:1234", "http://localhost:5173", "", http.StatusUnauthorized},
		{"loopback host and origin, token", "127.0.0.1", "http://[::1]:8080", "Bearer " + token, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(initializeBody))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, c.want, resp.StatusCode, "%s", body)
			assert.NotContains(t, string(body), token)
		})
	}
}
