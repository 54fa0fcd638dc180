package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ToolCall is one tool call through the orchestrator, as its span is named
// and attributed.
type ToolCall struct {
	// Tool is the tool's id (mcp__server__tool, or a built-in's name):
	// gen_ai.tool.name, the name the model calls it by.
	Tool string
	// Server is the MCP server the tool comes from ("" for a built-in).
	Server string
	// CallID is the model's call id ("" none).
	CallID string
}

// ToolSpan is the span of one tool call, from its checks to its outcome;
// its zero value (telemetry off) does nothing. Its steps (validation,
// the approval's wait, the output cap) are child spans; the server call's
// MCP CLIENT span is a child of the context StartTool returned.
type ToolSpan struct {
	t     *Telemetry
	span  trace.Span
	call  ToolCall
	start time.Time
}

// StartTool starts the INTERNAL span "execute_tool {tool}" of c and
// returns ctx with it: the call's steps and its server request are run
// under that ctx. Off: ctx as it is and a span that does nothing.
func (t *Telemetry) StartTool(ctx context.Context, c ToolCall) (context.Context, ToolSpan) {
	if !t.On() {
		return ctx, ToolSpan{}
	}
	attrs := []attribute.KeyValue{KeyOperation.String(OperationExecuteTool), KeyToolName.String(c.Tool)}
	if c.Server != "" {
		attrs = append(attrs, KeyServer.String(c.Server), KeyToolType.String("extension"))
	} else {
		attrs = append(attrs, KeyToolType.String("function"))
	}
	if c.CallID != "" {
		attrs = append(attrs, KeyToolCallID.String(c.CallID))
	}
	ctx, span := t.tracer.Start(ctx, OperationExecuteTool+" "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, ToolSpan{t: t, span: span, call: c, start: time.Now()}
}

// Decision records the permission decision (allow, ask, deny) and the
// rule that made it ("" none).
func (s ToolSpan) Decision(action, rule string) {
	if s.span == nil {
		return
	}
	s.span.AddEvent("permission", trace.WithAttributes(KeyDecision.String(action), KeyRule.String(rule)))
	s.span.SetAttributes(KeyDecision.String(action))
}

// Capped records that the result went over its output cap.
func (s ToolSpan) Capped() {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(KeyCapped.Bool(true))
}

// Step is a child span of a tool call: "validate", "approval", "output cap".
type Step struct{ span trace.Span }

// Step starts the child span name of the call under ctx (StartTool's).
func (s ToolSpan) Step(ctx context.Context, name string) Step {
	if s.span == nil {
		return Step{}
	}
	_, span := s.t.tracer.Start(ctx, name+" "+s.call.Tool, trace.WithAttributes(KeyToolName.String(s.call.Tool)))
	return Step{span: span}
}

// End ends the step; errType is error.type ("" it went well).
func (s Step) End(errType string, attrs ...attribute.KeyValue) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(attrs...)
	if errType != "" {
		s.span.SetAttributes(KeyErrorType.String(errType))
		s.span.SetStatus(codes.Error, errType)
	}
	s.span.End()
}

// End ends the call's span and counts it: errType is error.type ("" it
// completed; ErrorTool when the tool answered isError), attempts how many
// times the tool ran.
func (s ToolSpan) End(errType string, attempts int) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(KeyAttempts.Int(attempts))
	if errType != "" {
		s.span.SetAttributes(KeyErrorType.String(errType))
		s.span.SetStatus(codes.Error, errType)
	}
	s.span.End()
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, KeyToolName.String(s.call.Tool), KeyServer.String(s.call.Server))
	ctx := context.Background()
	in := &s.t.inst
	in.toolCalls.Add(ctx, 1, metric.WithAttributes(attrs...))
	if errType != "" {
		attrs = append(attrs, KeyErrorType.String(errType))
		in.toolErrors.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	in.toolDuration.Record(ctx, time.Since(s.start).Seconds(), metric.WithAttributes(attrs...))
}
