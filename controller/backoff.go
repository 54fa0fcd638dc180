package controller

import (
	"math"
	"time"
)

// Backoff shapes the delays between restarts of a failing server.
//
// After the n-th consecutive failure (n >= 1) the delay is
// min(Initial·Factor^(n-1), Max), shortened by a random fraction of at most
// Jitter: it lies in [d·(1-Jitter), d]. Jitter only ever shortens, so Max is
// a hard cap and, with Factor·(1-Jitter) > 1, successive delays grow until
// the cap. A session that was ready for at least StableAfter before it
// ended resets the count: its next delay is Initial again.
type Backoff struct {
	Initial     time.Duration // default 500ms
	Max         time.Duration // default 30s
	Factor      float64       // default 2
	Jitter      float64       // fraction in [0, 1]; default 0.2
	StableAfter time.Duration // default 30s
}

// DefaultBackoff is the Backoff used for zero fields of Options.Backoff.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Factor: 2, Jitter: 0.2, StableAfter: 30 * time.Second}
}

// withDefaults fills zero fields from DefaultBackoff. A negative Jitter
// means none.
func (b Backoff) withDefaults() Backoff {
	d := DefaultBackoff()
	if b.Initial <= 0 {
		b.Initial = d.Initial
	}
	if b.Max <= 0 {
		b.Max = d.Max
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Factor < 1 {
		b.Factor = d.Factor
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = d.Jitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	if b.StableAfter <= 0 {
		b.StableAfter = d.StableAfter
	}
	return b
}

// delay is the wait after the failures-th consecutive failure; r in [0, 1)
// picks the jitter. It is pure: callers pass the randomness in.
func (b Backoff) delay(failures int, r float64) time.Duration {
	if failures < 1 {
		failures = 1
	}
	d := float64(b.Initial) * math.Pow(b.Factor, float64(failures-1))
	if d > float64(b.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(b.Max)
	}
	return time.Duration(d * (1 - b.Jitter*r))
}
