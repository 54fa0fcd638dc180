package main

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/telemetry"
)

// telemetryShutdownWait bounds the flush of what is still queued when
// serve or the gateway stops: a collector that is gone does not hold the
// exit up longer.
const telemetryShutdownWait = 5 * time.Second

// telemetry is the OpenTelemetry of a long-lived command (serve, the
// gateway): on as the environment's OTEL_* variables and the user config's
// mcp.telemetry say, else off. A config that does not load leaves the
// variables alone to decide; a setting that cannot work (an unsupported
// protocol) is logged and telemetry stays off. The returned function
// flushes and ends it, within telemetryShutdownWait. Export failures are
// logged to log.
func (a *app) telemetry(ctx context.Context, log logr.Logger) (*telemetry.Telemetry, func()) {
	cfg := telemetry.Config{Getenv: a.getenv, ServiceVersion: buildVersion(),
		// Export failures go to the command's log, at most one a minute
		// while the collector stays away, not to the SDK's stderr
		// handler (no global is set).
		OnError: func(err error, st telemetry.ExportState) {
			if st.Recovered {
				log.Info("telemetry export works again", "signal", st.Signal)
				return
			}
			log.Error(err, "telemetry export failed; what could not be sent is dropped", "signal", st.Signal, "failures", st.Failures)
		}}
	if c, err := a.load(false); err == nil {
		t := c.MCP.Telemetry
		cfg.Enabled, cfg.Endpoint, cfg.ServiceName = t.Enabled, t.Endpoint, t.ServiceName
		cfg.RecordArguments = t.RecordArguments
	}
	tel, err := telemetry.New(ctx, cfg)
	if err != nil {
		log.Error(err, "OpenTelemetry is off")
		return telemetry.Off(), func() {}
	}
	if tel.On() {
		log.Info("OpenTelemetry on: exporting traces and metrics over OTLP/HTTP")
	}
	return tel, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryShutdownWait)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.V(1).Info("telemetry not flushed", "error", err.Error())
		}
	}
}
