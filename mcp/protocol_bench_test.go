package mcp

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkConnectNpm measures connect (start, handshake, tools/list) and
// close of each real npm server with the revision pinned (Spec.Protocol
// "", the default: 2025-11-25 at once) and negotiated (ProtocolAuto: a
// server/discover probe first). Each iteration connects both ways, in
// alternating order, so a shared machine's changing load affects both
// alike; it reports the medians (pinned-ms, negotiated-ms) and the median
// of the pairs' differences (probe-ms): what the probe costs a 2025-11-25
// server.
func BenchmarkConnectNpm(b *testing.B) {
	servers := []struct {
		name string
		cmd  func() []string
	}{
		{"everything", func() []string { return npmServer(b, everythingScript, "stdio") }},
		{"memory", func() []string { return npmServer(b, "@modelcontextprotocol/server-memory/dist/index.js") }},
		{"filesystem", func() []string {
			return npmServer(b, "@modelcontextprotocol/server-filesystem/dist/index.js", b.TempDir())
		}},
	}
	for _, sv := range servers {
		b.Run(sv.name, func(b *testing.B) {
			pinned := npmLocal(sv.name, sv.cmd())
			negotiated := pinned
			negotiated.Protocol = ProtocolAuto
			once := func(srv Spec) time.Duration {
				start := time.Now()
				s, err := Connect(context.Background(), srv, Options{})
				if err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				return took
			}
			var ps, ns, diffs []float64
			i := 0
			for b.Loop() {
				var p, n time.Duration
				if i%2 == 0 {
					p, n = once(pinned), once(negotiated)
				} else {
					n, p = once(negotiated), once(pinned)
				}
				i++
				ps, ns = append(ps, ms(p)), append(ns, ms(n))
				diffs = append(diffs, ms(n-p))
			}
			b.ReportMetric(medianOf(ps), "pinned-ms")
			b.ReportMetric(medianOf(ns), "negotiated-ms")
			b.ReportMetric(medianOf(diffs), "probe-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
