package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
)

// These tests run the gateway as a process of its own — the test binary
// re-executed with childEnv set, as `freecode mcp serve` runs it — under
// hosts no one here wrote: the official TypeScript SDK's client
// (testdata/sdkclient.mjs) over stdio and streamable HTTP.

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

// The environment of a gateway child: childEnv set makes the test binary
// the gateway of home childHome (config.json in it); childBuiltins lists
// the built-ins; childHTTP serves HTTP on that address with the token of
// the home; childAttach goes through the home's serve.
const (
	childEnv      = "FREECODE_GATEWAY_TEST_CHILD"
	childHome     = "FREECODE_GATEWAY_TEST_HOME"
	childBuiltins = "FREECODE_GATEWAY_TEST_BUILTINS"
	childHTTP     = "FREECODE_GATEWAY_TEST_HTTP"
	childAttach   = "FREECODE_GATEWAY_TEST_ATTACH"
	// childServer fronts that one server (Options.Server).
	childServer = "FREECODE_GATEWAY_TEST_SERVER"
	// childHTTPBounds sets the HTTP endpoint's read and idle timeouts
	// and its connection cap: "READ IDLE CONNS" (Go durations, a number).
	childHTTPBounds = "FREECODE_GATEWAY_TEST_HTTP_BOUNDS"
)

func TestMain(m *testing.M) {
	procguard.Dispatch()
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	testutil.Main(m, &testServerBin)
}

// runChild is the gateway child's main.
func runChild() int {
	home := os.Getenv(childHome)
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-1)}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src := schema.Sources{User: filepath.Join(home, "config.json"), Trust: schema.TrustPath(home)}
	opts := Options{Builtins: os.Getenv(childBuiltins) != "", Version: "test", Stdin: os.Stdin, Stdout: os.Stdout,
		ConfigPath: src.User, Logger: log.WithName("gateway"), Server: os.Getenv(childServer)}
	// As `freecode mcp serve` does: the file's mcp.limits bound what the
	// host sends.
	if v, err := schema.NewValidator(); err == nil {
		if cfg, err := v.LoadDesired(src, schema.LoadOptions{NoExpand: true}); err == nil {
			opts.MaxMessageBytes = cfg.MCP.Limits.MaxMessageBytes
		}
	}
	if b := os.Getenv(childHTTPBounds); b != "" {
		var read, idle string
		if _, err := fmt.Sscan(b, &read, &idle, &opts.HTTPMaxConns); err != nil {
			fmt.Fprintln(os.Stderr, childHTTPBounds, err)
			return 1
		}
		opts.HTTPReadTimeout, _ = time.ParseDuration(read)
		opts.HTTPIdleTimeout, _ = time.ParseDuration(idle)
	}
	if addr := os.Getenv(childHTTP); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		tok, err := LoadToken(home)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		opts.HTTP, opts.Token = ln, tok
		fmt.Fprintf(os.Stderr, "listening on %s\n", ln.Addr())
	}
	var attach api.Engine
	if os.Getenv(childAttach) != "" {
		c, err := api.Dial(api.SocketPath(home))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		attach = c
	}
	err := Run(ctx, opts, serve.Options{Home: home, Sources: src, Root: home, Logger: log, Stderr: os.Stderr}, attach)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	return 0
}

const waitFor = servetest.WaitFor

// npmFile is a file under testdata/npm/node_modules; the test is skipped
// when the npm packages are not installed.
func npmFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(testutil.RepoRoot(), "testdata/npm/node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("npm packages not installed (make deps): %v", err)
	}
	return p
}

// writeConfig writes home's config.json.
func writeConfig(t testing.TB, home string, cfg map[string]any) {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	tmp := filepath.Join(home, "config.json.tmp")
	require.NoError(t, os.WriteFile(tmp, b, 0o600))
	require.NoError(t, os.Rename(tmp, filepath.Join(home, "config.json")))
}

// testServer is a config entry for the test server with flags.
func testServer(name string, flags ...string) map[string]any {
	return servetest.Local(name, append([]string{testServerBin}, flags...)...)
}

// host is one sdkclient.mjs process and the gateway under it.
type host struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan map[string]any // answers to commands
	events chan map[string]any // notifications and requests of the gateway
	stderr *servetest.SyncBuffer
	done   chan struct{}
	// conn is the answer to connect: the server's info and instructions.
	conn map[string]any
}

// hostOptions configure startHost.
type hostOptions struct {
	// env is added to the host's (and so to a stdio gateway's)
	// environment.
	env []string
	// http, when set, connects to this URL with token instead of starting
	// the gateway over stdio.
	http, token string
}

// startHost starts the SDK client: over stdio it starts the gateway of
// home as its server. It fails the test unless the client connects.
func startHost(t *testing.T, home string, o hostOptions) *host {
	t.Helper()
	node := npmFile(t, ".bin/node")
	sdk := npmFile(t, "@modelcontextprotocol/sdk")
	args := []string{filepath.Join("testdata", "sdkclient.mjs")}
	if o.http != "" {
		args = append(args, "http", o.http, o.token)
	} else {
		args = append(args, "stdio", os.Args[0])
	}
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), "SDK_DIR="+sdk, childEnv+"=1", childHome+"="+home)
	cmd.Env = append(cmd.Env, o.env...)
	// An attached gateway's serve runs in this test process, as a child
	// subreaper that kills, within a second or two, every child of this
	// process in a process group of another (procguard.Subreaper): the
	// host of an attached gateway stays in the test's group.
	ownGroup := !slices.ContainsFunc(o.env, func(e string) bool { return strings.HasPrefix(e, childAttach+"=") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
	h := &host{t: t, cmd: cmd, lines: make(chan map[string]any, 64), events: make(chan map[string]any, 256),
		stderr: &servetest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h.in = stdin
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if _, ok := m["event"]; ok {
				h.events <- m
			} else {
				h.lines <- m
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		h.in.Close()
		select {
		case <-h.done:
		case <-time.After(waitFor):
			if ownGroup {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			} else {
				// The gateway ends with its stdin, the host's pipe.
				_ = cmd.Process.Kill()
			}
			<-h.done
		}
		if t.Failed() {
			t.Logf("host and gateway stderr:\n%s", h.stderr.String())
		}
	})
	h.conn = h.answer("connect")
	require.Nil(t, h.conn["error"], "connect: %v\n%s", h.conn["error"], h.stderr.String())
	return h
}

// send writes one command.
func (h *host) send(cmd map[string]any) {
	h.t.Helper()
	b, err := json.Marshal(cmd)
	require.NoError(h.t, err)
	_, err = h.in.Write(append(b, '\n'))
	require.NoError(h.t, err)
}

// answer waits for the next answer, which must be to op.
func (h *host) answer(op string) map[string]any {
	h.t.Helper()
	select {
	case m := <-h.lines:
		require.Equal(h.t, op, m["op"], "answer %v", m)
		return m
	case <-h.done:
		h.t.Fatalf("the host ended waiting for %s:\n%s", op, h.stderr.String())
	case <-time.After(waitFor):
		h.t.Fatalf("no answer to %s within %s:\n%s", op, waitFor, h.stderr.String())
	}
	return nil
}

// tools lists the tools by name.
func (h *host) tools() map[string]map[string]any {
	h.t.Helper()
	h.send(map[string]any{"op": "list"})
	m := h.answer("list")
	require.Nil(h.t, m["error"])
	out := map[string]map[string]any{}
	for _, x := range m["tools"].([]any) {
		tool := x.(map[string]any)
		out[tool["name"].(string)] = tool
	}
	return out
}

// call calls a tool and returns the result (or fails on a protocol error).
func (h *host) call(name string, args map[string]any, progress bool) map[string]any {
	h.t.Helper()
	h.send(map[string]any{"op": "call", "name": name, "args": args, "progress": progress})
	m := h.answer("call")
	require.Nil(h.t, m["error"], "call %s", name)
	return m["result"].(map[string]any)
}

// event waits for the next event, which must be of kind.
func (h *host) event(kind string) map[string]any {
	h.t.Helper()
	select {
	case m := <-h.events:
		require.Equal(h.t, kind, m["event"], "event %v", m)
		return m
	case <-time.After(waitFor):
		h.t.Fatalf("no %s event within %s:\n%s", kind, waitFor, h.stderr.String())
	}
	return nil
}

// waitTools lists the tools until cond holds for them, waiting for a
// tools_changed event between lists; it returns the list.
func (h *host) waitTools(what string, cond func(map[string]map[string]any) bool) map[string]map[string]any {
	h.t.Helper()
	deadline := time.After(waitFor)
	for {
		tools := h.tools()
		if cond(tools) {
			return tools
		}
		select {
		case m := <-h.events:
			require.Equal(h.t, "tools_changed", m["event"], "event %v", m)
		case <-deadline:
			h.t.Fatalf("waiting for %s; tools %v\n%s", what, keys(tools), h.stderr.String())
		}
	}
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// text is the text of a result's blocks.
func text(res map[string]any) string {
	var parts []string
	for _, c := range res["content"].([]any) {
		if s, ok := c.(map[string]any)["text"].(string); ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// noEvents asserts that no event is pending.
func (h *host) noEvents() {
	h.t.Helper()
	select {
	case m := <-h.events:
		h.t.Fatalf("unexpected event %v", m)
	default:
	}
}

// waitLog waits until the host's stderr (the gateway's log) has s.
func (h *host) waitLog(s string) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return strings.Contains(h.stderr.String(), s) }, waitFor, 10*time.Millisecond,
		"waiting for %q in the log:\n%s", s, h.stderr.String())
}
