package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
)

// The gateway behind a load balancer: two `freecode mcp serve --http`
// processes of one home behind a real HAProxy (installed by `make deps`).
// docs/gateway.md ("Behind a load balancer") shows haproxyConfig without
// the test's ports, its readiness probe and its log line.

// haproxyConfig is the balancer: one frontend on port, both replicas
// (gw1, gw2) behind it. A request without Mcp-Session-Id (every request of
// 2026-07-28) goes round robin; the requests of a 2025-11-25 session stick
// to the replica that answered its initialize (the stick table, keyed on
// the Mcp-Session-Id that answer carries). The frontend on plainPort goes
// round robin whatever the request, as a balancer configured without
// stickiness would. Each request is logged to stdout as "backend/server
// status mcp-method protocol-version": what the balancer says of where it
// went. /ready answers 200 once both replicas pass their health check (a
// GET of the endpoint answered 401: the gateway serves and wants the
// token).
func haproxyConfig(port, plainPort int, replicas [2]string) string {
	return fmt.Sprintf(`global
    log stdout format raw local0

defaults
    mode http
    log global
    option dontlognull
    timeout connect 5s
    timeout client 10m
    timeout server 10m

frontend mcp
    bind 127.0.0.1:%d
    monitor-uri /ready
    monitor fail if { nbsrv(gateways) lt 2 }
    http-request capture req.hdr(Mcp-Method) len 64
    http-request capture req.hdr(MCP-Protocol-Version) len 16
    log-format "%%b/%%s %%ST %%[capture.req.hdr(0)] %%[capture.req.hdr(1)]"
    default_backend gateways

frontend mcp_plain
    bind 127.0.0.1:%d
    http-request capture req.hdr(Mcp-Method) len 64
    http-request capture req.hdr(MCP-Protocol-Version) len 16
    log-format "%%b/%%s %%ST %%[capture.req.hdr(0)] %%[capture.req.hdr(1)]"
    default_backend gateways_plain

backend gateways
    balance roundrobin
    http-request set-header Host localhost
    stick-table type string len 128 size 100k expire 30m
    stick on req.hdr(Mcp-Session-Id)
    stick store-response res.hdr(Mcp-Session-Id)
    option httpchk
    http-check send meth GET uri /mcp ver HTTP/1.1 hdr Host localhost
    http-check expect status 401
    server gw1 %s check inter 2s
    server gw2 %s check inter 2s

backend gateways_plain
    balance roundrobin
    http-request set-header Host localhost
    server gw1 %s
    server gw2 %s
`, port, plainPort, replicas[0], replicas[1], replicas[0], replicas[1])
}

// haproxyBin is the haproxy binary: on PATH, or in /usr/sbin where Debian
// puts it (off a user's PATH). Without it the test fails on CI, which runs
// `make deps`, and is skipped elsewhere, as the tests needing the npm
// servers are (internal/bench, cmd/freecode's OAuth test).
func haproxyBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	const msg = "haproxy is not installed: run make deps (it installs the Debian package haproxy)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// replica is one `freecode mcp serve --http` process.
type replica struct {
	name   string
	cmd    *exec.Cmd
	addr   string // host:port it listens on
	stderr *servetest.SyncBuffer
	done   chan struct{} // closed when it has ended and its output is read
}

// startReplica starts `freecode mcp serve --http 127.0.0.1:0 --server a`
// for home, with FREECODE_TEST_REPLICA=name in its environment (the
// config's test server names its logs by it). It is stopped (SIGTERM, then
// SIGKILL to its process group) at the end of the test. The address is
// known once waitListening returns.
func startReplica(t *testing.T, bin, home, name string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "serve", "--http", "127.0.0.1:0", "--server", "a", "--no-attach")
	// The home's config alone: no project's (the working directory's) is
	// read.
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home, "FREECODE_TEST_REPLICA="+name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &replica{name: name, cmd: cmd, stderr: &servetest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = r.stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(r.done)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(waitFor):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, r.stderr.String())
		}
	})
	return r
}

// waitListening waits for the line saying where r listens.
func (r *replica) waitListening(t *testing.T) {
	t.Helper()
	const prefix = "freecode mcp serve: streamable HTTP on http://"
	waitUntil(t, r.name+" listening", r.done, func() (bool, error) {
		for line := range strings.Lines(r.stderr.String()) {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				r.addr = strings.TrimSuffix(strings.TrimSpace(rest), HTTPPath)
				return true, nil
			}
		}
		return false, nil
	}, r.stderr)
}

// waitUntil checks cond every 20ms, in the test's goroutine, until it
// holds; it fails the test when cond errs, when ended is closed first (the
// process waited on has ended) or after waitFor, showing out.
func waitUntil(t *testing.T, what string, ended <-chan struct{}, cond func() (bool, error), out fmt.Stringer) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitFor)
	for {
		ok, err := cond()
		require.NoError(t, err, "waiting for %s:\n%s", what, out)
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-ended:
			t.Fatalf("waiting for %s, the process ended:\n%s", what, out)
		case <-deadline:
			t.Fatalf("no %s within %s:\n%s", what, waitFor, out)
		}
	}
}

// buildFreecode builds cmd/freecode into a directory of the test.
func buildFreecode(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "freecode")
	build := exec.Command("go", "build", "-o", bin, "./cmd/freecode")
	build.Dir = testutil.RepoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build freecode:\n%s", out)
	return bin
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// balancer is the haproxy child; log is its stdout, a line a request.
type balancer struct {
	cmd  *exec.Cmd
	log  *servetest.SyncBuffer
	done chan struct{}
}

// startHAProxy runs haproxy in the foreground (-db) on cfg until the end
// of the test, and waits until its /ready on port answers 200.
func startHAProxy(t *testing.T, bin, cfg string, port int) *balancer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	check := exec.Command(bin, "-c", "-q", "-f", path)
	out, err := check.CombinedOutput()
	require.NoError(t, err, "haproxy -c:\n%s", out)

	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	b := &balancer{cmd: cmd, log: &servetest.SyncBuffer{}, done: make(chan struct{})}
	stderr := &servetest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = b.log, stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(b.done)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(waitFor):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-b.done
		}
		if t.Failed() {
			t.Logf("haproxy log:\n%s\nhaproxy stderr:\n%s", b.log.String(), stderr.String())
		}
	})
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", port)
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	waitUntil(t, "haproxy seeing both replicas up", b.done, func() (bool, error) {
		resp, err := hc.Get(ready)
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, stderr)
	return b
}

// hop is one request as the balancer logged it.
type hop struct {
	server, status, method, version string
}

// hops waits until the balancer has logged at least n requests from the
// from-th on (it logs a request once its answer is sent: after the client
// has it), and returns every request logged from the from-th on.
func (b *balancer) hops(t *testing.T, from, n int) []hop {
	t.Helper()
	var out []hop
	waitUntil(t, fmt.Sprintf("haproxy logging %d requests", from+n), b.done, func() (bool, error) {
		out = out[:0]
		for i, line := range strings.Split(strings.TrimSpace(b.log.String()), "\n") {
			if i < from || line == "" {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 4 {
				return false, fmt.Errorf("log line %q", line)
			}
			out = append(out, hop{server: f[0], status: f[1], method: f[2], version: f[3]})
		}
		return len(out) >= n, nil
	}, b.log)
	return out
}

// bearer adds the token to every request: mcp-go's WithHTTPHeaders misses
// the DELETE that ends a session.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// newClient is an mcp-go client of url with the bearer token, on its own
// HTTP transport (its connections closed at the end of the test), sending
// host as the Host header when not "".
func newClient(t *testing.T, url, token, host string) *client.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&http.Client{Transport: bearer{token: token, next: tr}})}
	if host != "" {
		opts = append(opts, transport.WithStreamableHTTPHost(host))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(t.Context()))
	return c
}

func connect(t *testing.T, c *client.Client, version string) *mcpgo.InitializeResult {
	t.Helper()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcpgo.Implementation{Name: "haproxy-test", Version: "1"}
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	res, err := c.Initialize(ctx, req)
	require.NoError(t, err)
	return res
}

func callText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err, "call %s", name)
	require.False(t, res.IsError, "call %s: %v", name, res.Content)
	require.Len(t, res.Content, 1)
	return res.Content[0].(mcpgo.TextContent).Text
}

// modernList lists r's tools directly (not through the balancer) at
// 2026-07-28, as raw HTTP: the names, and the status.
func modernList(r *replica, token string) ([]string, int, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+HTTPPath, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: waitFor}).Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, resp.StatusCode, fmt.Errorf("tools/list: %w: %s", err, b)
	}
	var names []string
	for _, tool := range out.Result.Tools {
		names = append(names, tool.Name)
	}
	return names, resp.StatusCode, nil
}

// callRecord is a line of a test server's --call-log.
type callRecord struct {
	Phase string         `json:"phase"`
	Tool  string         `json:"tool"`
	Args  map[string]any `json:"args"`
}

// echoedBy is the echo texts the call log at path records as answered.
func echoedBy(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r callRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Phase == "end" && r.Tool == "echo" {
			out = append(out, r.Args["text"].(string))
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// TestBehindHAProxy: two gateways of one home (one token file, one config,
// each running its own test server) behind HAProxy serve a 2026-07-28
// host statelessly: its requests — server/discover, tools/list, calls,
// resources/read, prompts/get — alternate between the replicas, as the
// balancer's log says and each replica's test server confirms, and every
// answer is right. A 2025-11-25 host works behind the same balancer
// through the stick table on Mcp-Session-Id, and does not without it.
func TestBehindHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	haproxy := haproxyBin(t)
	freecode := buildFreecode(t)
	home := servetest.ShortHome(t)
	logs := t.TempDir()
	// One config for both; ${FREECODE_TEST_REPLICA}, expanded from each
	// replica's environment, keeps each test server's logs apart.
	cfg := servetest.Config(testServer("a", "--resources", "1", "--prompts",
		"--call-log", filepath.Join(logs, "calls-${FREECODE_TEST_REPLICA}.jsonl"),
		"--request-log", filepath.Join(logs, "requests-${FREECODE_TEST_REPLICA}.log")))
	writeConfig(t, home, cfg)

	// Every process the test starts, checked last (cleanups run in
	// reverse): none outlives the test.
	var procs []testutil.Proc
	t.Cleanup(func() {
		for _, p := range procs {
			assert.False(t, p.Alive(), "process %d (%s) outlived the test", p.PID, testutil.Comm(p.PID))
			p.Kill()
		}
	})
	// Started at once: both make the home's token, one wins, both use it.
	reps := [2]*replica{startReplica(t, freecode, home, "gw1"), startReplica(t, freecode, home, "gw2")}
	for _, r := range reps {
		r.waitListening(t)
		if p, ok := testutil.Identify(r.cmd.Process.Pid); ok {
			procs = append(procs, p)
		}
	}
	token, err := LoadToken(home)
	require.NoError(t, err)
	// Each replica takes the token of the file, directly, and lists a's
	// tools once a runs.
	for _, r := range reps {
		waitUntil(t, r.name+" listing a's tools", r.done, func() (bool, error) {
			names, status, err := modernList(r, token)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("%s answers %d with the home's token", r.name, status)
			}
			return slices.Contains(names, "echo"), err
		}, r.stderr)
		procs = append(procs, testutil.Descendants(r.cmd.Process.Pid)...)
	}

	port, plainPort := freePort(t), freePort(t)
	lb := startHAProxy(t, haproxy, haproxyConfig(port, plainPort, [2]string{reps[0].addr, reps[1].addr}), port)
	if p, ok := testutil.Identify(lb.cmd.Process.Pid); ok {
		procs = append(procs, p)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, HTTPPath)
	start := time.Now()

	// 2026-07-28: no session; every request stands alone.
	// It reaches the balancer by a name of its own, as a host elsewhere
	// would.
	c := newClient(t, url, token, "mcp.example.com")
	res := connect(t, c, mcpgo.ProtocolVersion20260728) // server/discover
	assert.Equal(t, mcpgo.ProtocolVersion20260728, res.ProtocolVersion)
	assert.Equal(t, mcpgo.ProtocolVersion20260728, c.ProtocolVersion())
	assert.Empty(t, c.GetSessionId(), "a 2026-07-28 connection has no session")
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	var toolNames []string
	for _, tool := range tools.Tools {
		toolNames = append(toolNames, tool.Name)
	}
	assert.Contains(t, toolNames, "echo")
	const calls = 6
	for i := range calls {
		text := fmt.Sprintf("call %d", i)
		assert.Equal(t, text, callText(t, c, "echo", map[string]any{"text": text}))
	}
	for i := range 2 {
		read := mcpgo.ReadResourceRequest{}
		read.Params.URI = fmt.Sprintf("test://items/%d", i)
		rr, err := c.ReadResource(ctx, read)
		require.NoError(t, err)
		require.Len(t, rr.Contents, 1)
		assert.Equal(t, fmt.Sprintf("item %d", i), rr.Contents[0].(mcpgo.TextResourceContents).Text)
	}
	for _, name := range []string{"Ann", "Bob"} {
		get := mcpgo.GetPromptRequest{}
		get.Params.Name, get.Params.Arguments = "greet", map[string]string{"name": name}
		pr, err := c.GetPrompt(ctx, get)
		require.NoError(t, err)
		require.NotEmpty(t, pr.Messages)
		assert.Equal(t, "Hello, "+name+"!", pr.Messages[0].Content.(mcpgo.TextContent).Text)
	}
	// An upstream server's own state is per replica: note counts what
	// its process was given, and each replica runs its own a.
	notes := map[string]int{}
	for range 4 {
		notes[callText(t, c, "note", map[string]any{"text": "n"})]++
	}
	assert.Equal(t, map[string]int{"1": 2, "2": 2}, notes, "each replica's a was given two notes")
	modernTook := time.Since(start)

	// What the balancer says: every request answered 200, each by the
	// other replica than the one before.
	wantMethods := []string{"server/discover", "tools/list"}
	for range calls {
		wantMethods = append(wantMethods, "tools/call")
	}
	wantMethods = append(wantMethods, "resources/read", "resources/read", "prompts/get", "prompts/get",
		"tools/call", "tools/call", "tools/call", "tools/call")
	hops := lb.hops(t, 0, len(wantMethods))
	require.Len(t, hops, len(wantMethods), "%v", hops)
	for i, h := range hops {
		assert.Equal(t, wantMethods[i], h.method, "request %d", i)
		assert.Equal(t, mcpgo.ProtocolVersion20260728, h.version, "request %d", i)
		assert.Equal(t, "200", h.status, "request %d", i)
		if i > 0 {
			assert.NotEqual(t, hops[i-1].server, h.server, "requests %d and %d went to one replica: %v", i-1, i, hops)
		}
	}
	// What the replicas' test servers say: each answered the echo calls
	// the balancer sent its replica, and no other.
	want := map[string][]string{}
	for i, h := range hops[2 : 2+calls] {
		want[h.server] = append(want[h.server], fmt.Sprintf("call %d", i))
	}
	for _, r := range reps {
		got := echoedBy(t, filepath.Join(logs, "calls-"+r.name+".jsonl"))
		assert.Equal(t, want["gateways/"+r.name], got, "the calls %s's server answered", r.name)
		assert.Len(t, got, calls/2, "%s answered half the calls", r.name)
		reqs, err := os.ReadFile(filepath.Join(logs, "requests-"+r.name+".log"))
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(reqs), "resources/read\n"), "%s's server read once:\n%s", r.name, reqs)
		assert.Equal(t, 1, strings.Count(string(reqs), "prompts/get\n"), "%s's server got a prompt once:\n%s", r.name, reqs)
	}

	// 2025-11-25: a session, made by one replica's initialize and known to
	// it alone. Through the stick table all its requests go there.
	before := len(hops)
	legacy := newClient(t, url, token, "")
	res = connect(t, legacy, mcpgo.LATEST_LEGACY_PROTOCOL_VERSION)
	assert.Equal(t, mcpgo.LATEST_LEGACY_PROTOCOL_VERSION, res.ProtocolVersion)
	assert.NotEmpty(t, legacy.GetSessionId(), "a 2025-11-25 connection has a session")
	for i := range 4 {
		text := fmt.Sprintf("sticky %d", i)
		assert.Equal(t, text, callText(t, legacy, "echo", map[string]any{"text": text}))
	}
	// initialize, initialized and four calls.
	sticky := lb.hops(t, before, 6)
	for i, h := range sticky {
		assert.Equal(t, sticky[0].server, h.server, "request %d of the session went elsewhere: %v", i, sticky)
	}

	// Without the stick table, the session's requests reach the replica
	// that does not know it: 404, and the host's requests fail.
	plain := newClient(t, fmt.Sprintf("http://127.0.0.1:%d%s", plainPort, HTTPPath), token, "")
	failed := 0
	if _, err := plain.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: mcpgo.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcpgo.Implementation{Name: "plain", Version: "1"}}}); err != nil {
		failed++
	}
	for i := range 4 {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": strconv.Itoa(i)}
		if _, err := plain.CallTool(ctx, req); err != nil {
			failed++
		}
	}
	assert.Positive(t, failed, "a session's requests spread over both replicas all succeeded")
	// The replica that does not know the session answers 404.
	waitUntil(t, "gw2's 404 in haproxy's log", lb.done, func() (bool, error) {
		return strings.Contains(lb.log.String(), "gateways_plain/gw2 404"), nil
	}, lb.log)

	t.Logf("%d requests of 2026-07-28 through haproxy in %s", len(hops), modernTook)
	for _, r := range reps {
		assert.NotContains(t, r.stderr.String(), token)
	}
	assert.NotContains(t, lb.log.String(), token)
}
