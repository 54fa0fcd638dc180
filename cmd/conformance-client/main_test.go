package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/freecode/freecode/mcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLookupScenario(t *testing.T) {
	for _, name := range []string{"initialize", "tools_call", "sse-retry"} {
		sc, err := lookupScenario(name)
		require.NoError(t, err, name)
		require.Equal(t, name, sc.Name)
	}
	_, err := lookupScenario("")
	require.ErrorContains(t, err, "MCP_CONFORMANCE_SCENARIO")
	_, err = lookupScenario("auth/basic")
	require.ErrorContains(t, err, `unknown scenario "auth/basic"`)
}

func TestCheckResult(t *testing.T) {
	call := toolCall{Tool: "add_numbers", WantText: "is 8"}
	tests := []struct {
		name    string
		res     *mcp.CallResult
		wantErr string
	}{
		{"expected text", wireResult(t, mcpgo.NewToolResultText("The sum of 5 and 3 is 8")), ""},
		{"text among other content", wireResult(t, &mcpgo.CallToolResult{Content: []mcpgo.Content{
			mcpgo.NewImageContent("AA==", "image/png"), mcpgo.NewTextContent("it is 8"),
		}}), ""},
		{"tool error", wireResult(t, mcpgo.NewToolResultError("bad a")), `reported an error: "bad a"`},
		{"wrong text", wireResult(t, mcpgo.NewToolResultText("is 9")), `does not contain "is 8"`},
		{"no result", nil, "empty result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkResult(call, tt.res)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// wireResult is res as a session returns it: its wire form, decoded.
func wireResult(t *testing.T, res *mcpgo.CallToolResult) *mcp.CallResult {
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var out mcp.CallResult
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

// startServer serves an in-process MCP server over streamable HTTP that
// offers add_numbers, which answers with sum(a, b)'s result text, and returns
// its URL.
func startServer(t *testing.T, sum func(a, b float64) float64) string {
	t.Helper()
	s := server.NewMCPServer("conformance-test", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("add_numbers",
		mcpgo.WithNumber("a", mcpgo.Required()),
		mcpgo.WithNumber("b", mcpgo.Required()),
	), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		a, err := req.RequireFloat("a")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		b, err := req.RequireFloat("b")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		return mcpgo.NewToolResultText(fmt.Sprintf("The sum of %g and %g is %g", a, b, sum(a, b))), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func TestRun(t *testing.T) {
	add := func(a, b float64) float64 { return a + b }
	tests := []struct {
		name       string
		sum        func(a, b float64) float64
		args       []string
		env        string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{name: "initialize", sum: add, env: "initialize", wantOut: "scenario initialize: ok"},
		{name: "tools_call", sum: add, env: "tools_call", wantOut: "tools/call add_numbers: ok"},
		{name: "flag overrides env", sum: add, args: []string{"-scenario", "tools_call"}, env: "initialize",
			wantOut: "scenario tools_call: ok"},
		{name: "wrong result", sum: func(a, b float64) float64 { return a - b }, env: "tools_call",
			wantStatus: 1, wantErr: `result text "The sum of 5 and 3 is 2" does not contain "The sum of 5 and 3 is 8"`},
		{name: "tool not listed", sum: add, env: "sse-retry",
			wantStatus: 1, wantErr: `server did not list tool "test_reconnection" (listed: [add_numbers])`},
		{name: "no scenario", sum: add, wantStatus: 2, wantErr: "no scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := startServer(t, tt.sum)
			var stdout, stderr bytes.Buffer
			status := run(append(tt.args, url), tt.env, &stdout, &stderr)
			require.Equal(t, tt.wantStatus, status, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			require.Contains(t, stdout.String(), tt.wantOut)
			require.Contains(t, stderr.String(), tt.wantErr)
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	hs := httptest.NewServer(nil)
	url := hs.URL
	hs.Close() // nothing listens there any more
	var stdout, stderr bytes.Buffer
	status := run([]string{"-timeout", "2s", url}, "initialize", &stdout, &stderr)
	require.Equal(t, 1, status)
	require.Contains(t, stderr.String(), "conformance-client: scenario initialize: connect:")
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(nil, "initialize", &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage: conformance-client")
}
