package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
)

// ModernCallsOptions configure ModernCalls.
type ModernCallsOptions struct {
	// Blocks of Calls calls each; the two revisions take turns block by
	// block, so load that comes and goes on a shared machine hits both
	// alike.
	Blocks, Calls int
}

// ModernCalls compares an echo call through package mcp on the 2026-07-28
// revision with the same call on 2025-11-25, on the same server: each
// server runs twice, one process pinned to each revision, and the two take
// turns in blocks. Two servers: mcp-testserver (with --modern for
// 2026-07-28, as mcp-go serves it) and a real TypeScript SDK 2.x server
// that speaks both (testdata/npm/mrtr-server.mjs). Each gets two rows: the
// wall time of a call, which is mostly the server's and the pipe's, and
// FreeCode's own CPU time per call (this process's user and system time;
// the servers are other processes), the part a revision changes in
// FreeCode. Ratios are the medians of the rounds' ratios (a round: one
// block of each).
func ModernCalls(ctx context.Context, cfg Config, opts ModernCallsOptions) ([]Row, error) {
	node := filepath.Join(cfg.Repo, "testdata/npm/node_modules/.bin/node")
	script := filepath.Join(cfg.Repo, "testdata/npm/mrtr-server.mjs")
	pairs := []struct {
		name           string
		legacy, modern []string
	}{
		{"mcp-testserver (mcp-go) with and without --modern", []string{cfg.TestServer}, []string{cfg.TestServer, "--modern"}},
		{"TypeScript SDK 2.x server (testdata/npm/mrtr-server.mjs), one per revision", []string{node, script}, []string{node, script}},
	}
	var rows []Row
	for i, p := range pairs {
		r, err := modernPair(ctx, opts, fmt.Sprintf("12.%d", i+1), p.name, p.legacy, p.modern)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// modernPair is ModernCalls on one server.
func modernPair(ctx context.Context, opts ModernCallsOptions, number, name string, legacyCmd, modernCmd []string) ([]Row, error) {
	connect := func(label, protocol string, command []string) (*mcp.Session, error) {
		srv := controller.MCPSpec(localServer(label, command))
		srv.Protocol = protocol
		s, err := mcp.Connect(ctx, srv, mcp.Options{Logger: logr.Discard()})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if s.Protocol() != protocol {
			s.Close()
			return nil, fmt.Errorf("%s speaks %s, not %s", name, s.Protocol(), protocol)
		}
		return s, nil
	}
	legacy, err := connect("legacy", mcp.ProtocolVersion, legacyCmd)
	if err != nil {
		return nil, err
	}
	defer legacy.Close()
	modern, err := connect("modern", mcp.ModernProtocolVersion, modernCmd)
	if err != nil {
		return nil, err
	}
	defer modern.Close()
	args := json.RawMessage(`{"text":"hello"}`)
	// block returns the wall time and this process's CPU time per call.
	block := func(s *mcp.Session) (wall, cpu time.Duration, err error) {
		cpu0 := processCPU()
		start := time.Now()
		for range opts.Calls {
			res, err := s.CallTool(ctx, "echo", args, nil)
			if err != nil {
				return 0, 0, fmt.Errorf("echo on %s: %w", s.Protocol(), err)
			}
			if res.IsError {
				return 0, 0, fmt.Errorf("echo on %s returned isError", s.Protocol())
			}
		}
		n := time.Duration(opts.Calls)
		return time.Since(start) / n, (processCPU() - cpu0) / n, nil
	}
	// One block each to warm up.
	for _, s := range []*mcp.Session{legacy, modern} {
		if _, _, err := block(s); err != nil {
			return nil, err
		}
	}
	var ms, ls, mc, lc []time.Duration
	var ratios, cpuRatios []float64
	for i := range opts.Blocks {
		order := []*mcp.Session{legacy, modern}
		if i%2 == 1 {
			order[0], order[1] = modern, legacy
		}
		var wall, cpu [2]time.Duration // [modern, legacy]
		for _, s := range order {
			w, c, err := block(s)
			if err != nil {
				return nil, err
			}
			k := 1
			if s == modern {
				k = 0
			}
			wall[k], cpu[k] = w, c
		}
		ms, ls, mc, lc = append(ms, wall[0]), append(ls, wall[1]), append(mc, cpu[0]), append(lc, cpu[1])
		ratios = append(ratios, float64(wall[0])/float64(wall[1]))
		if cpu[1] > 0 {
			cpuRatios = append(cpuRatios, float64(cpu[0])/float64(cpu[1]))
		}
	}
	group := number + ". revision call cost: " + name + ", through package mcp"
	row := func(what string, m, l time.Duration, r float64, target, verdict string) Row {
		return Row{Group: group, Name: fmt.Sprintf("%s: 2026-07-28 vs 2025-11-25, interleaved in blocks (%d calls per block)", what, opts.Calls),
			Value: us(m), Baseline: us(l), Delta: fmt.Sprintf("%s (%+.1f%%, median of rounds' ratios %.3f)", us(m-l), 100*(r-1), r),
			Ratio: fmt.Sprintf("%.2f×", r), Target: target, Verdict: verdict, Runs: len(ratios)}
	}
	rw, rc := medianF(ratios), medianF(cpuRatios)
	return []Row{
		row("for reference: echo call, wall time (mostly the server's and the pipe's)", median(ms), median(ls), rw, "", ""),
		row("FreeCode's own CPU per echo call", median(mc), median(lc), rc, "ratio ≤ 1.05 (no more than a 2025-11-25 call)", verdict(rc <= 1.05)),
	}, nil
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
