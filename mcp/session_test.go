package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// signalWait bounds waits for signals that should arrive within
// milliseconds; it only matters when a test fails.
const signalWait = 10 * time.Second

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(signalWait):
		t.Fatalf("%s: not signalled within %s", what, signalWait)
	}
}

func toolIDs(tools []Tool) []string {
	ids := make([]string, 0, len(tools))
	for _, tl := range tools {
		ids = append(ids, tl.ID)
	}
	return ids
}

func findTool(tools []Tool, id string) (Tool, bool) {
	i := slices.IndexFunc(tools, func(tl Tool) bool { return tl.ID == id })
	if i < 0 {
		return Tool{}, false
	}
	return tools[i], true
}

func textOf(t *testing.T, res *wire.CallResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	var tc struct{ Type, Text string }
	require.NoError(t, json.Unmarshal(blockOf(t, res.Content[0]), &tc))
	require.Equal(t, "text", tc.Type, "first content is %s", blockOf(t, res.Content[0]))
	return tc.Text
}

// blockOf is c as the server sent it (its JSON block).
func blockOf(t *testing.T, c wire.Content) json.RawMessage {
	t.Helper()
	b, err := c.Block()
	require.NoError(t, err)
	return b
}

// requireDeclared checks the session's converted tools against what the
// server declared in its raw tools/list: one tool per declared tool, id
// mcp__<server>__<name>, read-only exactly when readOnlyHint is true.
func requireDeclared(t *testing.T, s *Session) {
	t.Helper()
	require.Empty(t, s.ConvertErrors())
	raws := s.RawTools()
	tools := s.Tools()
	require.Len(t, tools, len(raws))
	for _, raw := range raws {
		var decl struct {
			Name        string `json:"name"`
			Annotations struct {
				ReadOnlyHint *bool `json:"readOnlyHint"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(raw, &decl))
		id := "mcp__" + s.Name() + "__" + decl.Name
		tl, ok := findTool(tools, id)
		if !assert.True(t, ok, "declared tool %q missing as %s", decl.Name, id) {
			continue
		}
		assert.Equal(t, decl.Name, tl.Name)
		ro := decl.Annotations.ReadOnlyHint != nil && *decl.Annotations.ReadOnlyHint
		assert.Equal(t, ro, tl.ReadOnly, "read-only flag of %s", id)
	}
}

// fixedTools are the test server's tools besides the generated ones.
var fixedTools = []string{"add_tool", "crash", "echo", "fail", "note", "remove_tool", "sleep"}

func TestLocalToolsAndCalls(t *testing.T) {
	s := connect(t, localServer("ts", "--tools", "3", "--readonly-every", "2"))
	require.NotZero(t, s.PID())
	require.Equal(t, "ts", s.Name())

	var want []string
	for _, n := range append(slices.Clone(fixedTools), "tool_000", "tool_001", "tool_002") {
		want = append(want, "mcp__ts__"+n)
	}
	slices.Sort(want)
	require.Equal(t, want, toolIDs(s.Tools()))
	require.Empty(t, s.ConvertErrors())
	require.Len(t, s.RawTools(), len(want))

	requireDeclared(t, s)
	readOnly := map[string]bool{}
	for _, tl := range s.Tools() {
		readOnly[tl.ID] = tl.ReadOnly
	}
	require.True(t, readOnly["mcp__ts__echo"])
	require.True(t, readOnly["mcp__ts__tool_001"], "--readonly-every 2")
	require.False(t, readOnly["mcp__ts__tool_000"])
	require.False(t, readOnly["mcp__ts__note"])

	ctx := context.Background()
	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi there"}`), nil)
	require.NoError(t, err)
	require.Equal(t, "hi there", textOf(t, res))

	res, err = s.CallTool(ctx, "fail", json.RawMessage(`{"message":"nope"}`), nil)
	require.NoError(t, err, "a tool reporting failure is a result, not an error")
	require.True(t, res.IsError)

	_, err = s.CallTool(ctx, "no_such_tool", nil, nil)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrTransport, "the server answered")

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.NoError(t, s.Err(), "a clean Close leaves Err nil")
	_, err = s.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), nil)
	require.ErrorIs(t, err, ErrClosed)
}

func TestRawToolsKeepWholeSchemas(t *testing.T) {
	s := connect(t, localServer("ts", "--tools", "2", "--schemas", "ref"))
	var found bool
	for _, raw := range s.RawTools() {
		var tl struct {
			Name        string                     `json:"name"`
			InputSchema map[string]json.RawMessage `json:"inputSchema"`
		}
		require.NoError(t, json.Unmarshal(raw, &tl))
		if strings.HasPrefix(tl.Name, "tool_") {
			found = true
			// mcp-go's own types drop these; the raw capture must not.
			require.Contains(t, tl.InputSchema, "oneOf", tl.Name)
			require.Contains(t, tl.InputSchema, "description", tl.Name)
		}
	}
	require.True(t, found)
}

func TestPaging(t *testing.T) {
	s := connect(t, localServer("ts", "--tools", "7", "--page-size", "2"))
	require.Len(t, s.Tools(), 7+len(fixedTools))
	require.Len(t, s.RawTools(), 7+len(fixedTools))
}

func TestListChangedAfterAddTool(t *testing.T) {
	s := connect(t, localServer("ts"))
	_, err := s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"extra"}`), nil)
	require.NoError(t, err)
	waitClosed(t, s.ToolsChanged(), "ToolsChanged after add_tool")
	_, ok := findTool(s.Tools(), "mcp__ts__extra")
	require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
}

func TestListChangedOnSIGUSR1(t *testing.T) {
	s := connect(t, localServer("ts"))
	require.NoError(t, syscall.Kill(s.PID(), syscall.SIGUSR1))
	waitClosed(t, s.ToolsChanged(), "ToolsChanged after SIGUSR1")
	_, ok := findTool(s.Tools(), "mcp__ts__dyn_1")
	require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
}

func TestExitAtStart(t *testing.T) {
	_, err := Connect(context.Background(), localServer("boom", "--exit-at-start", "7"), Options{Logger: testLogger(t)})
	require.Error(t, err)
	t.Log(err)
	var exitErr *ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, 7, exitErr.ExitCode())
	require.ErrorIs(t, err, ErrTransport)
	require.Contains(t, err.Error(), `server "boom" exited with status 7 before initialize; stderr: `)
	require.NotEmpty(t, exitErr.Stderr)
}

func TestSpawnFailure(t *testing.T) {
	srv := localServer("missing")
	srv.Command = []string{"freecode-no-such-command", "--flag"}
	_, err := Connect(context.Background(), srv, Options{})
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), `server "missing": cannot start "freecode-no-such-command"`)
	require.Contains(t, err.Error(), "executable file not found")
}

func TestCrashMidCall(t *testing.T) {
	s := connect(t, localServer("crashy", "--crash-after", "1"))
	_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
	require.Error(t, err)
	t.Log(err)
	require.ErrorIs(t, err, ErrTransport)
	waitClosed(t, s.Done(), "Done after crash")
	var exitErr *ExitError
	require.ErrorAs(t, s.Err(), &exitErr)
	require.Equal(t, 3, exitErr.ExitCode())
	require.Contains(t, s.Err().Error(), `server "crashy" exited with status 3`)

	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, ErrTransport)
}

func TestHangAtInitialize(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	srv := localServer("hang", "--hang-init", "--pid-file", pidFile)
	srv.Timeout = time.Second
	start := time.Now()
	_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	elapsed := time.Since(start)
	require.Error(t, err)
	t.Logf("%v after %s", err, elapsed)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), `server "hang": no answer to initialize within 1s`)
	require.Less(t, elapsed, srv.Timeout+2*time.Second, "timeout plus stop")
	requireGroupGone(t, readPID(t, pidFile))
}

// OnProcess reports the process before the handshake, so a caller can
// track a server that never initializes; its channel closes once the
// process is gone.
func TestOnProcessBeforeHandshake(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	type started struct {
		pid    int
		exited <-chan struct{}
	}
	got := make(chan started, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, localServer("hang", "--hang-init", "--pid-file", pidFile), Options{
			Logger:    testLogger(t),
			OnProcess: func(pid int, exited <-chan struct{}) { got <- started{pid, exited} },
		})
		errc <- err
	}()
	var p started
	select {
	case p = <-got:
	case err := <-errc:
		t.Fatalf("Connect returned before OnProcess: %v", err)
	}
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(p.pid)
	}, 10*time.Second, 5*time.Millisecond, "the server's own pid file names pid %d", p.pid)
	select {
	case <-p.exited:
		t.Fatal("exited closed while the server runs")
	case err := <-errc:
		t.Fatalf("Connect returned during a hanging initialize: %v", err)
	default:
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	waitClosed(t, p.exited, "exited after a failed connect")
	requireGroupGone(t, p.pid)
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func TestHangAtInitializeCanceledByCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := localServer("hang", "--hang-init")
	errc := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, srv, Options{})
		errc <- err
	}()
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(signalWait):
		t.Fatal("Connect did not return after cancel")
	}
	require.ErrorIs(t, err, context.Canceled)
}

// Non-JSON lines on stdout are skipped; the server still works.
func TestGarbageStdoutTolerated(t *testing.T) {
	s := connect(t, localServer("noisy", "--garbage-stdout"))
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"still fine"}`), nil)
	require.NoError(t, err)
	require.Equal(t, "still fine", textOf(t, res))
}

func TestGrandchildHoldingStdout(t *testing.T) {
	gcFile := filepath.Join(t.TempDir(), "gc")
	s, err := Connect(context.Background(), localServer("gc", "--grandchild", "--grandchild-pid-file", gcFile), Options{Logger: testLogger(t)})
	require.NoError(t, err)
	gc := readPID(t, gcFile)
	require.Contains(t, testutil.GroupMembers(s.PID()), gc, "the grandchild is in the server's group")

	start := time.Now()
	require.NoError(t, s.Close())
	t.Logf("Close took %s", time.Since(start))
	require.Less(t, time.Since(start), stdinGrace+termGrace)
	requireGroupGone(t, s.PID())
}

// When the server itself dies, a grandchild holding its stdout must not
// keep the session (or the grandchild) alive.
func TestLeaderExitKillsGroup(t *testing.T) {
	gcFile := filepath.Join(t.TempDir(), "gc")
	s := connect(t, localServer("gc", "--grandchild", "--grandchild-pid-file", gcFile))
	_, err := s.CallTool(context.Background(), "crash", nil, nil)
	require.ErrorIs(t, err, ErrTransport)
	waitClosed(t, s.Done(), "Done after crash")
	require.Contains(t, s.Err().Error(), "exited with status 3")
	requireGroupGone(t, s.PID())
}

func TestStderrFloodBounded(t *testing.T) {
	srv := localServer("flood", "--stderr-flood", "20000")
	s, err := Connect(context.Background(), srv, Options{StderrLines: 50})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Eventually(t, func() bool {
		tail := s.StderrTail()
		return len(tail) > 0 && tail[len(tail)-1] == "flood line 19999"
	}, signalWait, 5*time.Millisecond)
	require.Len(t, s.StderrTail(), 50)
}

func TestEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("FREECODE_TEST_SECRET", "hunter2")
	srv := localServer("env")
	srv.Command = []string{"sh", "-c", `echo "secret=[$FREECODE_TEST_SECRET] mine=[$MINE] path=[${PATH:+set}]" >&2; exec "$0"`, testServerBin}
	srv.Env = map[string]string{"MINE": "yes"}
	s := connect(t, srv)
	require.Eventually(t, func() bool {
		return slices.Contains(s.StderrTail(), "secret=[] mine=[yes] path=[set]")
	}, signalWait, 5*time.Millisecond, "stderr: %q", s.StderrTail())
}

// callLogLines reads the test server's call log.
func callLogLines(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

func hasPhase(lines []map[string]any, phase string) bool {
	return slices.ContainsFunc(lines, func(m map[string]any) bool { return m["phase"] == phase })
}

// testCancel cancels a long sleep once the server logged its start and
// checks that the server ended it early, which it only does when it got
// notifications/cancelled.
func testCancel(t *testing.T, s *Session, logFile string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "sleep", json.RawMessage(`{"ms":60000}`), nil)
		errc <- err
	}()
	require.Eventually(t, func() bool { return hasPhase(callLogLines(t, logFile), "start") }, signalWait, 5*time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(signalWait):
		t.Fatal("CallTool did not return after cancel")
	}
	require.Eventually(t, func() bool { return hasPhase(callLogLines(t, logFile), "end") }, signalWait, 5*time.Millisecond,
		"the server never ended the cancelled call")
}

func TestCancelSendsNotification(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "calls.jsonl")
	s := connect(t, localServer("ts", "--call-log", logFile))
	testCancel(t, s, logFile)
}

func remoteServer(name, url string, tr Transport) Spec {
	return Spec{Name: name, Type: Remote, URL: url, Transport: tr, Timeout: 10 * time.Second,
		Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()}
}

func TestRemoteStreamableHTTP(t *testing.T) {
	for _, tr := range []Transport{TransportAuto, TransportStreamableHTTP} {
		t.Run(string(tr), func(t *testing.T) {
			u, _ := startTestServerHTTP(t, "--tools", "2")
			s := connect(t, remoteServer("web", u, tr))
			require.Zero(t, s.PID())
			require.Len(t, s.Tools(), 2+len(fixedTools))
			res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"over http"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "over http", textOf(t, res))

			// list_changed arrives on the standalone GET stream.
			_, err = s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"extra"}`), nil)
			require.NoError(t, err)
			waitClosed(t, s.ToolsChanged(), "ToolsChanged over HTTP")
			_, ok := findTool(s.Tools(), "mcp__web__extra")
			require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
		})
	}
}

// Over HTTP mcp-go sends no notifications/cancelled; the session does. A
// proxy in front of the server records what the client posts.
func TestRemoteCancelSendsNotification(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "calls.jsonl")
	u, _ := startTestServerHTTP(t, "--call-log", logFile)
	target, err := url.Parse(u)
	require.NoError(t, err)

	var mu sync.Mutex
	var posted []string
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1
	proxy.ErrorLog = testutil.Log(t)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err == nil {
				mu.Lock()
				posted = append(posted, string(body))
				mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	// Registered before connect's cleanup, so it runs after the session
	// (and its long-lived GET stream) is closed.
	t.Cleanup(front.Close)

	s := connect(t, remoteServer("web", front.URL+target.Path, TransportStreamableHTTP))
	testCancel(t, s, logFile)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(posted, func(b string) bool {
			return strings.Contains(b, `"notifications/cancelled"`) && strings.Contains(b, `"requestId"`)
		})
	}, signalWait, 5*time.Millisecond, "no notifications/cancelled posted")

	// The notice names the abandoned call.
	mu.Lock()
	defer mu.Unlock()
	var callID, cancelledID json.RawMessage
	for _, b := range posted {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(b), &m) != nil {
			continue
		}
		switch {
		case m.Method == "tools/call" && m.Params.Name == "sleep":
			callID = m.ID
		case m.Method == "notifications/cancelled":
			cancelledID = m.Params.RequestID
		}
	}
	require.NotEmpty(t, callID)
	require.JSONEq(t, string(callID), string(cancelledID))
}

func TestRemoteSSE(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--sse")
	require.True(t, strings.HasSuffix(u, "/sse"), u)
	for _, tr := range []Transport{TransportAuto, TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			s := connect(t, remoteServer("old", u, tr))
			require.Len(t, s.Tools(), len(fixedTools))
			res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"over sse"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "over sse", textOf(t, res))
		})
	}
}

func TestRemoteServerGone(t *testing.T) {
	u, cmd := startTestServerHTTP(t)
	s := connect(t, remoteServer("web", u, TransportStreamableHTTP))
	killGroup(cmd)
	waitClosed(t, s.Done(), "Done after the server died")
	t.Log(s.Err())
	require.ErrorIs(t, s.Err(), ErrTransport)
	_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
	require.ErrorIs(t, err, ErrClosed)
}

func TestRemoteHTTPStatus(t *testing.T) {
	var mu sync.Mutex
	var gotAuth []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "go away", http.StatusUnauthorized)
	}))
	defer ts.Close()
	srv := remoteServer("locked", ts.URL+"/mcp", TransportAuto)
	srv.Headers = map[string]string{"Authorization": "Bearer wrong"}
	_, err := Connect(context.Background(), srv, Options{})
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), fmt.Sprintf(`server "locked": initialize: HTTP 401 Unauthorized from %s/mcp`, ts.URL))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, gotAuth)
	require.Equal(t, "Bearer wrong", gotAuth[0], "configured headers are sent")
}

func TestRemoteConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = Connect(context.Background(), remoteServer("nobody", "http://"+addr+"/mcp", TransportAuto), Options{})
	require.Error(t, err)
	t.Log(err)
	require.ErrorIs(t, err, ErrTransport)
	require.Contains(t, err.Error(), "connection refused")
}

func TestConcurrentClose(t *testing.T) {
	s, err := Connect(context.Background(), localServer("ts"), Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { assert.NoError(t, s.Close()) })
	}
	wg.Wait()
	waitClosed(t, s.Done(), "Done after Close")
	requireGroupGone(t, s.PID())
}

// Userinfo and query of a configured URL may hold secrets; no error
// message shows them.
func TestRemoteErrorsRedactURL(t *testing.T) {
	for _, tr := range []Transport{TransportAuto, TransportStreamableHTTP, TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			srv := remoteServer("secret", "http://user:pw@127.0.0.1:1/mcp?key=SECRET", tr)
			_, err := Connect(context.Background(), srv, Options{})
			require.Error(t, err)
			t.Log(err)
			require.Contains(t, err.Error(), "127.0.0.1:1")
			require.NotContains(t, err.Error(), "pw")
			require.NotContains(t, err.Error(), "SECRET")
		})
	}
	for _, raw := range []string{"ftp://user:pw@host/x?key=SECRET", "http://user:pw@[::1/x?key=SECRET", "user:pw@host?key=SECRET"} {
		t.Run(raw, func(t *testing.T) {
			_, err := Connect(context.Background(), remoteServer("bad", raw, TransportAuto), Options{})
			require.ErrorContains(t, err, "is not an http(s) URL")
			t.Log(err)
			require.NotContains(t, err.Error(), "pw")
			require.NotContains(t, err.Error(), "SECRET")
		})
	}
}

func TestRedactErr(t *testing.T) {
	const raw = "http://user:pw@127.0.0.1:1/mcp?key=SECRET"
	for name, err := range map[string]error{
		"url.Error":    fmt.Errorf("send request: %w", &url.Error{Op: "Post", URL: raw, Err: io.ErrUnexpectedEOF}),
		"SSE endpoint": fmt.Errorf("stream: %w", &url.Error{Op: "Get", URL: "http://user:pw@127.0.0.1:1/sse?sessionId=SECRET", Err: io.EOF}),
		"raw URL":      fmt.Errorf("bad endpoint %s", raw),
	} {
		t.Run(name, func(t *testing.T) {
			got := newURLMask(remoteServer("x", raw, TransportAuto)).err(err)
			t.Log(got)
			require.Contains(t, got, "127.0.0.1:1")
			require.NotContains(t, got, "pw")
			require.NotContains(t, got, "SECRET")
		})
	}
}

// The log shows the command as written (Shown), not as expanded.
func TestStartLogShowsCommandAsWritten(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{Verbosity: 1})
	srv := localServer("shown", "--name", "expanded-secret")
	srv.Shown = testServerBin + " --name ${TOKEN}"
	s, err := Connect(context.Background(), srv, Options{Logger: log})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	mu.Lock()
	defer mu.Unlock()
	var started []string
	for _, l := range lines {
		if strings.Contains(l, "started server process") {
			started = append(started, l)
		}
	}
	require.Len(t, started, 1)
	require.Contains(t, started[0], "${TOKEN}")
	require.NotContains(t, started[0], "expanded-secret")
}
