package mcp

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkConnectNpm measures connect (start, handshake, tools/list) and
// close of each real npm server (2025-11-25), and of mcp-testserver
// --modern --modern-only (2026-07-28 only), over stdio: with the revision
// pinned (the baseline: no probe), by default the first time (nothing
// remembered: a server/discover probe first) and by default later (the
// ProtocolCache remembers the revision: no probe). Each iteration connects
// the three ways, in rotating order, so a shared machine's changing load
// affects them alike; it reports the medians (pinned-ms, first-ms,
// later-ms) and the medians of the differences from the pinned connect of
// the same iteration (probe-ms: what the first connect's probe costs;
// hit-ms: what a later connect costs beyond a pinned one).
func BenchmarkConnectNpm(b *testing.B) {
	servers := []struct {
		name, pin string
		cmd       func() []string
	}{
		{"everything", ProtocolVersion, func() []string { return npmServer(b, everythingScript, "stdio") }},
		{"memory", ProtocolVersion, func() []string { return npmServer(b, "@modelcontextprotocol/server-memory/dist/index.js") }},
		{"filesystem", ProtocolVersion, func() []string {
			return npmServer(b, "@modelcontextprotocol/server-filesystem/dist/index.js", b.TempDir())
		}},
		{"modern", ModernProtocolVersion, func() []string { return []string{testServerBin, "--modern", "--modern-only"} }},
	}
	for _, sv := range servers {
		b.Run(sv.name, func(b *testing.B) {
			def := npmLocal(sv.name, sv.cmd())
			pinned := def
			pinned.Protocol = sv.pin
			remembered := NewProtocolCache()
			once := func(srv Spec, cache *ProtocolCache) time.Duration {
				start := time.Now()
				s, err := Connect(context.Background(), srv, Options{Protocols: cache})
				if err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				if s.Protocol() != sv.pin {
					b.Fatalf("%s spoke %s, want %s", sv.name, s.Protocol(), sv.pin)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				return took
			}
			once(def, remembered) // the cache learns the revision
			var ps, fs, ls, probes, hits []float64
			i := 0
			for b.Loop() {
				var took [3]time.Duration
				for k := range 3 {
					switch w := (i + k) % 3; w {
					case 0:
						took[w] = once(pinned, nil)
					case 1:
						took[w] = once(def, NewProtocolCache())
					case 2:
						took[w] = once(def, remembered)
					}
				}
				i++
				ps, fs, ls = append(ps, ms(took[0])), append(fs, ms(took[1])), append(ls, ms(took[2]))
				probes, hits = append(probes, ms(took[1]-took[0])), append(hits, ms(took[2]-took[0]))
			}
			b.ReportMetric(medianOf(ps), "pinned-ms")
			b.ReportMetric(medianOf(fs), "first-ms")
			b.ReportMetric(medianOf(ls), "later-ms")
			b.ReportMetric(medianOf(probes), "probe-ms")
			b.ReportMetric(medianOf(hits), "hit-ms")
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
