package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/schema"
)

// ConvergeOptions configure Converge.
type ConvergeOptions struct {
	Reps int
	// Counts of servers started together, e.g. 1, 10, 50; the first is the
	// reference for the ratios.
	Counts []int
	// Parallel are the MaxParallelStarts values to compare (0: the default).
	Parallel []int
	// ServerArgs are the test server's flags (with --init-delay).
	ServerArgs []string
}

// coldStart starts a fresh controller, hands it n servers at once and
// returns the time until every one's tools are registered. The controller
// and its servers are stopped before it returns (not timed).
func coldStart(argv []string, n, parallel int) (time.Duration, error) {
	h := newHost(controller.Options{MaxParallelStarts: parallel})
	defer h.close()
	servers := make([]schema.Server, n)
	names := make([]string, n)
	for i := range servers {
		names[i] = fmt.Sprintf("c%03d", i)
		servers[i] = localServer(names[i], argv)
	}
	start := time.Now()
	h.ctrl.SetDesired(servers, 0)
	at, err := h.waitTools(names...)
	if err != nil {
		return 0, err
	}
	return at.Sub(start), nil
}

// rawParallel is the baseline of a cold start of n servers: n raw mcp-go
// clients connecting at once (rawConnect each); it returns the time until
// the last one has its tool list.
func rawParallel(ctx context.Context, argv []string, n int) (time.Duration, error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	ends := make([]time.Time, n)
	for i := range n {
		wg.Go(func() {
			t := time.Now()
			var d time.Duration
			d, errs[i] = rawConnect(ctx, argv)
			ends[i] = t.Add(d)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	last := start
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	return last.Sub(start), nil
}

// Converge measures cold starts of several counts of servers, with each
// MaxParallelStarts value, against as many raw mcp-go clients connecting at
// once; repetitions are interleaved.
func Converge(ctx context.Context, cfg Config, opts ConvergeOptions) ([]Row, error) {
	argv := append([]string{cfg.TestServer}, opts.ServerArgs...)
	raw := map[int][]time.Duration{}
	samples := map[[2]int][]time.Duration{} // {parallel index, count} -> samples
	for rep := range opts.Reps {
		for _, n := range opts.Counts {
			d, err := rawParallel(ctx, argv, n)
			if err != nil {
				return nil, fmt.Errorf("raw mcp-go, %d servers at once: %w", n, err)
			}
			raw[n] = append(raw[n], d)
			cfg.logf("  converge rep %d/%d: %d servers, raw mcp-go at once: %s", rep+1, opts.Reps, n, ms(d))
			for pi, p := range opts.Parallel {
				d, err := coldStart(argv, n, p)
				if err != nil {
					return nil, fmt.Errorf("cold start of %d servers (max parallel %d): %w", n, p, err)
				}
				samples[[2]int{pi, n}] = append(samples[[2]int{pi, n}], d)
				cfg.logf("  converge rep %d/%d: %d servers, max parallel %s: %s", rep+1, opts.Reps, n, parallelName(p), ms(d))
			}
		}
	}

	const group = "2. parallel convergence (cold start, in-process controller)"
	one := opts.Counts[0]
	var rows []Row
	rawOne := median(raw[one])
	for _, n := range opts.Counts {
		m := median(raw[n])
		rows = append(rows, Row{Group: group, Name: fmt.Sprintf("baseline: %d raw mcp-go client(s) connecting at once", n),
			Value: ms(m), Ratio: ratio(m, rawOne) + " one", Runs: len(raw[n])})
	}
	for pi, p := range opts.Parallel {
		ref := median(samples[[2]int{pi, one}])
		for _, n := range opts.Counts {
			m, b := median(samples[[2]int{pi, n}]), median(raw[n])
			r := Row{
				Group: group, Name: fmt.Sprintf("%d server(s) ready, max parallel starts %s", n, parallelName(p)),
				Value: ms(m), Baseline: ms(b), Delta: ms(m - b), Ratio: ratio(m, ref) + " one", Runs: len(samples[[2]int{pi, n}]),
			}
			if n >= 50 {
				r.Target, r.Verdict = "≤ 1.5× one", verdict(float64(m) <= 1.5*float64(ref))
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func parallelName(p int) string {
	if p < 1 {
		return fmt.Sprintf("%d (default)", controller.DefaultMaxParallelStarts)
	}
	return fmt.Sprint(p)
}
