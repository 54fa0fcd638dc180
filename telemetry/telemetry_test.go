package telemetry

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestOffUntilConfigured(t *testing.T) {
	require.False(t, Enabled(Config{Getenv: env(nil)}))
	require.True(t, Enabled(Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"})}))
	require.True(t, Enabled(Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x:4318/v1/traces"})}))
	require.True(t, Enabled(Config{Enabled: true, Getenv: env(nil)}))
	require.False(t, Enabled(Config{Enabled: true, Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"})}))
	_, err := New(t.Context(), Config{Enabled: true, Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})})
	require.ErrorIs(t, err, ErrUnsupportedProtocol)
	var nilT *Telemetry
	ctx, s := nilT.StartClient(t.Context(), Request{Method: "tools/call"})
	require.Equal(t, t.Context(), ctx)
	s.End("x", 1)
	require.NoError(t, nilT.Shutdown(t.Context()))
}

// A host's trace context goes on to the server even with telemetry off;
// a request without one gets no _meta.
func TestMetaCarriesTheTraceContext(t *testing.T) {
	in := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "k=v"}
	ctx := ExtractMeta(t.Context(), in)
	sc := trace.SpanContextFromContext(ctx)
	require.True(t, sc.IsRemote())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	ctx, span := Off().StartClient(ctx, Request{Method: "tools/call", Tool: "echo"})
	params := map[string]any{"name": "echo"}
	InjectMeta(ctx, params)
	span.End("", 0)
	require.Equal(t, in, params["_meta"])

	bare := map[string]any{"name": "echo"}
	InjectMeta(t.Context(), bare)
	require.NotContains(t, bare, "_meta")
	require.Equal(t, t.Context(), ExtractMeta(t.Context(), map[string]any{"progressToken": "p"}))
}

// A collector that accepts and never answers blocks no call and holds no
// more than the bounded queue; Shutdown gives up within its ctx.
func TestBlackHoledCollectorBlocksNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	stop := make(chan struct{})
	conns.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { <-stop; c.Close() })
		}
	})
	defer func() { ln.Close(); close(stop); conns.Wait() }()

	tel, err := New(t.Context(), Config{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(), "OTEL_BSP_SCHEDULE_DELAY": "10",
		"OTEL_BSP_MAX_QUEUE_SIZE": "64"})})
	require.NoError(t, err)
	require.True(t, tel.On())
	const n = 20000
	start := time.Now()
	for range n {
		ctx, ts := tel.StartTool(t.Context(), ToolCall{Tool: "mcp__s__t", Server: "s"})
		_, rs := tel.StartClient(ctx, Request{Method: "tools/call", Tool: "t", Server: "s"})
		rs.End("", 0)
		ts.End("", 1)
	}
	per := time.Since(start) / n
	t.Logf("%v per call's two spans and metrics with the collector black-holed", per)
	require.Less(t, per, time.Millisecond, "a span never waits for the collector")

	sctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_ = tel.Shutdown(sctx)
	require.Less(t, time.Since(begin), 2*time.Second, "Shutdown is bounded by its ctx")
}
