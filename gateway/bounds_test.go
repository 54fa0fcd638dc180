package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
)

// These tests bound what a host can make the gateway hold. Memory is the
// gateway child's peak RSS (VmHWM, or the rusage of its exit): sending
// 64 MiB must not raise it by half of that.

const (
	hostFlood  = 64 << 20
	hostGrowth = 32 << 20
)

// peakRSS is the peak resident memory of process pid in bytes (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// flood reads n bytes of 'x'.
type flood struct{ n int64 }

func (f *flood) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.n)]
	for i := range p {
		p[i] = 'x'
	}
	f.n -= int64(len(p))
	return len(p), nil
}

// boundsHome is a home whose config sets maxMessageBytes to 1 MiB and
// runs no server.
func boundsHome(t *testing.T) string {
	home := servetest.ShortHome(t)
	writeConfig(t, home, map[string]any{"mcp": map[string]any{"limits": map[string]any{"maxMessageBytes": 1 << 20}, "servers": []any{}}})
	return home
}

// TestHTTPBodyIsCapped: a body larger than mcp.limits.maxMessageBytes is
// answered 413 with a JSON-RPC error that names the limit, whether its
// length is declared or it comes chunked, without the gateway holding it.
func TestHTTPBodyIsCapped(t *testing.T) {
	home := boundsHome(t)
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	// The first request's costs are not the body's.
	require.Equal(t, http.StatusOK, post(t, g.url, "Bearer "+token).StatusCode)
	before := peakRSS(t, g.cmd.Process.Pid)
	for _, declared := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodPost, g.url, io.NopCloser(&flood{n: hostFlood}))
		require.NoError(t, err)
		if declared {
			req.ContentLength = hostFlood
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "declared length %v", declared)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		grown := peakRSS(t, g.cmd.Process.Pid) - before
		t.Logf("declared length %v: %d, peak RSS grew by %d MiB: %s", declared, resp.StatusCode, grown>>20, body)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "declared length %v: %s", declared, body)
		var rpc struct {
			Error struct {
				Code    int
				Message string
			}
		}
		require.NoError(t, json.Unmarshal(body, &rpc), "%s", body)
		assert.Contains(t, rpc.Error.Message, "larger than 1048576 bytes (limit mcp.limits.maxMessageBytes")
		assert.Contains(t, rpc.Error.Message, `"maxMessageBytes": 2097152`)
		require.Less(t, grown, int64(hostGrowth), "the gateway held the body")
	}
	// A host's requests still work.
	resp := post(t, g.url, "Bearer "+token)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// rawRequest is a POST of initialize on c, bearing token, with the
// body's first n bytes (all when n < 0).
func rawRequest(c net.Conn, token string, n int) error {
	body := initializeBody
	if n >= 0 {
		body = body[:n]
	}
	_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", HTTPPath, c.RemoteAddr(), token, len(initializeBody), body)
	return err
}

// closedWithin reads c until the server closes it, within d, and returns
// what it sent.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "the gateway did not close the connection within %s; it sent %q", d, b)
	return string(b)
}

// TestHTTPSlowBodyIsCutOff: a body trickling in is cut off once the read
// timeout has passed, with 408, and its connection closed.
func TestHTTPSlowBodyIsCutOff(t *testing.T) {
	home := boundsHome(t)
	g := startHTTPGateway(t, home, childHTTPBounds+"=300ms 1m 0")
	token, err := LoadToken(home)
	require.NoError(t, err)
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), HTTPPath))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, rawRequest(c, token, 1))
	// One more byte every 100 ms, until the gateway closes the
	// connection.
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 1; i < len(initializeBody); i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte{initializeBody[i]}); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	got := closedWithin(t, c, 10*time.Second)
	assert.Contains(t, got, "408 Request Timeout")
	assert.Contains(t, got, "did not arrive within 300ms")
}

// TestHTTPIdleConnectionIsClosed: a kept-alive connection that sends no
// next request is closed after the idle timeout.
func TestHTTPIdleConnectionIsClosed(t *testing.T) {
	home := boundsHome(t)
	g := startHTTPGateway(t, home, childHTTPBounds+"=10s 300ms 0")
	token, err := LoadToken(home)
	require.NoError(t, err)
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), HTTPPath))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, rawRequest(c, token, -1))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	assert.Empty(t, closedWithin(t, c, 10*time.Second))
}

// TestHTTPConnectionsAreCapped: with the cap's connections open, the next
// one is served only once one of them closes.
func TestHTTPConnectionsAreCapped(t *testing.T) {
	home := boundsHome(t)
	g := startHTTPGateway(t, home, childHTTPBounds+"=10s 1m 2")
	token, err := LoadToken(home)
	require.NoError(t, err)
	addr := strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), HTTPPath)
	held := make([]net.Conn, 2)
	for i := range held {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		// Answered: accepted, and kept alive it holds its place.
		require.NoError(t, rawRequest(c, token, -1))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		held[i] = c
	}
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(initializeBody))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	require.Never(t, func() bool { return len(done) > 0 }, 500*time.Millisecond, 10*time.Millisecond,
		"a third connection was served while two were open")
	held[0].Close()
	select {
	case code := <-done:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(waitFor):
		t.Fatal("the waiting connection was not served after one closed")
	}
}

// TestHTTPStreamsOutliveTheReadTimeout: the read timeout bounds reading a
// request, not its answer: a host's standing GET stream and a call longer
// than the timeout go on.
func TestHTTPStreamsOutliveTheReadTimeout(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	g := startHTTPGateway(t, home, childHTTPBounds+"=200ms 1m 0")
	token, err := LoadToken(home)
	require.NoError(t, err)
	h := startHost(t, home, hostOptions{http: g.url, token: token})
	require.Contains(t, h.tools(), "t__sleep")
	start := time.Now()
	res := h.call("t__sleep", map[string]any{"ms": 700}, false)
	assert.Nil(t, res["isError"], "%v", res)
	assert.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond)
	// The GET stream, open since the host connected, still brings a
	// list_changed.
	writeConfig(t, home, servetest.Config(testServer("t"), testServer("u")))
	h.event("tools_changed")
	assert.Contains(t, h.tools(), "u__echo")
}

// sessionRequest posts body in session id from the local address from,
// with user agent ua; it returns the status and the session id answered.
func sessionRequest(t *testing.T, url, token, from, ua, id, body string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// TestHTTPSessionIsItsHosts: a session answers only the client that opened
// it. Host B, with the same token, naming A's session from another
// address or with another User-Agent is answered 404; A goes on.
func TestHTTPSessionIsItsHosts(t *testing.T) {
	home := boundsHome(t)
	g := startHTTPGateway(t, home)
	token, err := LoadToken(home)
	require.NoError(t, err)
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	code, id := sessionRequest(t, g.url, token, "127.0.0.1", "host-a/1", "", initializeBody)
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, id)
	code, _ = sessionRequest(t, g.url, token, "127.0.0.1", "host-a/1", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, code)
	code, _ = sessionRequest(t, g.url, token, "127.0.0.1", "host-a/1", id, list)
	require.Equal(t, http.StatusOK, code, "A lists in its session")

	code, _ = sessionRequest(t, g.url, token, "127.0.0.1", "host-b/1", id, list)
	assert.Equal(t, http.StatusNotFound, code, "B, with another User-Agent, acted in A's session")
	code, _ = sessionRequest(t, g.url, token, "127.0.0.2", "host-a/1", id, list)
	assert.Equal(t, http.StatusNotFound, code, "B, from another address, acted in A's session")

	code, _ = sessionRequest(t, g.url, token, "127.0.0.1", "host-a/1", id, list)
	assert.Equal(t, http.StatusOK, code, "A's session ended")
	assert.Contains(t, g.stderr.String(), "refused a request naming a session another client opened")

	// A 2026-07-28 request belongs to no session: B's, naming A's session,
	// is answered, outside it, and A's session goes on.
	modern := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"host-b","version":"1"}}}}`
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(modern))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("User-Agent", "host-b/1")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"tools"`)
	code, _ = sessionRequest(t, g.url, token, "127.0.0.1", "host-a/1", id, list)
	assert.Equal(t, http.StatusOK, code, "A's session goes on")
}

// stdioGateway is a gateway child over stdio whose pipes the test holds.
type stdioGateway struct {
	cmd    *exec.Cmd
	in     *os.File // the child's stdin
	out    *bufio.Reader
	stderr *servetest.SyncBuffer
	done   chan struct{}
}

// startStdioGateway starts the gateway of home over stdio and
// initializes it.
func startStdioGateway(t *testing.T, home string) *stdioGateway {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", childHome+"="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g := &stdioGateway{cmd: cmd, in: inW, out: bufio.NewReaderSize(outR, 1<<20), stderr: &servetest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, g.stderr
	require.NoError(t, cmd.Start())
	inR.Close()
	outW.Close()
	go func() {
		defer close(g.done)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-g.done:
		case <-time.After(waitFor):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-g.done
		}
		outR.Close()
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", g.stderr.String())
		}
	})
	_, err = io.WriteString(inW, initializeBody+"\n")
	require.NoError(t, err)
	line, err := g.out.ReadString('\n')
	require.NoError(t, err, "no answer to initialize:\n%s", g.stderr.String())
	require.Contains(t, line, `"protocolVersion"`)
	_, err = io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	return g
}

// wait waits for the child's exit and returns its peak RSS in bytes.
func (g *stdioGateway) wait(t *testing.T) int64 {
	t.Helper()
	select {
	case <-g.done:
	case <-time.After(waitFor):
		t.Fatalf("the gateway did not end:\n%s", g.stderr.String())
	}
	return g.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// TestStdioLongLineEndsTheConnection: a host line longer than
// mcp.limits.maxMessageBytes ends the gateway, with a message on stderr
// that names the limit and how to raise it, without it holding the line.
func TestStdioLongLineEndsTheConnection(t *testing.T) {
	g := startStdioGateway(t, boundsHome(t))
	before := peakRSS(t, g.cmd.Process.Pid)
	n, err := io.Copy(g.in, &flood{n: hostFlood})
	t.Logf("wrote %d MiB: %v", n>>20, err)
	g.in.Close()
	peak := g.wait(t)
	t.Logf("peak RSS grew by %d MiB; exit %d", (peak-before)>>20, g.cmd.ProcessState.ExitCode())
	assert.Less(t, peak-before, int64(hostGrowth), "the gateway held the line")
	assert.NotEqual(t, 0, g.cmd.ProcessState.ExitCode())
	assert.Contains(t, g.stderr.String(), `the host sent a message of more than 1 MiB (limit mcp.limits.maxMessageBytes); the gateway ended the connection: `+
		`if the host's messages are legitimately that large, raise it in the config file with "mcp": {"limits": {"maxMessageBytes": 2097152}}`)
}

// TestStdioUnreadAnswersStopReading: a host that sends requests without
// reading the answers is not read from once mcp.DefaultGatewayMaxRequests
// are unanswered, so the gateway holds no more of them; once it reads, every
// request is answered.
func TestStdioUnreadAnswersStopReading(t *testing.T) {
	const requests = 10000
	g := startStdioGateway(t, boundsHome(t))
	before := peakRSS(t, g.cmd.Process.Pid)
	var batch bytes.Buffer
	for i := range requests {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", 100+i)
	}
	require.NoError(t, g.in.SetWriteDeadline(time.Now().Add(2*time.Second)))
	n, werr := g.in.Write(batch.Bytes())
	sent := bytes.Count(batch.Bytes()[:n], []byte("\n"))
	grown := peakRSS(t, g.cmd.Process.Pid) - before
	t.Logf("the gateway took %d of %d requests (%v); peak RSS grew by %d MiB", sent, requests, werr, grown>>20)
	require.ErrorIs(t, werr, os.ErrDeadlineExceeded, "the gateway read every request with none of the answers read")
	assert.Less(t, grown, int64(hostGrowth))

	// The answers, read meanwhile (until the gateway ends), and the rest
	// of a line cut by the deadline.
	answers := make(chan error, requests+1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			line, err := g.out.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				Method string
				Result json.RawMessage
			}
			if err := json.Unmarshal(line, &m); err != nil || (m.Method == "" && m.Result == nil) {
				answers <- fmt.Errorf("not an answer: %s", line)
			} else if m.Method == "" {
				answers <- nil
			}
		}
	}()
	defer func() { <-read }()
	require.NoError(t, g.in.SetWriteDeadline(time.Time{}))
	if rest := batch.Bytes()[n:]; n > 0 && batch.Bytes()[n-1] != '\n' {
		_, err := g.in.Write(rest[:bytes.IndexByte(rest, '\n')+1])
		require.NoError(t, err)
		sent++
	}
	for i := range sent {
		select {
		case err := <-answers:
			require.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatalf("%d of %d requests answered:\n%s", i, sent, g.stderr.String())
		}
	}
	g.in.Close()
	g.wait(t)
	assert.Equal(t, 0, g.cmd.ProcessState.ExitCode(), "%s", g.stderr.String())
}
