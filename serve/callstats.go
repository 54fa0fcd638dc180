package serve

import (
	"slices"
	"sync"
	"time"

	"github.com/freecode/freecode/wire"
)

// Bounds of the per-server numbers: each server keeps its last
// statsSamples calls, and the window counts those of the last
// statsWindow. So memory is bounded per server (16 KiB), and the servers
// are those of the status (forget drops the others).
const (
	statsSamples = 1024
	statsWindow  = 10 * time.Minute
)

// callStats counts each server's calls for the status. It is safe for
// concurrent use: add runs on each call's goroutine, of runs on the
// status's.
type callStats struct {
	mu      sync.Mutex // guards servers
	servers map[string]*serverCalls
}

type serverCalls struct {
	ring        [statsSamples]callSample
	next, n     int // the next slot; how many are filled
	total, errs uint64
}

type callSample struct {
	at  time.Time
	dur time.Duration
	err bool
}

// add counts a call of server that took dur and failed when failed.
func (s *callStats) add(server string, at time.Time, dur time.Duration, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers == nil {
		s.servers = map[string]*serverCalls{}
	}
	sc := s.servers[server]
	if sc == nil {
		sc = &serverCalls{}
		s.servers[server] = sc
	}
	sc.ring[sc.next] = callSample{at: at, dur: dur, err: failed}
	sc.next = (sc.next + 1) % statsSamples
	sc.n = min(sc.n+1, statsSamples)
	sc.total++
	if failed {
		sc.errs++
	}
}

// of returns server's numbers at now; nil when it had no call.
func (s *callStats) of(server string, now time.Time) *wire.CallStats {
	s.mu.Lock()
	sc := s.servers[server]
	if sc == nil {
		s.mu.Unlock()
		return nil
	}
	out := &wire.CallStats{WindowSeconds: int(statsWindow / time.Second), Total: sc.total, TotalErrors: sc.errs}
	durs := make([]time.Duration, 0, sc.n)
	for _, c := range sc.ring[:sc.n] {
		if now.Sub(c.at) > statsWindow {
			continue
		}
		durs = append(durs, c.dur)
		if c.err {
			out.Errors++
		}
	}
	s.mu.Unlock()
	out.Calls = len(durs)
	if len(durs) > 0 {
		slices.Sort(durs)
		out.P50MS, out.P95MS = percentile(durs, 50).Milliseconds(), percentile(durs, 95).Milliseconds()
	}
	return out
}

// percentile is the nearest-rank p-th percentile of sorted durs.
func percentile(durs []time.Duration, p int) time.Duration {
	rank := (p*len(durs) + 99) / 100 // ceil(p/100 * n), from 1
	return durs[max(rank, 1)-1]
}

// forget drops the servers not in keep.
func (s *callStats) forget(keep func(string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.servers {
		if !keep(name) {
			delete(s.servers, name)
		}
	}
}
