package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/internal/testutil"
)

// collector is the OpenTelemetry Collector's OTLP receiver
// (testdata/otelcol: the collector's own Go modules, not ours), receiving
// on a loopback port; spans holds every span it received.
type collector struct {
	addr  string
	lines chan string
}

// startCollector builds and runs testdata/otelcol. The first build
// compiles the collector's modules (about a minute on 2 cores); the build
// cache makes later ones seconds.
func startCollector(t *testing.T) *collector {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "otelcol")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(testutil.RepoRoot(), "testdata", "otelcol")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the collector:\n%s", out)
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = testutil.LogWriter(t)
	require.NoError(t, cmd.Start())
	c := &collector{lines: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the collector stops when its stdin closes
		for range c.lines {
		}
		<-done
		_ = cmd.Wait()
	})
	select {
	case l := <-c.lines:
		addr, ok := strings.CutPrefix(l, "listening ")
		require.True(t, ok, "collector said %q", l)
		c.addr = addr
	case <-time.After(waitFor):
		t.Fatal("the collector did not start listening")
	}
	return c
}

// span is the part of an OTLP JSON span the test reads.
type span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

func (s span) attr(k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value.StringValue
		}
	}
	return ""
}

// waitSpans reads what the collector received until the spans of trace
// named by want are all there, and returns them by name.
func (c *collector) waitSpans(t *testing.T, trace string, want ...string) map[string]span {
	t.Helper()
	got := map[string]span{}
	deadline := time.After(waitFor)
	for {
		missing := false
		for _, n := range want {
			if _, ok := got[n]; !ok {
				missing = true
			}
		}
		if !missing {
			return got
		}
		select {
		case l, ok := <-c.lines:
			require.True(t, ok, "the collector stopped")
			body, ok := strings.CutPrefix(l, "traces ")
			if !ok {
				continue
			}
			var td struct {
				ResourceSpans []struct {
					ScopeSpans []struct {
						Spans []span `json:"spans"`
					} `json:"scopeSpans"`
				} `json:"resourceSpans"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &td))
			for _, rs := range td.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						if strings.EqualFold(s.TraceID, trace) {
							got[s.Name] = s
						}
					}
				}
			}
		case <-deadline:
			t.Fatalf("the collector did not receive spans %v of trace %s; got %v", want, trace, got)
		}
	}
}

// A call through the gateway from a host that sends a traceparent is one
// trace at a real collector: the host's span is the parent of the
// gateway's SERVER span, under which run the orchestrator's execute_tool
// span and the MCP CLIENT span, whose context the server receives in its
// request's _meta. It holds with the servers in the gateway's process and
// with the gateway attached to serve, over its socket.
func TestTraceRunsHostToServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the OpenTelemetry Collector's receiver")
	}
	col := startCollector(t)
	bin := buildTestServer(t)
	for _, mode := range []string{"in process", "attached"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+col.addr)
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
			t.Setenv("OTEL_SERVICE_NAME", "freecode-e2e")
			home := shortHome(t)
			calls := filepath.Join(t.TempDir(), "calls.jsonl")
			servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(cfg(local("ts", bin, "--call-log", calls)), false)
			args := []string{"mcp", "serve", "--no-attach"}
			if mode == "attached" {
				startServe(t, home).api().WaitPhase("ts", "ready")
				args = []string{"mcp", "serve"}
			}
			host, err := client.NewStdioMCPClient("freecode", []string{"FREECODE_HOME=" + home}, args...)
			require.NoError(t, err)
			// mcp-go closes the gateway's stderr before it exits: its exit
			// status is a broken pipe, which says nothing here.
			defer func() { _ = host.Close() }()
			ctx, cancel := context.WithTimeout(t.Context(), waitFor)
			defer cancel()
			init := mcpgo.InitializeRequest{}
			init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcpgo.Implementation{Name: "host", Version: "1"}
			_, err = host.Initialize(ctx, init)
			require.NoError(t, err)

			const trace, hostSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "ts__echo"
			req.Params.Arguments = map[string]any{"text": "secret-argument"}
			req.Params.Meta = &mcpgo.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + trace + "-" + hostSpan + "-01"}}
			res, err := host.CallTool(ctx, req)
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)

			spans := col.waitSpans(t, trace, "tools/call ts__echo", "execute_tool mcp__ts__echo", "tools/call echo")
			gw, tool, cl := spans["tools/call ts__echo"], spans["execute_tool mcp__ts__echo"], spans["tools/call echo"]
			require.Equal(t, hostSpan, gw.ParentSpanID, "the gateway's span is the host's child")
			require.Equal(t, 2, gw.Kind, "SERVER")
			require.Equal(t, gw.SpanID, tool.ParentSpanID, "the orchestrator's span is the gateway's child")
			require.Equal(t, tool.SpanID, cl.ParentSpanID, "the MCP client span is the orchestrator's child")
			require.Equal(t, 3, cl.Kind, "CLIENT")
			require.Equal(t, "tools/call", cl.attr("mcp.method.name"))
			require.Equal(t, "echo", cl.attr("gen_ai.tool.name"))
			require.Equal(t, "ts", cl.attr("freecode.mcp.server"))
			require.Equal(t, "pipe", cl.attr("network.transport"))
			require.NotEmpty(t, cl.attr("mcp.protocol.version"))
			for _, s := range spans {
				b, _ := json.Marshal(s)
				require.NotContains(t, string(b), "secret-argument", "arguments are never recorded")
			}

			recs, err := testserver.ReadCallLog(calls)
			require.NoError(t, err)
			require.NotEmpty(t, recs)
			require.Equal(t, "00-"+trace+"-"+strings.ToLower(cl.SpanID)+"-01", recs[0].Meta["traceparent"],
				"the server received the client span's context")
		})
	}
}
