package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ProtocolOptions configure Protocol.
type ProtocolOptions struct {
	// Count is go test's -count; Benchtime its -benchtime (connects per
	// run, e.g. "5x").
	Count     int
	Benchtime string
}

// metricLine matches a `go test -bench` result line with custom metrics,
// e.g. "BenchmarkConnectNpm/memory-2  5  1.2e+09 ns/op  214.0 first-ms
// 0.5 hit-ms  211.0 later-ms  210.5 pinned-ms  3.1 probe-ms".
var metricLine = regexp.MustCompile(`^(Benchmark\S+?)(?:#\d+)?(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parseMetrics returns every sample of every metric per benchmark name,
// and the iterations of each sample as metric "iterations".
func parseMetrics(r io.Reader) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := append([]string{m[2], "iterations"}, strings.Fields(m[3])...)
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %q: %w", sc.Text(), err)
			}
			if out[m[1]] == nil {
				out[m[1]] = map[string][]float64{}
			}
			out[m[1]][f[i+1]] = append(out[m[1]][f[i+1]], v)
		}
	}
	return out, sc.Err()
}

func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}

// msDuration is a number of milliseconds as a duration.
func msDuration(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// protocolServers are what BenchmarkConnectNpm connects: the real npm
// servers (2025-11-25) and a 2026-07-28-only mcp-testserver.
var protocolServers = []string{"everything", "memory", "filesystem", "modern"}

// Protocol runs package mcp's BenchmarkConnectNpm: connect (start,
// handshake, tools/list) of each server with the protocol revision pinned
// (no probe: the baseline), by default the first time (a server/discover
// probe, nothing remembered yet) and by default later (the revision
// remembered: no probe), in rotating order, and turns its output into
// rows: the first and the later connect, each against the pinned one, the
// difference being the median of the paired differences.
func Protocol(ctx context.Context, cfg Config, opts ProtocolOptions) ([]Row, error) {
	out, err := runGoBench(ctx, cfg, `^BenchmarkConnectNpm$`, opts.Count, opts.Benchtime, "./mcp")
	if err != nil {
		return nil, err
	}
	res, err := parseMetrics(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	const group = "9. protocol negotiation (mcp BenchmarkConnectNpm: npm servers and a 2026-07-28-only test server over stdio)"
	var rows []Row
	for _, srv := range protocolServers {
		m := res["BenchmarkConnectNpm/"+srv]
		p, f, l, d, h := m["pinned-ms"], m["first-ms"], m["later-ms"], m["probe-ms"], m["hit-ms"]
		if len(p) == 0 || len(f) == 0 || len(l) == 0 || len(d) == 0 || len(h) == 0 {
			return nil, fmt.Errorf("no result for BenchmarkConnectNpm/%s in:\n%s", srv, string(out))
		}
		mp, mf, ml := msDuration(medianF(p)), msDuration(medianF(f)), msDuration(medianF(l))
		runs := int(sum(m["iterations"]))
		rows = append(rows,
			Row{
				Group: group, Name: "connect " + srv + ": first, by default (server/discover probe) vs pinned",
				Value: ms(mf), Baseline: ms(mp), Delta: ms(msDuration(medianF(d))) + " (median of paired runs)", Ratio: ratio(mf, mp),
				Target: "once per server definition", Runs: runs,
			},
			Row{
				Group: group, Name: "connect " + srv + ": later, by default (revision remembered) vs pinned",
				Value: ms(ml), Baseline: ms(mp), Delta: ms(msDuration(medianF(h))) + " (median of paired runs)", Ratio: ratio(ml, mp),
				Target: "no probe: as pinned", Runs: runs,
			})
	}
	return rows, nil
}
