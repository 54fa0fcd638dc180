package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

func TestHostileFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{StdoutFlood: "later"}, `--stdout-flood-no-newline "later": want start or call`},
		{Config{HTTPAttack: AttackSSELine}, "--http-attack needs --http ADDR"},
		{Config{HTTP: "127.0.0.1:0", HTTPAttack: "slow"}, `--http-attack "slow": want error-body or sse-line`},
		{Config{HTTP: "127.0.0.1:0", SSE: true, HTTPAttack: AttackErrorBody}, "--http-attack error-body is for streamable HTTP, not --sse"},
		{Config{FloodBytes: -1}, "--flood-bytes -1: must not be negative"},
		{Config{DescriptionBytes: -1}, "--description-bytes -1: must not be negative"},
	} {
		_, err := tc.cfg.withDefaults()
		require.EqualError(t, err, tc.want)
	}
}

func TestDescriptionBytes(t *testing.T) {
	cn, _ := startInProcess(t, Config{DescriptionBytes: 5000}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	res, err := cn.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	for _, tl := range res.Tools {
		if tl.Name == "echo" {
			require.Len(t, tl.Description, 5000)
			return
		}
	}
	t.Fatal("no echo tool")
}

func TestEndlessPages(t *testing.T) {
	cn, _ := startInProcess(t, Config{EndlessPages: true, PageSize: 3}, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	cn.mustInitialize(t)
	req := mcp.ListToolsRequest{}
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for page := range 5 {
		res, err := cn.c.ListToolsByPage(ctx, req)
		require.NoError(t, err)
		require.Len(t, res.Tools, 3)
		for _, tl := range res.Tools {
			require.False(t, seen[tl.Name], "tool %s listed twice", tl.Name)
			seen[tl.Name] = true
		}
		require.Equal(t, "page"+string(rune('0'+page))+"_tool0", res.Tools[0].Name)
		require.NotEmpty(t, res.NextCursor)
		req.Params.Cursor = res.NextCursor
	}
}

func TestStdoutFloodAtStart(t *testing.T) {
	// The process exits after the flood: Output reads all of it before
	// reaping, which a StdoutPipe read racing Wait would not.
	cmd := exec.Command(os.Args[0], "--stdout-flood-no-newline", "start", "--flood-bytes", "300000")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE=atexit_sleep_ms=0")
	b, err := cmd.Output()
	require.NoError(t, err)
	require.Len(t, b, 300000)
	require.NotContains(t, string(b), "\n")
}

func TestStdoutFloodOnCall(t *testing.T) {
	_, stdin, stdout := startProc(t, "--stdout-flood-no-newline", "call", "--flood-bytes", "300000")
	defer stdin.Close()
	out := bufio.NewReader(stdout)
	send := func(msg string) { _, err := io.WriteString(stdin, msg+"\n"); require.NoError(t, err) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"protocolVersion"`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	flood := make([]byte, 300000)
	_, err = io.ReadFull(out, flood)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("x", len(flood)), string(flood))
}

func TestHTTPAttacks(t *testing.T) {
	start := func(t *testing.T, args ...string) string {
		_, stdin, stdout := startProc(t, append([]string{"--http", "127.0.0.1:0", "--flood-bytes", "300000"}, args...)...)
		t.Cleanup(func() { stdin.Close() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		require.True(t, ok, line)
		return u
	}
	t.Run("error body", func(t *testing.T) {
		u := start(t, "--http-attack", "error-body")
		resp, err := http.Post(u, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Len(t, b, len("internal error: ")+300000)
	})
	t.Run("legacy sse line", func(t *testing.T) {
		u := start(t, "--sse", "--http-attack", "sse-line")
		resp, err := http.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "data: "+strings.Repeat("x", 300000), string(b))
	})
	t.Run("endless pages over http", func(t *testing.T) {
		u := start(t, "--endless-pages")
		resp, err := http.Post(u, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"page-41"}}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		var page struct {
			ID     int `json:"id"`
			Result struct {
				Tools      []struct{ Name string } `json:"tools"`
				NextCursor string                  `json:"nextCursor"`
			} `json:"result"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		require.Equal(t, 7, page.ID)
		require.Len(t, page.Result.Tools, defaultEndlessPageSize)
		require.Equal(t, "page41_tool0", page.Result.Tools[0].Name)
		require.Equal(t, "page-42", page.Result.NextCursor)
	})
}
