package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
)

// recordingTelemetry is telemetry on, its spans kept in memory as they
// end (a synchronous processor: no goroutine, nothing to wait for).
func recordingTelemetry(t *testing.T) (*telemetry.Telemetry, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return telemetry.FromProviders(tp, metricnoop.NewMeterProvider()), rec
}

func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// A connect is one trace: the handshake's requests (initialize, the
// lists, server/discover when the revision is probed) are children of
// its "connect" span, not root spans each.
func TestConnectIsOneTrace(t *testing.T) {
	tel, rec := recordingTelemetry(t)
	s, err := Connect(context.Background(), localServer("r", "--resources", "1", "--prompts", "1"), Options{Logger: testLogger(t), Telemetry: tel})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	connects := spansNamed(rec, "connect r")
	require.Len(t, connects, 1)
	c := connects[0]
	require.False(t, c.Parent().IsValid(), "connect is the root")
	require.Equal(t, trace.SpanKindInternal, c.SpanKind())
	children := map[string]bool{}
	for _, sp := range rec.Ended() {
		if sp.SpanContext().SpanID() == c.SpanContext().SpanID() {
			continue
		}
		require.Equal(t, c.SpanContext().TraceID(), sp.SpanContext().TraceID(), "span %q is in the connect's trace", sp.Name())
		require.Equal(t, c.SpanContext().SpanID(), sp.Parent().SpanID(), "span %q is the connect's child", sp.Name())
		children[sp.Name()] = true
	}
	require.True(t, children["initialize"], "spans: %v", children)
	require.True(t, children["tools/list"], "spans: %v", children)
}

// The gateway's resources/read and prompts/get take the host's trace
// context from _meta as tools/call does: their SERVER spans are the
// host's span's children, and the context goes on to the server.
func TestGatewayReadAndPromptCarryTheHostsTrace(t *testing.T) {
	tel, rec := recordingTelemetry(t)
	const traceID, hostSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var seen []trace.SpanContext
	g := NewGateway(GatewayOptions{Name: "t", Version: "0", Logger: logr.Discard(), Telemetry: tel,
		Call: func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil },
		Read: func(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
			seen = append(seen, trace.SpanContextFromContext(ctx))
			text := "x"
			return []wire.ResourceContent{{URI: uri, Text: &text}}, nil
		},
		GetPrompt: func(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
			seen = append(seen, trace.SpanContextFromContext(ctx))
			return wire.PromptResult{}, nil
		},
	})
	meta := &mcpgo.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + traceID + "-" + hostSpan + "-01"}}

	rr := mcpgo.ReadResourceRequest{}
	rr.Params.URI, rr.Params.Meta = "test://secret/path", meta
	_, err := g.readHandler()(context.Background(), rr)
	require.NoError(t, err)
	pr := mcpgo.GetPromptRequest{}
	pr.Params.Name, pr.Params.Meta = "p", meta
	_, err = g.promptHandler("p")(context.Background(), pr)
	require.NoError(t, err)

	require.Len(t, seen, 2)
	for i, name := range []string{"resources/read", "prompts/get p"} {
		spans := spansNamed(rec, name)
		require.Len(t, spans, 1, name)
		sp := spans[0]
		require.Equal(t, trace.SpanKindServer, sp.SpanKind())
		require.Equal(t, traceID, sp.SpanContext().TraceID().String())
		require.Equal(t, hostSpan, sp.Parent().SpanID().String())
		require.Equal(t, sp.SpanContext().SpanID(), seen[i].SpanID(), "the server's request goes on under the gateway's span")
		for _, a := range sp.Attributes() {
			require.NotContains(t, a.Value.String(), "secret", "the URI is not recorded")
		}
	}
}

// A tool call's arguments and result are span attributes for a server the
// user named in mcp.telemetry.recordArguments, and for no other.
func TestRecordArgumentsIsPerServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record []string
		want   bool
	}{{"named", []string{"rec"}, true}, {"another named", []string{"other"}, false}, {"none", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tel := telemetry.FromProviders(tp, metricnoop.NewMeterProvider(), tc.record...)
			s, err := Connect(context.Background(), localServer("rec"), Options{Logger: testLogger(t), Telemetry: tel})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"the words"}`), nil)
			require.NoError(t, err)
			calls := spansNamed(rec, "tools/call echo")
			require.Len(t, calls, 1)
			attrs := map[attribute.Key]string{}
			for _, kv := range calls[0].Attributes() {
				attrs[kv.Key] = kv.Value.String()
			}
			args, hasArgs := attrs[telemetry.KeyToolCallArguments]
			result, hasResult := attrs[telemetry.KeyToolCallResult]
			require.Equal(t, tc.want, hasArgs)
			require.Equal(t, tc.want, hasResult)
			if tc.want {
				require.JSONEq(t, `{"text":"the words"}`, args)
				require.Contains(t, result, "the words")
			}
		})
	}
}
