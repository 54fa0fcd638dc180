package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/wire"
)

// urlSecret is a key a hosted MCP server takes in its URL's path; the
// config writes it as ${FREECODE_TEST_URL_TOKEN}.
const (
	urlSecretVar = "FREECODE_TEST_URL_TOKEN"
	urlSecret    = "tok-URL-S3CRET-a41f"
)

// TestSecretInURLShownNowhere configures remote servers whose URL has a
// ${VAR} in its path, and drives every surface that can show a server's
// URL or errors: `mcp start`, `mcp tools`, `mcp call`, `mcp status
// --probe` (table and --json) without serve; with serve running at -vv in
// text and JSON log format: its log, GET /v1/status, GET /v1/events, `mcp
// status` (table and --json) and `mcp logs`. The servers fail to connect
// (401 with the path echoed in the body, 404, connection refused, a 401
// that asks for a sign-in) or lose their session mid-run. The expanded key must appear nowhere; the URL
// shows as written.
func TestSecretInURLShownNowhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Setenv(urlSecretVar, urlSecret)
	ts := buildTestServer(t)
	hosted, hostedCmd := startRemoteTestServer(t, ts, "--base-path", "/v1/"+urlSecret)
	// A hosted endpoint that refuses the key (401) or knows no such path
	// (404), echoing the path in the body.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/mcp") {
			http.Error(w, "no such key: "+r.URL.Path, http.StatusUnauthorized)
			return
		}
		http.Error(w, "no route for "+r.URL.Path, http.StatusNotFound)
	}))
	t.Cleanup(refusing.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downAddr := l.Addr().String()
	require.NoError(t, l.Close())

	written := func(rawURL string) string {
		return strings.Replace(rawURL, urlSecret, "${"+urlSecretVar+"}", 1)
	}
	remote := func(name, rawURL string) map[string]any {
		return map[string]any{"name": name, "type": "remote", "url": written(rawURL)}
	}
	missingURL := refusing.URL + "/v1/" + urlSecret + "/nothing-here"
	deniedURL := refusing.URL + "/v1/" + urlSecret + "/mcp"
	downURL := "http://" + downAddr + "/v1/" + urlSecret + "/mcp"
	// denied sends a static token, so its 401 is an HTTP error; locked
	// sends none, so its 401 asks for a sign-in.
	denied := remote("denied", deniedURL)
	denied["headers"] = map[string]any{"Authorization": "Bearer not-this-one"}
	servers := []map[string]any{
		remote("hosted", hosted),
		remote("missing", missingURL),
		denied,
		remote("down", downURL),
		remote("locked", deniedURL),
	}
	failing := []string{"missing", "denied", "down"}

	var outputs outputsLog
	// Serve, twice: text and JSON logs, both at -vv.
	var procs []*serveProc
	var events []*syncBuffer
	for _, format := range []string{"text", "json"} {
		home := shortHome(t)
		config{t, filepath.Join(home, "config.json")}.write(cfg(servers...), false)
		p := startServe(t, home, "-v", "--log-format", format)
		events = append(events, rawEvents(t, home))
		p.waitPhase("hosted", "ready")
		p.waitPhase("locked", "needs-login")
		for _, name := range failing {
			p.waitStatus(name+" failed", func(st wire.Status) bool {
				s, ok := server(st, name)
				return ok && s.Phase == "backoff" && s.LastError != ""
			})
		}
		procs = append(procs, p)
	}
	// The session is lost mid-run.
	killTestServer(hostedCmd)
	for i, p := range procs {
		st := p.waitStatus("hosted lost", func(st wire.Status) bool {
			s, ok := server(st, "hosted")
			return ok && s.Phase == "backoff" && s.LastError != ""
		})
		s, _ := server(st, "hosted")
		t.Logf("hosted: %s", s.LastError)
		for _, name := range failing {
			s, _ := server(st, name)
			t.Logf("%s: %s", name, s.LastError)
		}
		outputs.add("GET /v1/status", rawGet(t, p.home, "/v1/status"))
		for _, args := range [][]string{{"mcp", "status", "--json"}, {"mcp", "status"}, {"mcp", "logs", "hosted"}} {
			outputs.add(strings.Join(args, " "), runFreecode(t, p.home, args...))
		}
		require.Eventually(t, func() bool {
			ev := events[i].String()
			return strings.Contains(ev, `"server":"hosted","phase":"backoff","err":`) &&
				strings.Contains(ev, `"server":"down","phase":"backoff","err":`)
		}, waitFor, 20*time.Millisecond, "phase_changed events with errors")
	}
	for i, p := range procs {
		p.signal(syscall.SIGTERM)
		<-p.exited
		outputs.add("GET /v1/events", events[i].String())
		outputs.add("serve log", p.stderr.String())
	}

	// Without serve: one-shot commands connect themselves.
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(servers...), false)
	for _, name := range append(failing, "hosted", "locked") {
		outputs.add("mcp start "+name, runFreecode(t, home, "mcp", "start", name))
	}
	outputs.add("mcp tools denied", runFreecode(t, home, "mcp", "tools", "denied"))
	outputs.add("mcp call", runFreecode(t, home, "mcp", "call", "mcp__missing__echo", `{"text":"x"}`, "--yes"))
	outputs.add("mcp status --probe --json", runFreecode(t, home, "mcp", "status", "--probe", "--json"))
	outputs.add("mcp status --probe", runFreecode(t, home, "mcp", "status", "--probe"))

	for _, o := range outputs.all() {
		assert.False(t, strings.Contains(o.text, urlSecret), "%s shows the expanded URL", o.what)
	}
	// What they show instead: the URL as written.
	all := outputs.String()
	for _, o := range outputs.all() {
		if strings.HasPrefix(o.what, "mcp start ") || o.what == "mcp logs hosted" {
			continue
		}
		for _, want := range []string{
			`server "denied": initialize: HTTP 401 Unauthorized from ` + written(deniedURL),
			`server "missing": initialize: HTTP 404 Not Found from ` + written(missingURL),
			`server "down": initialize: cannot reach ` + written(downURL),
			`server "hosted": `,
			`server "locked" needs sign-in (no stored credentials): run ` + "`freecode mcp login locked`",
		} {
			if strings.HasPrefix(o.what, "mcp status") && !strings.Contains(o.what, "--json") {
				want = want[:min(len(want), 60)] // LAST-ERROR is cut short
			}
			if o.what == "mcp tools denied" && !strings.Contains(want, "denied") ||
				o.what == "mcp call" && !strings.Contains(want, "missing") {
				continue
			}
			// JSON outputs quote the message.
			text := strings.ReplaceAll(o.text, `\"`, `"`)
			assert.True(t, strings.Contains(text, want), "%s does not show %q", o.what, want)
		}
	}
	if t.Failed() {
		t.Logf("outputs:\n%s", all)
	}
}

// startRemoteTestServer runs the test server on HTTP with flags and returns
// its URL and command; it is killed at cleanup.
func startRemoteTestServer(t *testing.T, bin string, flags ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { killTestServer(cmd) })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "unexpected first line %q", line)
	return u, cmd
}

// killTestServer kills cmd's process group and reaps cmd; again is a no-op.
func killTestServer(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// runFreecode runs the CLI for home and returns its stdout and stderr; a
// failing command is expected here.
func runFreecode(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command("freecode", args...)
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	cmd.Dir = home
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// apiClient speaks raw HTTP to home's API socket.
func apiClient(home string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", api.SocketPath(home))
		},
	}}
}

// rawGet returns the body of GET path on home's API, byte for byte.
func rawGet(t *testing.T, home, path string) string {
	t.Helper()
	hc := apiClient(home)
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://freecode" + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

// rawEvents copies GET /v1/events of home's API, byte for byte, into the
// returned buffer until serve ends the stream or the test ends.
func rawEvents(t *testing.T, home string) *syncBuffer {
	t.Helper()
	hc := apiClient(home)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://freecode/v1/events", nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	buf := &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(buf, resp.Body)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		resp.Body.Close()
		hc.CloseIdleConnections()
	})
	return buf
}

// outputsLog collects what each surface showed.
type outputsLog struct {
	mu   sync.Mutex // guards list
	list []output
}

type output struct{ what, text string }

func (l *outputsLog) add(what, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, output{what, text})
}

func (l *outputsLog) all() []output {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]output(nil), l.list...)
}

func (l *outputsLog) String() string {
	var b strings.Builder
	for _, o := range l.all() {
		b.WriteString("=== " + o.what + "\n" + o.text + "\n")
	}
	return b.String()
}
