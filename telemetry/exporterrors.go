package telemetry

import (
	"context"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportReportEvery is how often a collector that keeps failing is
// reported again while it fails.
const exportReportEvery = time.Minute

// exportErrors reports the exporters' failures to Config.OnError instead
// of the SDK's global error handler (stderr), without a global: the
// exporters are wrapped and return nil to the SDK once the failure is
// reported. A collector that is gone fails every export; the first
// failure is reported, then one a minute with how many there were, and
// the first success after failures. It starts no goroutine.
type exportErrors struct {
	report func(error, ExportState)
	now    func() time.Time

	mu       sync.Mutex
	failing  bool
	failed   int // since the last report
	reported time.Time
}

// ExportState is what Config.OnError is told besides the error.
type ExportState struct {
	// Signal is "traces" or "metrics".
	Signal string
	// Failures is how many exports failed since the last report (1 for
	// the first of a run of failures).
	Failures int
	// Recovered is set, with a nil error, on the first export that
	// succeeded after failures.
	Recovered bool
}

func (e *exportErrors) done(signal string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if e.failing {
			e.failing, e.failed = false, 0
			e.report(nil, ExportState{Signal: signal, Recovered: true})
		}
		return
	}
	e.failed++
	if !e.failing || e.now().Sub(e.reported) >= exportReportEvery {
		e.failing, e.reported = true, e.now()
		n := e.failed
		e.failed = 0
		e.report(err, ExportState{Signal: signal, Failures: n})
	}
}

// reportingSpanExporter reports its export errors and hands the batch
// processor nil (the batch is dropped either way).
type reportingSpanExporter struct {
	sdktrace.SpanExporter
	errs *exportErrors
}

func (r reportingSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.errs.done("traces", r.SpanExporter.ExportSpans(ctx, spans))
	return nil
}

// reportingMetricExporter is reportingSpanExporter for the periodic
// reader.
type reportingMetricExporter struct {
	sdkmetric.Exporter
	errs *exportErrors
}

func (r reportingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	r.errs.done("metrics", r.Exporter.Export(ctx, rm))
	return nil
}
