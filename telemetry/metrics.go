package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// durationBuckets are the histograms' bounds in seconds, as the MCP
// conventions advise for mcp.client.operation.duration.
func durationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

// instruments are the synchronous instruments; with a no-op meter each is
// a no-op. An instrument that could not be made (a meter's error) is a
// no-op too: metrics never fail a call.
type instruments struct {
	clientDuration metric.Float64Histogram
	serverDuration metric.Float64Histogram
	toolDuration   metric.Float64Histogram
	toolCalls      metric.Int64Counter
	toolErrors     metric.Int64Counter
}

func newInstruments(m metric.Meter) instruments {
	var in instruments
	// The SDK's instruments are usable even when it reports an error
	// (an invalid name would be ours): the errors are dropped.
	in.clientDuration, _ = m.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of an MCP request FreeCode sent, until its answer."),
		metric.WithExplicitBucketBoundaries(durationBuckets()...))
	in.serverDuration, _ = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of an MCP request a host sent the gateway, until its answer."),
		metric.WithExplicitBucketBoundaries(durationBuckets()...))
	in.toolDuration, _ = m.Float64Histogram("freecode.tool.call.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of a tool call through the orchestrator: checks, approval and the call."),
		metric.WithExplicitBucketBoundaries(durationBuckets()...))
	in.toolCalls, _ = m.Int64Counter("freecode.tool.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls through the orchestrator, by tool and server."))
	in.toolErrors, _ = m.Int64Counter("freecode.tool.errors", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls that failed or answered isError, by tool, server and error.type."))
	return in
}

// Snapshot is the state the observed metrics report at each collection.
type Snapshot struct {
	Servers []ServerState
	// DefinitionTokens is the estimated tokens of the tool definitions
	// advertised to the model.
	DefinitionTokens int64
	// ApprovalsWaiting is how many calls wait for an approval.
	ApprovalsWaiting int64
}

// ServerState is one server's part of a Snapshot.
type ServerState struct {
	Name  string
	Phase string
	// Starts counts the server's starts; Crashes the restarts that
	// followed a failure (wire.ServerStatus.Generation and Crashes).
	Starts, Crashes int64
	// Tools is how many tools it advertises.
	Tools int64
}

// Observe reports what snapshot returns at each collection of the metrics:
// freecode.server.starts and .crashes (counters), freecode.server.phase
// (1 for the server's phase), freecode.server.tools,
// freecode.definitions.tokens and freecode.approvals.waiting. snapshot is
// called from the SDK's reader goroutine and must not block. The returned
// function stops the observation. Off: nothing is observed.
func (t *Telemetry) Observe(snapshot func() Snapshot) (stop func(), err error) {
	if !t.On() {
		return func() {}, nil
	}
	m := t.meter
	starts, err1 := m.Int64ObservableCounter("freecode.server.starts", metric.WithUnit("{start}"), metric.WithDescription("Starts of each server."))
	crashes, err2 := m.Int64ObservableCounter("freecode.server.crashes", metric.WithUnit("{crash}"), metric.WithDescription("Restarts of each server that followed a failure."))
	phase, err3 := m.Int64ObservableGauge("freecode.server.phase", metric.WithDescription("1 for the phase each server is in."))
	tools, err4 := m.Int64ObservableGauge("freecode.server.tools", metric.WithUnit("{tool}"), metric.WithDescription("Tools each server advertises."))
	tokens, err5 := m.Int64ObservableGauge("freecode.definitions.tokens", metric.WithUnit("{token}"), metric.WithDescription("Estimated tokens of the tool definitions advertised to the model."))
	waiting, err6 := m.Int64ObservableGauge("freecode.approvals.waiting", metric.WithUnit("{call}"), metric.WithDescription("Calls waiting for an approval."))
	for _, e := range []error{err1, err2, err3, err4, err5, err6} {
		if e != nil {
			return nil, fmt.Errorf("telemetry: observed metrics: %w", e)
		}
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := snapshot()
		for _, srv := range s.Servers {
			name := metric.WithAttributes(KeyServer.String(srv.Name))
			o.ObserveInt64(starts, srv.Starts, name)
			o.ObserveInt64(crashes, srv.Crashes, name)
			o.ObserveInt64(tools, srv.Tools, name)
			o.ObserveInt64(phase, 1, metric.WithAttributes(KeyServer.String(srv.Name), attribute.String("freecode.server.phase", srv.Phase)))
		}
		o.ObserveInt64(tokens, s.DefinitionTokens)
		o.ObserveInt64(waiting, s.ApprovalsWaiting)
		return nil
	}, starts, crashes, phase, tools, tokens, waiting)
	if err != nil {
		return nil, fmt.Errorf("telemetry: observed metrics: %w", err)
	}
	return func() { _ = reg.Unregister() }, nil
}
