package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freecode/freecode/wire"
)

// TelemetryOptions configure Telemetry.
type TelemetryOptions struct {
	// Blocks of Calls echo calls each, on each serve in turn (the order
	// rotating block by block).
	Blocks, Calls int
}

// blackHole is a TCP listener that accepts every connection and reads
// what is sent but never answers: a collector that is up but hung. Its
// goroutines are owned by it; close ends them and waits.
type blackHole struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newBlackHole() (*blackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("black hole: %w", err)
	}
	b := &blackHole{ln: ln}
	b.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			b.accepted.Add(1)
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	return b, nil
}

func (b *blackHole) addr() string { return b.ln.Addr().String() }

func (b *blackHole) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// sink is a collector that answers every export at once with an empty
// 200 (OTLP/HTTP's success), counting the exports: the case the others
// are compared with besides off.
type sink struct {
	srv     *httptest.Server
	exports atomic.Int64
}

func newSink() *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	return s
}

// refusedAddr returns a loopback address nothing listens on (a port that
// was just free): a collector that is absent, connections refused.
func refusedAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// environWithout is os.Environ without the OTEL_* variables, so that only
// what the scenario sets turns telemetry on.
func environWithout() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

// Telemetry measures what OpenTelemetry costs a call when the collector
// is not there: three real `freecode serve` processes, each with one test
// server, take echo calls over the local API (orchestrator span, its
// validate and output-cap children, the MCP client span and the metrics
// on every call), interleaved block by block: telemetry off; on, pointed
// at a port that refuses connections (collector absent); on, pointed at a
// listener that accepts and never answers (collector black-holed, each
// export waiting out its timeout). The metric export interval is 1 s so
// the metric exports fail during the run too. Rows: the per-call median
// of each "on" case against off, and serve's RSS after all the calls,
// black hole and absent against off, with its growth from the first block
// to the last.
func Telemetry(ctx context.Context, cfg Config, opts TelemetryOptions) (rows []Row, err error) {
	hole, err := newBlackHole()
	if err != nil {
		return nil, err
	}
	defer hole.close()
	healthy := newSink()
	defer healthy.srv.Close()
	absent, err := refusedAddr()
	if err != nil {
		return nil, err
	}
	type serveCase struct {
		name string
		env  []string
		p    *serveProc
		per  []time.Duration
		rss  []uint64 // after each block
	}
	on := func(addr string) []string {
		return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_METRIC_EXPORT_INTERVAL=1000"}
	}
	cases := []*serveCase{
		{name: "off"},
		{name: "collector up", env: on(strings.TrimPrefix(healthy.srv.URL, "http://"))},
		{name: "collector absent (connection refused)", env: on(absent)},
		{name: "collector black-holed (accepts, never answers)", env: on(hole.addr())},
	}
	for _, c := range cases {
		home, err := os.MkdirTemp("", "fctel")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(home)
		if err := writeGatewayConfig(home, cfg.TestServer, "t"); err != nil {
			return nil, err
		}
		if err := allowMCP(home); err != nil {
			return nil, err
		}
		env := append(environWithout(), "FREECODE_HOME="+home)
		p, err := startServeEnv(ctx, cfg, home, append(env, c.env...))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		c.p = p
		defer func() {
			if serr := p.stop(); serr != nil && err == nil {
				err = serr
			}
		}()
		if _, err := p.waitStatus(ctx, c.name+": server t ready", 30*time.Second, func(st wire.Status) bool { return allIn(st, 1, wire.PhaseReady) }); err != nil {
			return nil, p.withLog(err)
		}
	}
	args := json.RawMessage(`{"text":"hello"}`)
	block := func(c *serveCase) (time.Duration, error) {
		start := time.Now()
		for range opts.Calls {
			res, err := c.p.client.Call(ctx, "mcp__t__echo", args)
			if err != nil {
				return 0, c.p.withLog(fmt.Errorf("%s: %w", c.name, err))
			}
			if res.Result.IsError {
				return 0, fmt.Errorf("%s: echo returned isError", c.name)
			}
		}
		return time.Since(start) / time.Duration(opts.Calls), nil
	}
	// A warm-up block each, not counted.
	for _, c := range cases {
		if _, err := block(c); err != nil {
			return nil, err
		}
	}
	for i := range opts.Blocks {
		for j := range cases {
			c := cases[(i+j)%len(cases)]
			d, err := block(c)
			if err != nil {
				return nil, err
			}
			c.per = append(c.per, d)
			rss, err := procRSS(c.p.pid)
			if err != nil {
				return nil, err
			}
			c.rss = append(c.rss, rss)
		}
	}
	for _, c := range cases[1:] {
		b, err := os.ReadFile(c.p.log)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(string(b), "OpenTelemetry on") {
			return nil, c.p.withLog(fmt.Errorf("%s: serve did not turn telemetry on", c.name))
		}
	}
	if healthy.exports.Load() == 0 {
		return nil, errors.New("the collector that is up got no export")
	}
	if hole.accepted.Load() == 0 {
		return nil, errors.New("the black hole took no connection: nothing was exported to it")
	}
	const group = "15. telemetry with no collector (a real serve, echo over the local API)"
	total := (opts.Blocks + 1) * opts.Calls
	off := cases[0]
	mo := median(off.per)
	for _, c := range cases[1:] {
		m := median(c.per)
		r := float64(m) / float64(mo)
		rows = append(rows, Row{Group: group,
			Name:  fmt.Sprintf("echo call, telemetry %s vs off (%d calls per block)", onWith(c.name), opts.Calls),
			Value: us(m), Baseline: us(mo), Delta: us(m - mo), Ratio: ratio(m, mo),
			Target: "≤ 1.05×", Verdict: verdict(r <= 1.05), Runs: len(c.per)})
	}
	// The claim proper: a collector gone or hung costs a call
	// nothing more than one that is up.
	up := cases[1]
	mu := median(up.per)
	for _, c := range cases[2:] {
		m := median(c.per)
		r := float64(m) / float64(mu)
		rows = append(rows, Row{Group: group,
			Name:  fmt.Sprintf("echo call, telemetry %s vs with the collector up", onWith(c.name)),
			Value: us(m), Baseline: us(mu), Delta: us(m - mu), Ratio: ratio(m, mu),
			Target: "≤ 1.05×", Verdict: verdict(r <= 1.05), Runs: len(c.per)})
	}
	// Memory: the queue drops spans when full (2048 by default) and the
	// metrics are aggregated per attribute set, so serve's RSS is bounded
	// by a constant over off, whatever the number of calls.
	const bound = 16 << 20
	lastOff := off.rss[len(off.rss)-1]
	for _, c := range cases[1:] {
		last := c.rss[len(c.rss)-1]
		d := int64(last) - int64(lastOff)
		rows = append(rows, Row{Group: group,
			Name:  fmt.Sprintf("serve's RSS after %d calls, telemetry %s vs off", total, onWith(c.name)),
			Value: mib(last), Baseline: mib(lastOff), Delta: signedMiB(d),
			Target: "≤ +16 MiB", Verdict: verdict(d <= bound), Runs: 1})
	}
	for _, c := range cases {
		first, last := c.rss[0], c.rss[len(c.rss)-1]
		rows = append(rows, Row{Group: group,
			Name:  fmt.Sprintf("serve's RSS growth from call %d to call %d, telemetry %s", 2*opts.Calls, total, onWith(c.name)),
			Value: signedMiB(int64(last) - int64(first)), Runs: 1})
	}
	rows = append(rows, Row{Group: group, Name: "exports the collector that is up received during the run",
		Value: fmt.Sprint(healthy.exports.Load()), Runs: 1})
	rows = append(rows, Row{Group: group, Name: "connections the black hole accepted during the run (exports that hung until their timeout)",
		Value: fmt.Sprint(hole.accepted.Load()), Runs: 1})
	return rows, nil
}

// onWith names a case in a row: "off", or "on with the ...".
func onWith(name string) string {
	if name == "off" {
		return name
	}
	return "on with the " + name
}

func signedMiB(d int64) string { return fmt.Sprintf("%+.1f MiB", float64(d)/(1<<20)) }

// allowMCP adds a permission rule allowing every mcp tool to home's
// config (the calls need no approval).
func allowMCP(home string) error {
	p := filepath.Join(home, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	m["permission"] = map[string]any{"allow": []string{"mcp"}}
	if b, err = json.Marshal(m); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o600)
}
