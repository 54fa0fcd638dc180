package telemetry

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context keys, the same in an MCP request's _meta (SEP-414)
// and in HTTP headers.
const (
	KeyTraceparent = "traceparent"
	KeyTracestate  = "tracestate"
)

// metaCarrier is a _meta object as a propagation carrier; it only ever
// reads and writes the trace context's string keys.
type metaCarrier map[string]any

func (m metaCarrier) Get(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m metaCarrier) Set(k, v string) { m[k] = v }

func (m metaCarrier) Keys() []string { return []string{KeyTraceparent, KeyTracestate} }

// InjectMeta writes ctx's span context into params' _meta as traceparent
// (and tracestate when there is one), making the _meta object when params
// has none. params is a request's params as it is about to be sent. It does
// nothing when ctx carries no valid span context (telemetry off and no
// host's context): the request is sent as before.
func InjectMeta(ctx context.Context, params map[string]any) {
	if params == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	if raw, ok := params["_meta"].(json.RawMessage); ok {
		// An encoded _meta (a session's, the same on every request): as
		// a map of its own for this request, with the trace context.
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return
		}
		params["_meta"] = m
	}
	meta, ok := params["_meta"].(map[string]any)
	if !ok {
		if params["_meta"] != nil {
			// Not an object FreeCode made: left alone.
			return
		}
		meta = map[string]any{}
		params["_meta"] = meta
	}
	propagation.TraceContext{}.Inject(ctx, metaCarrier(meta))
}

// ExtractMeta returns ctx with the remote span context of a received
// request's _meta (nil: none), so the spans started under it are its
// children. A _meta without a valid traceparent leaves ctx as it is.
func ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	if meta == nil {
		return ctx
	}
	if _, ok := meta[KeyTraceparent].(string); !ok {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, metaCarrier(meta))
}

// InjectHTTP writes ctx's span context into h (the local API's client).
func InjectHTTP(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}

// ExtractHTTP returns ctx with the span context of h's traceparent (the
// local API's server), ctx itself when it has none.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	if h.Get(KeyTraceparent) == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}
