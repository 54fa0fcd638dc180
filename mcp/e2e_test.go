package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

// End-to-end tests against real MCP servers from npm, pinned in
// testdata/npm/package.json and installed with `npm ci --prefix testdata/npm`.

// npmServer returns the command that runs the server script at rel (inside
// testdata/npm/node_modules) with the pinned Node. Without node_modules it
// skips, except in CI, where it fails.
func npmServer(t testing.TB, rel string, args ...string) []string {
	t.Helper()
	modules := filepath.Join(testutil.RepoRoot(), "testdata", "npm", "node_modules")
	node := filepath.Join(modules, ".bin", "node")
	script := filepath.Join(modules, filepath.FromSlash(rel))
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("%s missing; install the test servers with: npm ci --prefix testdata/npm", f)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return append([]string{node, script}, args...)
}

const everythingScript = "@modelcontextprotocol/server-everything/dist/index.js"

func npmLocal(name string, command []string) Spec {
	return Spec{Name: name, Type: Local, Command: command, Timeout: 20 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()}
}

func TestEverythingStdio(t *testing.T) {
	srv := npmLocal("everything", npmServer(t, everythingScript, "stdio"))
	start := time.Now()
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	t.Logf("connect+initialize+tools/list: %s", time.Since(start))
	defer func() {
		start := time.Now()
		require.NoError(t, s.Close())
		t.Logf("close: %s", time.Since(start))
		requireGroupGone(t, s.PID())
	}()

	requireDeclared(t, s)
	_, ok := findTool(s.Tools(), "mcp__everything__echo")
	require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"hello"}`), nil)
	require.NoError(t, err)
	require.Contains(t, textOf(t, res), "hello")
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNpmHTTP runs an npm server that listens on PORT and waits until the
// port accepts connections.
func startNpmHTTP(t *testing.T, command []string) int {
	t.Helper()
	port := freePort(t)
	cmd := startHTTPChild(t, command, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), fmt.Sprintf("PORT=%d", port)})
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { killGroup(cmd) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}, 20*time.Second, 20*time.Millisecond, "%s never listened on %s", command, addr)
	return port
}

func TestEverythingStreamableHTTP(t *testing.T) {
	port := startNpmHTTP(t, npmServer(t, everythingScript, "streamableHttp"))
	srv := Spec{
		Name: "everything", Type: Remote, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Transport: TransportAuto, Timeout: 20 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits(),
	}
	start := time.Now()
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	t.Logf("connect+initialize+tools/list: %s", time.Since(start))
	defer func() {
		start := time.Now()
		require.NoError(t, s.Close())
		t.Logf("close: %s", time.Since(start))
	}()

	requireDeclared(t, s)
	_, ok := findTool(s.Tools(), "mcp__everything__echo")
	require.True(t, ok)
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"over http"}`), nil)
	require.NoError(t, err)
	require.Contains(t, textOf(t, res), "over http")
}

func TestEverythingSSE(t *testing.T) {
	port := startNpmHTTP(t, npmServer(t, everythingScript, "sse"))
	srv := Spec{
		Name: "everything", Type: Remote, URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port),
		Transport: TransportAuto, Timeout: 20 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits(),
	}
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	require.NoError(t, err, "auto falls back to SSE")
	defer func() { require.NoError(t, s.Close()) }()
	requireDeclared(t, s)
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"over sse"}`), nil)
	require.NoError(t, err)
	require.Contains(t, textOf(t, res), "over sse")
}

func TestFilesystem(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk\n"), 0o600))
	// The server resolves symlinks in its roots; so must the path we ask for.
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	s := connect(t, npmLocal("filesystem", npmServer(t, "@modelcontextprotocol/server-filesystem/dist/index.js", dir)))

	requireDeclared(t, s)
	tl, ok := findTool(s.Tools(), "mcp__filesystem__read_text_file")
	require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
	require.True(t, tl.ReadOnly)
	tl, ok = findTool(s.Tools(), "mcp__filesystem__write_file")
	require.True(t, ok)
	require.False(t, tl.ReadOnly)

	args, err := json.Marshal(map[string]string{"path": filepath.Join(dir, "hello.txt")})
	require.NoError(t, err)
	res, err := s.CallTool(context.Background(), "read_text_file", args, nil)
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Contains(t, textOf(t, res), "hello from disk")
}

func TestMemory(t *testing.T) {
	srv := npmLocal("memory", npmServer(t, "@modelcontextprotocol/server-memory/dist/index.js"))
	srv.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	s := connect(t, srv)

	requireDeclared(t, s)
	ids := strings.Join(toolIDs(s.Tools()), " ")
	for _, want := range []string{"mcp__memory__create_entities", "mcp__memory__read_graph", "mcp__memory__search_nodes"} {
		require.Contains(t, ids, want)
	}
	_, err := s.CallTool(context.Background(), "create_entities",
		json.RawMessage(`{"entities":[{"name":"FreeCode","entityType":"project","observations":["speaks MCP"]}]}`), nil)
	require.NoError(t, err)
	res, err := s.CallTool(context.Background(), "read_graph", nil, nil)
	require.NoError(t, err)
	require.Contains(t, textOf(t, res), "speaks MCP")
}
