package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// failingExporter fails every export while fail is set.
type failingExporter struct {
	*tracetest.InMemoryExporter
	fail bool
}

func (f *failingExporter) ExportSpans(ctx context.Context, s []sdktrace.ReadOnlySpan) error {
	if f.fail {
		return errors.New("connection refused")
	}
	return f.InMemoryExporter.ExportSpans(ctx, s)
}

// Export errors go to OnError, not to the SDK's global handler: the
// first of a run, then one a minute with the count, then the recovery.
func TestExportErrorsReported(t *testing.T) {
	now := time.Unix(0, 0)
	type report struct {
		err error
		st  ExportState
	}
	var got []report
	errs := &exportErrors{now: func() time.Time { return now }, report: func(err error, st ExportState) { got = append(got, report{err, st}) }}
	inner := &failingExporter{InMemoryExporter: tracetest.NewInMemoryExporter(), fail: true}
	exp := reportingSpanExporter{inner, errs}

	for range 5 {
		require.NoError(t, exp.ExportSpans(t.Context(), nil), "the SDK is told nothing")
		now = now.Add(10 * time.Second)
	}
	require.Len(t, got, 1)
	require.EqualError(t, got[0].err, "connection refused")
	require.Equal(t, ExportState{Signal: "traces", Failures: 1}, got[0].st)

	now = now.Add(exportReportEvery)
	require.NoError(t, exp.ExportSpans(t.Context(), nil))
	require.Len(t, got, 2)
	require.Equal(t, ExportState{Signal: "traces", Failures: 5}, got[1].st, "the four unreported and this one")

	inner.fail = false
	require.NoError(t, exp.ExportSpans(t.Context(), nil))
	require.NoError(t, exp.ExportSpans(t.Context(), nil))
	require.Len(t, got, 3)
	require.NoError(t, got[2].err)
	require.Equal(t, ExportState{Signal: "traces", Recovered: true}, got[2].st)
}
