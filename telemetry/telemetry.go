// Package telemetry is FreeCode's OpenTelemetry: the tracer and meter
// providers, the spans of MCP requests and tool calls, the metrics, and
// the trace context carried in a request's _meta (SEP-414) and in the
// local API's HTTP headers.
//
// It is off until configured: New returns a Telemetry whose providers are
// no-ops unless OTEL_EXPORTER_OTLP_ENDPOINT (or a signal's own endpoint)
// is set or the config's mcp.telemetry enables it, and OTEL_SDK_DISABLED=true
// turns it off whatever else says. A nil *Telemetry is off too, so a
// package given none needs no check. Nothing is global: no provider is
// set with otel.SetTracerProvider; each user is handed its Telemetry.
//
// Spans and metrics leave through the SDK's batch span processor and
// periodic metric reader over OTLP/HTTP: a bounded queue that drops spans
// when full (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default) and exports with a
// timeout, so a slow or absent collector never blocks a call or grows the
// memory; Shutdown flushes within the bound of its ctx.
//
// What is recorded: method, tool and server names, transport, protocol
// revision, request ids, durations, error types, permission decisions and
// approval outcomes. What is never recorded: arguments, results, _meta
// values other than the trace context, headers, environment values,
// tokens.
package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// scope is the instrumentation scope of every span and instrument.
const scope = "github.com/freecode/freecode"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME, the
// resource attributes or Config.ServiceName say otherwise.
const DefaultServiceName = "freecode"

// Bounds of the export that apply unless the standard variables set them
// (OTEL_BSP_EXPORT_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT): an export to a
// black-holed collector gives up after exportTimeout, and the exporter's
// own retries stop then too.
const (
	exportTimeout = 10 * time.Second
	// defaultEndpoint is OTLP/HTTP's standard default.
	defaultEndpoint = "http://localhost:4318"
)

// Config is what turns telemetry on and points it somewhere, beside the
// standard OTEL_* variables, which win.
type Config struct {
	// Enabled turns telemetry on from the config file
	// (mcp.telemetry.enabled) without an OTEL_EXPORTER_OTLP_ENDPOINT.
	Enabled bool
	// Endpoint is the collector's OTLP/HTTP base URL
	// ("http://localhost:4318") from the config file; the variables'
	// endpoints win over it. "" with Enabled: the SDK's default,
	// http://localhost:4318.
	Endpoint string
	// ServiceName is service.name ("": OTEL_SERVICE_NAME, else
	// DefaultServiceName).
	ServiceName string
	// ServiceVersion is service.version ("": none).
	ServiceVersion string
	// RecordArguments names the servers whose tool calls' arguments and
	// results are span attributes (RequestSpan.RecordCall); none else.
	RecordArguments []string
	// OnError, when set, is told of failed exports (a collector that is
	// gone or hung): the first of a run of failures, then one a minute
	// with their count, and the recovery (nil error, Recovered set). It
	// is called from the SDK's export goroutines and must not block. Nil:
	// the SDK's global handler (otel.Handle), which writes to stderr.
	OnError func(error, ExportState)
	// Getenv reads the OTEL_* variables (nil: os.Getenv). The SDK's
	// exporters read the rest of them (headers, timeouts, TLS) from the
	// process's environment themselves.
	Getenv func(string) string
}

// Telemetry holds the providers and instruments of one process. Its
// methods are safe for concurrent use, and a nil *Telemetry is off.
type Telemetry struct {
	on bool
	// record is Config.RecordArguments as a set; read-only.
	record map[string]bool
	tracer trace.Tracer
	meter  metric.Meter
	inst   instruments
	// shutdown flushes and ends the SDK's providers (nil when off).
	shutdown func(context.Context) error
}

// Off returns a Telemetry that records nothing: its spans are no-ops that
// still carry a parent's trace context on, so a host's traceparent reaches
// the servers even with telemetry off.
func Off() *Telemetry {
	t := &Telemetry{tracer: tracenoop.NewTracerProvider().Tracer(scope), meter: metricnoop.NewMeterProvider().Meter(scope)}
	t.inst = newInstruments(t.meter)
	return t
}

// FromProviders returns a Telemetry that records through tp and mp, which
// the caller owns and shuts down (Shutdown of the result does nothing):
// for a test's in-memory exporter, or an embedder's own providers.
func FromProviders(tp trace.TracerProvider, mp metric.MeterProvider, recordArguments ...string) *Telemetry {
	t := &Telemetry{on: true, tracer: tp.Tracer(scope), meter: mp.Meter(scope), record: recordSet(recordArguments)}
	t.inst = newInstruments(t.meter)
	return t
}

// recordSet is servers as a set; nil for none.
func recordSet(servers []string) map[string]bool {
	var m map[string]bool
	for _, s := range servers {
		if m == nil {
			m = map[string]bool{}
		}
		m[s] = true
	}
	return m
}

// RecordsArguments reports whether server's tool calls' arguments and
// results are span attributes (Config.RecordArguments); false when off.
func (t *Telemetry) RecordsArguments(server string) bool {
	return t.On() && t.record[server]
}

// ErrUnsupportedProtocol is New's error for an OTEL_EXPORTER_OTLP_PROTOCOL
// other than http/protobuf: FreeCode ships the OTLP/HTTP exporters only.
var ErrUnsupportedProtocol = errors.New("unsupported OTLP protocol")

// Enabled reports whether cfg and the environment turn telemetry on.
func Enabled(cfg Config) bool {
	getenv := cfg.getenv()
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if cfg.Enabled {
		return true
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

func (c Config) getenv() func(string) string {
	if c.Getenv != nil {
		return c.Getenv
	}
	return os.Getenv
}

// New returns the Telemetry cfg and the environment ask for: Off() when
// they do not turn it on (Enabled), else providers exporting over
// OTLP/HTTP. The exporters connect lazily: an absent collector is not an
// error here. Shutdown must be called once the process is done with it.
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	if !Enabled(cfg) {
		return Off(), nil
	}
	getenv := cfg.getenv()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := getenv(k); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("telemetry: %s=%s: %w: FreeCode exports OTLP over HTTP (http/protobuf, the collector's port 4318)", k, p, ErrUnsupportedProtocol)
		}
	}
	res, err := newResource(ctx, cfg, getenv)
	if err != nil {
		return nil, err
	}
	// The endpoints are passed explicitly, read through getenv as the
	// rest: the signal's own variable, else the base one with the
	// signal's path, else the config's, else the standard default.
	base := strings.TrimSuffix(cmp.Or(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), cfg.Endpoint, defaultEndpoint), "/")
	topts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), base+"/v1/traces"))}
	mopts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(cmp.Or(getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), base+"/v1/metrics"))}
	if getenv("OTEL_EXPORTER_OTLP_TIMEOUT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") == "" {
		topts = append(topts, otlptracehttp.WithTimeout(exportTimeout))
	}
	if getenv("OTEL_EXPORTER_OTLP_TIMEOUT") == "" && getenv("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT") == "" {
		mopts = append(mopts, otlpmetrichttp.WithTimeout(exportTimeout))
	}
	// Retries give up within the export's own timeout.
	retry := otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: exportTimeout}
	topts = append(topts, otlptracehttp.WithRetry(retry))
	mopts = append(mopts, otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig(retry)))
	texp, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	mexp, err := otlpmetrichttp.New(ctx, mopts...)
	if err != nil {
		_ = texp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
	}
	var (
		spanExp   sdktrace.SpanExporter = texp
		metricExp sdkmetric.Exporter    = mexp
	)
	if cfg.OnError != nil {
		errs := &exportErrors{report: cfg.OnError, now: time.Now}
		spanExp, metricExp = reportingSpanExporter{texp, errs}, reportingMetricExporter{mexp, errs}
	}
	// The batch processor's queue is bounded (OTEL_BSP_MAX_QUEUE_SIZE) and
	// drops when full: never WithBlocking. The sampler is the SDK's
	// default, read from OTEL_TRACES_SAMPLER and its argument.
	var bspOpts []sdktrace.BatchSpanProcessorOption
	if getenv("OTEL_BSP_EXPORT_TIMEOUT") == "" {
		bspOpts = append(bspOpts, sdktrace.WithExportTimeout(exportTimeout))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spanExp, bspOpts...))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExp)))
	t := &Telemetry{on: true, tracer: tp.Tracer(scope), meter: mp.Meter(scope), record: recordSet(cfg.RecordArguments)}
	t.inst = newInstruments(t.meter)
	t.shutdown = func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}
	return t, nil
}

// newResource is the process's resource: service.name and version, then
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them.
func newResource(ctx context.Context, cfg Config, getenv func(string) string) (*resource.Resource, error) {
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(name))}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	if getenv("OTEL_SERVICE_NAME") != "" || getenv("OTEL_RESOURCE_ATTRIBUTES") != "" {
		attrs = append(attrs, resource.WithFromEnv())
	}
	res, err := resource.New(ctx, append(attrs, resource.WithTelemetrySDK())...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// On reports whether t records and exports.
func (t *Telemetry) On() bool { return t != nil && t.on }

// Shutdown flushes what is queued and ends the providers, giving up when
// ctx ends (what is still queued then is dropped). Nil and Off: nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
