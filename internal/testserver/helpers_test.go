package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// childEnv makes the re-executed test binary act as mcp-testserver.
const childEnv = "FREECODE_TESTSERVER_CHILD"

// wait bounds every condition a test waits for.
const wait = 10 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		fs := flag.NewFlagSet("mcp-testserver", flag.ContinueOnError)
		cfg := Flags(fs)
		if err := fs.Parse(os.Args[1:]); err != nil {
			os.Exit(2)
		}
		if err := Run(context.Background(), *cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-testserver: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// lineLog records what a client read, line by line.
type lineLog struct {
	mu  sync.Mutex // mu guards buf
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// rawTools returns every tool object seen in tools/list results, by name,
// exactly as the server sent it.
func (l *lineLog) rawTools(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	tools := map[string]json.RawMessage{}
	for line := range strings.Lines(l.String()) {
		var msg struct {
			Result struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		for _, raw := range msg.Result.Tools {
			var named struct{ Name string }
			require.NoError(t, json.Unmarshal(raw, &named))
			tools[named.Name] = raw
		}
	}
	return tools
}

// conn is a connected, not yet initialized client plus what it observed.
type conn struct {
	c      *client.Client
	raw    *lineLog
	notify chan string // methods of notifications, dropped when full
}

func newConn(t *testing.T, tr transport.Interface, raw *lineLog, version string, opts ...client.ClientOption) *conn {
	t.Helper()
	cn := &conn{c: client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(version)}, opts...)...), raw: raw, notify: make(chan string, 64)}
	cn.c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case cn.notify <- n.Method:
		default:
		}
	})
	require.NoError(t, cn.c.Start(t.Context()))
	return cn
}

func (cn *conn) initialize(ctx context.Context, version string) (*mcp.InitializeResult, error) {
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "testserver-test", Version: "0"}
	return cn.c.Initialize(ctx, req)
}

func (cn *conn) mustInitialize(t *testing.T) {
	t.Helper()
	res, err := cn.initialize(t.Context(), mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	require.NoError(t, err)
	require.Equal(t, mcp.LATEST_LEGACY_PROTOCOL_VERSION, res.ProtocolVersion)
}

func (cn *conn) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return cn.c.CallTool(ctx, req)
}

func (cn *conn) mustCall(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cn.call(t.Context(), name, args)
	require.NoError(t, err)
	return res
}

func (cn *conn) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := cn.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	names := make([]string, 0, len(res.Tools))
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// awaitNotification waits for a notification with method.
func (cn *conn) awaitNotification(t *testing.T, method string) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case m := <-cn.notify:
			if m == method {
				return
			}
		case <-timeout:
			t.Fatalf("no %s notification within %s", method, wait)
		}
	}
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	text, ok := res.Content[0].(mcp.TextContent)
	require.True(t, ok, "content %T", res.Content[0])
	return text.Text
}

// startInProcess serves cfg over io.Pipe in this process, to a client
// made with opts.
func startInProcess(t *testing.T, cfg Config, version string, opts ...client.ClientOption) (*conn, *Server) {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := s.ServeStdio(ctx, inR, outW)
		_ = outW.Close()
		done <- err
	}()
	raw := &lineLog{}
	cn := newConn(t, transport.NewIO(io.TeeReader(outR, raw), inW, nil), raw, version, opts...)
	t.Cleanup(func() {
		_ = cn.c.Close() // closes inW: EOF for the server
		cancel()
		select {
		case err := <-done:
			if err != nil {
				require.ErrorIs(t, err, context.Canceled)
			}
		case <-time.After(wait):
			t.Errorf("ServeStdio did not return")
		}
		_ = inR.Close()
		_ = outR.Close()
		require.NoError(t, s.Close())
	})
	return cn, s
}

// proc is the test binary re-executed as mcp-testserver.
type proc struct {
	cmd    *exec.Cmd
	stderr *lineLog
	done   chan struct{} // closed once cmd.Wait returned; err is then set
	err    error
}

func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(wait):
		t.Fatalf("process did not exit within %s", wait)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// startProc starts the server process in its own process group; cleanup
// kills the group and reaps the process.
func startProc(t *testing.T, args ...string) (*proc, io.WriteCloser, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if os.Getenv("GORACE") == "" {
		// A race-enabled child otherwise sleeps a second before exiting.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{cmd: cmd, stderr: &lineLog{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p, stdin, stdout
}

// startProcClient starts the server process and connects a client to it.
func startProcClient(t *testing.T, args ...string) (*proc, *conn) {
	t.Helper()
	p, stdin, stdout := startProc(t, args...)
	raw := &lineLog{}
	cn := newConn(t, transport.NewIO(io.TeeReader(stdout, raw), stdin, nil), raw, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	t.Cleanup(func() { _ = cn.c.Close() })
	return p, cn
}

// callLogRecords reads the call log.
func callLogRecords(t *testing.T, path string) []CallRecord {
	t.Helper()
	recs, err := ReadCallLog(path)
	require.NoError(t, err)
	return recs
}
