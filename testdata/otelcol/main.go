// Command otelcol is the OpenTelemetry Collector's own OTLP receiver
// (go.opentelemetry.io/collector/receiver/otlpreceiver), built from its Go
// modules, writing every batch of traces it receives to stdout as one line
// of OTLP JSON: the real receiver the telemetry e2e test sends to. It
// prints "listening <addr>" once it accepts, and stops on SIGTERM or when
// stdin closes.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "otelcol:", err)
		os.Exit(1)
	}
}

func run() error {
	// A free loopback port, handed to the receiver.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()

	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	write := func(kind string, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%s %s\n", kind, b)
		out.Flush()
	}
	traces, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			return err
		}
		write("traces", b)
		return nil
	})
	if err != nil {
		return err
	}
	metrics, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		if err != nil {
			return err
		}
		write("metrics", b)
		return nil
	})
	if err != nil {
		return err
	}
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	set := receivertest.NewNopSettings(f.Type())
	ctx := context.Background()
	tr, err := f.CreateTraces(ctx, set, cfg, traces)
	if err != nil {
		return err
	}
	mr, err := f.CreateMetrics(ctx, set, cfg, metrics)
	if err != nil {
		return err
	}
	host := componenttest.NewNopHost()
	if err := tr.Start(ctx, host); err != nil {
		return err
	}
	if err := mr.Start(ctx, host); err != nil {
		return err
	}
	write("listening", []byte(addr))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	select {
	case <-stop:
	case <-eof:
	}
	_ = component.Component(tr).Shutdown(ctx)
	return mr.Shutdown(ctx)
}
