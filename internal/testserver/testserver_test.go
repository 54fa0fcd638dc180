package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInitializeProtocolVersions(t *testing.T) {
	for _, v := range []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125} {
		t.Run(v, func(t *testing.T) {
			cn, _ := startInProcess(t, Config{Name: "named"}, v)
			res, err := cn.initialize(t.Context(), v)
			require.NoError(t, err)
			require.Equal(t, v, res.ProtocolVersion)
			require.Equal(t, "named", res.ServerInfo.Name)
			require.NotNil(t, res.Capabilities.Tools)
			require.True(t, res.Capabilities.Tools.ListChanged)
		})
	}
}

func TestToolListRawSchemas(t *testing.T) {
	cn, _ := startInProcess(t, Config{Tools: 4, Schemas: SchemasMixed, ReadOnlyEvery: 2}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	names := cn.toolNames(t)
	require.Equal(t, []string{"add_tool", "crash", "echo", "fail", "note", "remove_tool", "sleep", "tool_000", "tool_001", "tool_002", "tool_003"}, names)

	raw := cn.raw.rawTools(t)
	require.Len(t, raw, len(names))
	type tool struct {
		InputSchema map[string]json.RawMessage `json:"inputSchema"`
		Annotations map[string]any             `json:"annotations"`
	}
	decode := func(name string) tool {
		var tl tool
		require.NoError(t, json.Unmarshal(raw[name], &tl), name)
		return tl
	}
	// Odd generated tools use the ref schema; its top-level keywords arrive intact.
	ref := decode("tool_001")
	for _, key := range []string{"oneOf", "$defs", "definitions", "description", "$schema"} {
		require.Contains(t, ref.InputSchema, key)
	}
	require.JSONEq(t, string(generatedSchema(SchemasRef, 1)), string(mustMarshal(t, ref.InputSchema)))
	simple := decode("tool_000")
	require.NotContains(t, simple.InputSchema, "oneOf")
	require.JSONEq(t, `["query"]`, string(simple.InputSchema["required"]))

	// --readonly-every 2: tool_001 and tool_003 only.
	require.NotContains(t, decode("tool_000").Annotations, "readOnlyHint")
	require.Equal(t, true, decode("tool_001").Annotations["readOnlyHint"])
	require.Equal(t, true, decode("tool_003").Annotations["readOnlyHint"])
	require.Equal(t, true, decode("echo").Annotations["readOnlyHint"])
	require.Equal(t, true, decode("sleep").Annotations["readOnlyHint"])
	require.Equal(t, false, decode("note").Annotations["readOnlyHint"])
	require.Equal(t, false, decode("add_tool").Annotations["readOnlyHint"])
	require.JSONEq(t, echoSchema, string(mustMarshal(t, decode("echo").InputSchema)))
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestPagination(t *testing.T) {
	cn, _ := startInProcess(t, Config{Tools: 5, PageSize: 3}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)

	var all []string
	pages := 0
	req := mcp.ListToolsRequest{}
	for {
		page, err := cn.c.ListToolsByPage(t.Context(), req)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(page.Tools), 3)
		for _, tl := range page.Tools {
			all = append(all, tl.Name)
		}
		if page.NextCursor == "" {
			break
		}
		req.Params.Cursor = page.NextCursor
		require.Less(t, pages, 10, "pagination does not end")
	}
	require.GreaterOrEqual(t, pages, 4) // 12 tools, 3 a page
	require.Len(t, all, 12)
	require.True(t, slices.IsSorted(all))
	require.Equal(t, all, cn.toolNames(t))
}

func TestFixedTools(t *testing.T) {
	cn, _ := startInProcess(t, Config{Tools: 1}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)

	require.Equal(t, "hello", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "hello"})))
	require.Equal(t, "1", resultText(t, cn.mustCall(t, "note", map[string]any{"text": "a"})))
	require.Equal(t, "2", resultText(t, cn.mustCall(t, "note", map[string]any{"text": "b"})))
	res := cn.mustCall(t, "fail", map[string]any{"message": "nope"})
	require.True(t, res.IsError)
	require.Equal(t, "nope", resultText(t, res))
	require.False(t, cn.mustCall(t, "sleep", map[string]any{"ms": 1}).IsError)
	require.Contains(t, resultText(t, cn.mustCall(t, "tool_000", map[string]any{"query": "q"})), `tool_000 ok: {"query":"q"}`)
	require.True(t, cn.mustCall(t, "remove_tool", map[string]any{"name": "missing"}).IsError)
}

// The hologram tool sends UnknownBlock byte for byte, which mcp-go's own
// client cannot decode: the reason a host must read tools/call raw.
func TestUnknownContentSentVerbatim(t *testing.T) {
	cn, _ := startInProcess(t, Config{UnknownContent: true}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	_, err := cn.call(t.Context(), "hologram", map[string]any{})
	require.ErrorContains(t, err, "unknown content type: hologram")
	var answer string
	for line := range strings.Lines(cn.raw.String()) {
		if strings.Contains(line, `"hologram"`) && strings.Contains(line, `"result"`) {
			answer = line
		}
	}
	require.Contains(t, answer, `"content":[{"type":"text","text":"`+HologramText+`"},`+UnknownBlock+`]`)
}

func TestSleepCancelled(t *testing.T) {
	cn, _ := startInProcess(t, Config{}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cn.call(ctx, "sleep", map[string]any{"ms": 600_000})
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("cancelled call did not return")
	}
	// The server stays usable and cleanup does not wait ten minutes.
	require.Equal(t, "x", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "x"})))
}

func TestUnknownMethodAndDiscover(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	defer s.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}`,
		`not json`,
	}, "\n") + "\n"
	var out lineLog
	require.NoError(t, s.ServeStdio(t.Context(), strings.NewReader(in), &out))
	codes := map[string]int{}
	for line := range strings.Lines(out.String()) {
		var msg struct {
			ID    json.RawMessage    `json:"id"`
			Error struct{ Code int } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &msg), line)
		codes[string(msg.ID)] = msg.Error.Code
	}
	require.Equal(t, map[string]int{"1": mcp.METHOD_NOT_FOUND, "2": mcp.METHOD_NOT_FOUND, "null": mcp.PARSE_ERROR}, codes)
}

func TestListChangedAfterAddAndRemoveTool(t *testing.T) {
	cn, _ := startInProcess(t, Config{}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	require.NotContains(t, cn.toolNames(t), "extra")

	require.Equal(t, "added extra", resultText(t, cn.mustCall(t, "add_tool", map[string]any{"name": "extra"})))
	cn.awaitNotification(t, string(mcp.MethodNotificationToolsListChanged))
	require.Contains(t, cn.toolNames(t), "extra")
	require.Contains(t, resultText(t, cn.mustCall(t, "extra", map[string]any{"text": "t"})), "extra ok")

	require.Equal(t, "removed extra", resultText(t, cn.mustCall(t, "remove_tool", map[string]any{"name": "extra"})))
	cn.awaitNotification(t, string(mcp.MethodNotificationToolsListChanged))
	require.NotContains(t, cn.toolNames(t), "extra")
}

func TestAddDynamicToolNotifies(t *testing.T) {
	cn, s := startInProcess(t, Config{}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	require.Equal(t, "dyn_1", s.AddDynamicTool())
	cn.awaitNotification(t, string(mcp.MethodNotificationToolsListChanged))
	require.Equal(t, "dyn_2", s.AddDynamicTool())
	cn.awaitNotification(t, string(mcp.MethodNotificationToolsListChanged))
	require.Subset(t, cn.toolNames(t), []string{"dyn_1", "dyn_2"})
}

func TestInitDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	cn, _ := startInProcess(t, Config{InitDelay: delay}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	start := time.Now()
	cn.mustInitialize(t)
	require.GreaterOrEqual(t, time.Since(start), delay)
}

func TestHangInit(t *testing.T) {
	cn, _ := startInProcess(t, Config{HangInit: true}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := cn.initialize(ctx, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestCallLogOverlap(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "calls.jsonl")
	cn, _ := startInProcess(t, Config{CallLog: logPath}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)

	// Two concurrent 200 ms sleeps: the server runs them side by side, and
	// the log shows the overlap.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			res, err := cn.call(t.Context(), "sleep", map[string]any{"ms": 200})
			if err == nil && res.IsError {
				err = fmt.Errorf("sleep failed: %v", res.Content)
			}
			require.NoError(t, err)
		})
	}
	wg.Wait()
	cn.mustCall(t, "echo", map[string]any{"text": "last"})

	recs := callLogRecords(t, logPath)
	require.Len(t, recs, 6)
	starts, ends := map[int]CallRecord{}, map[int]CallRecord{}
	for _, r := range recs {
		require.Equal(t, os.Getpid(), r.PID)
		switch r.Phase {
		case "start":
			starts[r.Seq] = r
		case "end":
			ends[r.Seq] = r
			require.NotNil(t, r.IsError)
			require.False(t, *r.IsError)
		}
	}
	require.Len(t, starts, 3)
	require.Len(t, ends, 3)
	require.Equal(t, "echo", starts[3].Tool)
	require.JSONEq(t, `{"text":"last"}`, string(starts[3].Args))
	// The sleeps overlapped: each started before the other ended.
	require.True(t, starts[1].Start.Before(ends[2].End))
	require.True(t, starts[2].Start.Before(ends[1].End))
	require.True(t, starts[1].Start.Equal(ends[1].Start))
}

func TestInProcessHTTPStreamableListChanged(t *testing.T) {
	testHTTP(t, ModeStreamable)
}

func TestInProcessHTTPSSEListChanged(t *testing.T) {
	testHTTP(t, ModeSSE)
}

func testHTTP(t *testing.T, mode string) {
	s, err := New(Config{Tools: 2, Schemas: SchemasRef})
	require.NoError(t, err)
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.ServeHTTP(ctx, ln, mode) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(wait):
			t.Error("ServeHTTP did not return")
		}
	}()

	var tr transport.Interface
	if mode == ModeSSE {
		tr, err = transport.NewSSE(URL(ln.Addr(), mode))
	} else {
		//lint:ignore SA1019 the servers we test against speak the legacy protocol, where list_changed needs the standalone GET stream.
		tr, err = transport.NewStreamableHTTP(URL(ln.Addr(), mode), transport.WithContinuousListening())
	}
	require.NoError(t, err)
	cn := newConn(t, tr, nil, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	defer cn.c.Close()
	cn.mustInitialize(t)
	require.Contains(t, cn.toolNames(t), "tool_001")
	require.Equal(t, "hi", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "hi"})))

	// For streamable HTTP the notification can only arrive on the standalone
	// GET stream, which may open after initialize returns: retry add_tool with
	// fresh names until one notification gets through.
	got := false
	for i := 0; !got && i < 50; i++ {
		cn.mustCall(t, "add_tool", map[string]any{"name": "http_" + strconv.Itoa(i)})
		select {
		case m := <-cn.notify:
			got = m == string(mcp.MethodNotificationToolsListChanged)
		case <-time.After(200 * time.Millisecond):
		}
	}
	require.True(t, got, "no list_changed notification over %s", mode)
	require.Contains(t, cn.toolNames(t), "http_0")
}

// Subprocess tests: the test binary re-executed as mcp-testserver.

func TestProcCrashAfter(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "calls.jsonl")
	p, cn := startProcClient(t, "--crash-after", "2", "--call-log", logPath)
	cn.mustInitialize(t)
	require.Equal(t, "one", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "one"})))
	_, err := cn.call(t.Context(), "echo", map[string]any{"text": "two"})
	require.Error(t, err)
	require.Equal(t, 3, p.exitCode(t))
	require.Contains(t, p.stderr.String(), "crashing on tools/call 2")

	recs := callLogRecords(t, logPath)
	require.Len(t, recs, 3) // start+end of the first call, start only of the second
	require.Equal(t, "start", recs[2].Phase)
	require.JSONEq(t, `{"text":"two"}`, string(recs[2].Args))
	require.Equal(t, p.cmd.Process.Pid, recs[2].PID)
}

func TestProcCrashTool(t *testing.T) {
	p, cn := startProcClient(t)
	cn.mustInitialize(t)
	_, err := cn.call(t.Context(), "crash", nil)
	require.Error(t, err)
	require.Equal(t, 3, p.exitCode(t))
}

func TestProcExitAtStart(t *testing.T) {
	p, stdin, _ := startProc(t, "--exit-at-start", "7", "--pid-file", filepath.Join(t.TempDir(), "pid"))
	defer stdin.Close()
	require.Equal(t, 7, p.exitCode(t))
	require.Equal(t, "exiting at start with status 7\n", p.stderr.String())
}

func TestProcGarbageStdoutAndStderrFlood(t *testing.T) {
	p, cn := startProcClient(t, "--garbage-stdout", "--stderr-flood", "500")
	cn.mustInitialize(t)
	require.Equal(t, "ok", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "ok"})))
	require.Contains(t, cn.raw.String(), "garbage before serving")
	require.Contains(t, cn.raw.String(), "garbage line 1 after a message")
	require.Equal(t, 500, strings.Count(p.stderr.String(), "flood line "))
	require.Contains(t, p.stderr.String(), "flood line 499\n")
}

func TestProcStderrEcho(t *testing.T) {
	p, cn := startProcClient(t, "--stderr-echo")
	cn.mustInitialize(t)
	require.Equal(t, "same\nsame", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "same\nsame"})))
	require.Equal(t, "x", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "x"})))
	require.Eventually(t, func() bool { return p.stderr.String() == "same\nsame\nx\n" }, wait, 5*time.Millisecond,
		"stderr: %q", p.stderr.String())
}

func TestProcSIGUSR1ListChanged(t *testing.T) {
	pidPath := filepath.Join(t.TempDir(), "pid")
	p, cn := startProcClient(t, "--pid-file", pidPath)
	cn.mustInitialize(t)
	pid, err := os.ReadFile(pidPath)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(p.cmd.Process.Pid)+"\n", string(pid))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR1))
	cn.awaitNotification(t, string(mcp.MethodNotificationToolsListChanged))
	require.Contains(t, cn.toolNames(t), "dyn_1")
}

func TestProcStdinEOFExits(t *testing.T) {
	p, stdin, _ := startProc(t)
	require.NoError(t, stdin.Close())
	require.Equal(t, 0, p.exitCode(t))
}

func TestProcGrandchild(t *testing.T) {
	gcPath := filepath.Join(t.TempDir(), "grandchild.pid")
	p, cn := startProcClient(t, "--grandchild", "--grandchild-pid-file", gcPath)
	cn.mustInitialize(t)
	b, err := os.ReadFile(gcPath)
	require.NoError(t, err)
	gc, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.True(t, testutil.Alive(gc), "grandchild %d not running", gc)
	pgid, err := syscall.Getpgid(gc)
	require.NoError(t, err)
	require.Equal(t, p.cmd.Process.Pid, pgid, "grandchild is in the server's process group")

	// Killing only the server leaves the grandchild holding stdout.
	require.NoError(t, p.cmd.Process.Kill())
	require.True(t, testutil.Alive(gc))
	require.NoError(t, syscall.Kill(-pgid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !testutil.Alive(gc) }, wait, 10*time.Millisecond)
	p.exitCode(t)
}

func TestProcHTTP(t *testing.T) {
	for _, mode := range []string{ModeStreamable, ModeSSE} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--http", "127.0.0.1:0"}
			if mode == ModeSSE {
				args = append(args, "--sse")
			}
			p, stdin, stdout := startProc(t, args...)
			defer stdin.Close()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
			require.True(t, ok, "first line %q", line)
			require.True(t, strings.HasSuffix(url, "/"+map[string]string{ModeStreamable: "mcp", ModeSSE: "sse"}[mode]), url)

			var tr transport.Interface
			if mode == ModeSSE {
				tr, err = transport.NewSSE(url)
			} else {
				//lint:ignore SA1019 the servers we test against speak the legacy protocol, where list_changed needs the standalone GET stream.
				tr, err = transport.NewStreamableHTTP(url, transport.WithContinuousListening())
			}
			require.NoError(t, err)
			cn := newConn(t, tr, nil, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			defer cn.c.Close()
			cn.mustInitialize(t)
			require.Equal(t, "hi", resultText(t, cn.mustCall(t, "echo", map[string]any{"text": "hi"})))

			// SIGUSR1 reaches HTTP clients as list_changed too; repeat until
			// the listening stream is up.
			require.Eventually(t, func() bool {
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR1))
				select {
				case m := <-cn.notify:
					return m == string(mcp.MethodNotificationToolsListChanged)
				case <-time.After(100 * time.Millisecond):
					return false
				}
			}, wait, time.Millisecond)
			require.Contains(t, cn.toolNames(t), "dyn_1")
		})
	}
}

func TestProcEvilText(t *testing.T) {
	p, cn := startProcClient(t, "--evil-text")
	cn.mustInitialize(t)
	require.Contains(t, cn.toolNames(t), "evil")
	var evil struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Annotations struct {
			Title string `json:"title"`
		} `json:"annotations"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	raw := cn.raw.rawTools(t)["evil"]
	require.NoError(t, json.Unmarshal(raw, &evil))
	require.Equal(t, "Evil "+EvilText, evil.Annotations.Title)
	require.Equal(t, "Shows what a hostile server sends.\n"+EvilText, evil.Description)
	require.Contains(t, string(evil.InputSchema), "\u009b31m", "the schema carries a raw C1 control")
	require.Contains(t, string(evil.InputSchema), "\u202e", "and a raw bidi override")
	require.Equal(t, EvilText, resultText(t, cn.mustCall(t, "evil", nil)))
	require.Eventually(t, func() bool { return strings.Count(p.stderr.String(), EvilStderr+"\n") == 2 },
		wait, 10*time.Millisecond, "stderr at start and per call: %q", p.stderr.String())
	for _, s := range []string{"\x1b]52;", "\x1b[2J", "\x1b[8m", "\r", "\u202e", "\u2066", "\u009b", "\x7f"} {
		require.Contains(t, EvilText, s)
	}
	require.Contains(t, EvilStderr, "\x9b2J")
}

func TestProcEvilTextAtExit(t *testing.T) {
	p, stdin, _ := startProc(t, "--evil-text", "--exit-at-start", "3")
	defer stdin.Close()
	require.Equal(t, 3, p.exitCode(t))
	require.Equal(t, EvilStderr+"\nexiting at start with status 3\n", p.stderr.String())
}

// elicitFunc answers elicitations for a test client.
type elicitFunc func(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// With --ask-after-init the server asks a client that declared
// elicitation once it is initialized, outside any call, and writes the
// answer to stderr; a client that declared none is not asked.
func TestAskAfterInit(t *testing.T) {
	asked := make(chan mcp.ElicitationRequest, 1)
	answer := elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- req
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
	})
	stderr := &lineLog{}
	cn, _ := startInProcess(t, Config{AskAfterInit: true, Stderr: stderr}, mcp.LATEST_LEGACY_PROTOCOL_VERSION, client.WithElicitationHandler(answer))
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "testserver-test", Version: "0"}
	req.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	_, err := cn.c.Initialize(t.Context(), req)
	require.NoError(t, err)
	select {
	case r := <-asked:
		require.Equal(t, AskAfterInitMessage, r.Params.Message)
		require.Equal(t, mcp.ElicitationModeForm, r.Params.Mode)
		schema, err := json.Marshal(r.Params.RequestedSchema)
		require.NoError(t, err)
		require.JSONEq(t, AskForm, string(schema))
	case <-time.After(wait):
		t.Fatal("not asked after initialized")
	}
	require.Eventually(t, func() bool {
		return stderr.String() == `answer after initialized: {"action":"accept","content":{"name":"Ada"}}`+"\n"
	}, wait, 10*time.Millisecond, "stderr: %q", stderr.String())

	quiet := &lineLog{}
	cn, _ = startInProcess(t, Config{AskAfterInit: true, Stderr: quiet}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	require.Eventually(t, func() bool {
		return quiet.String() == "ask after initialized: the client declared no elicitation; not asking\n"
	}, wait, 10*time.Millisecond, "stderr: %q", quiet.String())
}

// TestConformanceFixture: --conformance lists the names the conformance
// suite's server scenarios call, and answers them as its reference server.
func TestConformanceFixture(t *testing.T) {
	s, err := New(Config{Conformance: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	tools, err := s.ListTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, raw := range tools {
		var tl struct{ Name string }
		require.NoError(t, json.Unmarshal(raw, &tl))
		names = append(names, tl.Name)
	}
	assert.Subset(t, names, []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling", "json_schema_2020_12_tool"})
	for msg, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://template/42/data"}}`:                                                                                                                                                  `"text":"{\"data\":\"Data for ID: 42\",\"id\":\"42\",\"templateTest\":true}"`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}}`:                                                                                                             `Prompt with arguments: arg1='a', arg2='b'`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`: `"ttlMs":300000`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":""}}}`:                                                                       `"completion":{"values":[]`,
	} {
		b, err := json.Marshal(s.MCPServer().HandleMessage(ctx, json.RawMessage(msg)))
		require.NoError(t, err)
		assert.Contains(t, string(b), want, msg)
	}
}
