package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the semantic conventions for MCP and GenAI tools
// (semantic-conventions-genai, docs/gen-ai/mcp.md and gen-ai-spans.md;
// status: development, so they are spelled here rather than taken from a
// semconv package that no longer carries them), and FreeCode's own,
// under freecode.*.
const (
	KeyMethod          = attribute.Key("mcp.method.name")
	KeyProtocolVersion = attribute.Key("mcp.protocol.version")
	KeyRequestID       = attribute.Key("jsonrpc.request.id")
	KeyRPCStatusCode   = attribute.Key("rpc.response.status_code")
	KeyOperation       = attribute.Key("gen_ai.operation.name")
	KeyToolName        = attribute.Key("gen_ai.tool.name")
	KeyToolCallID      = attribute.Key("gen_ai.tool.call.id")
	// KeyToolCallArguments and KeyToolCallResult are a tool call's
	// arguments and result, only for a server the user named in
	// mcp.telemetry.recordArguments (RequestSpan.RecordCall).
	KeyToolCallArguments = attribute.Key("gen_ai.tool.call.arguments")
	KeyToolCallResult    = attribute.Key("gen_ai.tool.call.result")
	KeyToolType          = attribute.Key("gen_ai.tool.type")
	KeyPromptName        = attribute.Key("gen_ai.prompt.name")
	KeyErrorType         = semconv.ErrorTypeKey
	// KeyServer is the configured name of the MCP server a request goes
	// to (no convention names it).
	KeyServer = attribute.Key("freecode.mcp.server")
	// KeyDecision and KeyRule are a tool call's permission decision
	// (allow, ask, deny) and the rule that made it ("" none).
	KeyDecision = attribute.Key("freecode.permission.decision")
	KeyRule     = attribute.Key("freecode.permission.rule")
	// KeyApproved is the approval's outcome; KeyAttempts how many times
	// a call ran; KeyCapped that its result went over the output cap.
	KeyApproved = attribute.Key("freecode.approval.approved")
	KeyAttempts = attribute.Key("freecode.call.attempts")
	KeyCapped   = attribute.Key("freecode.output.capped")
)

// Error types FreeCode records (error.type), beside a JSON-RPC error's
// code.
const (
	ErrorTool      = "tool_error" // the tool answered isError
	ErrorTransport = "transport"
	ErrorTimeout   = "timeout"
	ErrorCancelled = "cancelled"
	ErrorOther     = "_OTHER"
)

// OperationExecuteTool is gen_ai.operation.name of a tool call.
const OperationExecuteTool = "execute_tool"

// Transports, as network.transport has them.
const (
	TransportPipe = "pipe" // stdio
	TransportTCP  = "tcp"  // streamable HTTP, SSE
)

// Request is one MCP request, as its span is named and attributed.
type Request struct {
	// Method is mcp.method.name ("tools/call").
	Method string
	// Tool is the tool a tools/call calls, the server's own name for it;
	// Prompt the prompt of a prompts/get. Either is the span name's
	// target.
	Tool, Prompt string
	// Server is the configured name of the server ("" for the gateway's
	// own requests).
	Server string
	// Transport is TransportPipe or TransportTCP ("" unknown).
	Transport string
	// Protocol is the protocol revision the session speaks ("" not yet).
	Protocol string
	// ID is the JSON-RPC request id.
	ID string
}

func (r Request) name() string {
	switch {
	case r.Tool != "":
		return r.Method + " " + r.Tool
	case r.Prompt != "":
		return r.Method + " " + r.Prompt
	}
	return r.Method
}

func (r Request) attrs() []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 8)
	a = append(a, KeyMethod.String(r.Method))
	if r.Tool != "" {
		a = append(a, KeyToolName.String(r.Tool), KeyOperation.String(OperationExecuteTool))
	}
	if r.Prompt != "" {
		a = append(a, KeyPromptName.String(r.Prompt))
	}
	if r.Server != "" {
		a = append(a, KeyServer.String(r.Server))
	}
	if r.Transport != "" {
		a = append(a, semconv.NetworkTransportKey.String(r.Transport))
		if r.Transport == TransportTCP {
			a = append(a, semconv.NetworkProtocolName("http"))
		}
	}
	if r.Protocol != "" {
		a = append(a, KeyProtocolVersion.String(r.Protocol))
	}
	if r.ID != "" {
		a = append(a, KeyRequestID.String(r.ID))
	}
	return a
}

// metricAttrs are the attributes of r the duration histograms keep: the
// low-cardinality ones.
func (r Request) metricAttrs(errType string) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 4)
	a = append(a, KeyMethod.String(r.Method))
	if r.Tool != "" {
		a = append(a, KeyToolName.String(r.Tool))
	}
	if r.Server != "" {
		a = append(a, KeyServer.String(r.Server))
	}
	if errType != "" {
		a = append(a, KeyErrorType.String(errType))
	}
	return a
}

// RequestSpan is the span of one MCP request; its zero value (telemetry
// off) does nothing.
type RequestSpan struct {
	t     *Telemetry
	span  trace.Span
	req   Request
	start time.Time
	hist  metric.Float64Histogram
}

// StartClient starts the CLIENT span of a request FreeCode sends to a
// server and returns ctx with it, whose trace context InjectMeta then
// writes into the request's _meta. Off: ctx as it is and a span that does
// nothing (a host's trace context in ctx still goes on to the server).
func (t *Telemetry) StartClient(ctx context.Context, r Request) (context.Context, RequestSpan) {
	if !t.On() {
		return ctx, RequestSpan{}
	}
	ctx, span := t.tracer.Start(ctx, r.name(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(r.attrs()...))
	return ctx, RequestSpan{t: t, span: span, req: r, start: time.Now(), hist: t.inst.clientDuration}
}

// MethodConnect names the INTERNAL span of a server's connect (see
// StartConnect); it is no MCP method and has no duration histogram.
const MethodConnect = "connect"

// StartConnect starts the INTERNAL span of connecting to a server (start
// or dial, initialize, the lists that follow), the parent of the
// handshake's CLIENT spans so that a connect is one trace rather than a
// root span per request. r names the server and its transport; its
// Method is MethodConnect whatever it says. It records no metric: the
// servers' starts are counted from the status.
func (t *Telemetry) StartConnect(ctx context.Context, r Request) (context.Context, RequestSpan) {
	if !t.On() {
		return ctx, RequestSpan{}
	}
	r.Method, r.Tool, r.Prompt = MethodConnect, "", ""
	attrs := r.attrs()[1:] // not mcp.method.name: connect is no MCP method
	ctx, span := t.tracer.Start(ctx, MethodConnect+" "+r.Server, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, RequestSpan{t: t, span: span, req: r, start: time.Now()}
}

// StartServer starts the SERVER span of a request a host sent the gateway,
// under ctx (ExtractMeta of its _meta: the host's span is its parent).
func (t *Telemetry) StartServer(ctx context.Context, r Request) (context.Context, RequestSpan) {
	if !t.On() {
		return ctx, RequestSpan{}
	}
	ctx, span := t.tracer.Start(ctx, r.name(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(r.attrs()...))
	return ctx, RequestSpan{t: t, span: span, req: r, start: time.Now(), hist: t.inst.serverDuration}
}

// Recording reports whether the span records: what is worth computing
// only for it (decoding a result's isError) is skipped otherwise.
func (s RequestSpan) Recording() bool { return s.span != nil && s.span.IsRecording() }

// MaxRecordedBytes bounds a recorded argument or result attribute; the
// rest is cut, and the cut says how large the whole was.
const MaxRecordedBytes = 4 << 10

// RecordCall puts a tool call's arguments and result (the JSON as sent
// and answered; nil: left out) on the span as attributes, each cut to
// MaxRecordedBytes at a character boundary. Callers record only for a
// server the user opted in (Telemetry.RecordsArguments).
func (s RequestSpan) RecordCall(args, result []byte) {
	if !s.Recording() {
		return
	}
	if args != nil {
		s.span.SetAttributes(KeyToolCallArguments.String(cutRecorded(args)))
	}
	if result != nil {
		s.span.SetAttributes(KeyToolCallResult.String(cutRecorded(result)))
	}
}

// cutRecorded is b as text, cut to MaxRecordedBytes at a character
// boundary with a note of the whole size when longer.
func cutRecorded(b []byte) string {
	if len(b) <= MaxRecordedBytes {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	cut := MaxRecordedBytes
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD") + fmt.Sprintf("…(cut: %d bytes in all)", len(b))
}

// End ends the span and records its duration. errType is error.type, ""
// when the request succeeded; code, when not 0, is the JSON-RPC error
// code the server answered (rpc.response.status_code). A message is never
// recorded: it may quote arguments.
func (s RequestSpan) End(errType string, code int) {
	if s.span == nil {
		return
	}
	if code != 0 {
		s.span.SetAttributes(KeyRPCStatusCode.String(strconv.Itoa(code)))
	}
	if errType != "" {
		s.span.SetAttributes(KeyErrorType.String(errType))
		s.span.SetStatus(codes.Error, errType)
	}
	s.span.End()
	if s.hist == nil {
		return
	}
	s.hist.Record(context.Background(), time.Since(s.start).Seconds(), metric.WithAttributes(s.req.metricAttrs(errType)...))
}

// ErrorType is error.type of err: ErrorTimeout and ErrorCancelled for a
// context's ends, else ErrorOther ("" for nil).
func ErrorType(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return ""
	case ctx.Err() == context.DeadlineExceeded:
		return ErrorTimeout
	case ctx.Err() != nil:
		return ErrorCancelled
	}
	return ErrorOther
}
