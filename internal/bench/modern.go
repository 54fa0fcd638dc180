package bench

import (
	"context"
	"encoding/json"
	"fmt"
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
// revision (mcp-testserver --modern, pinned to it) with the same call on
// 2025-11-25 (the same binary without --modern, pinned to that), each on
// its own server process, taking turns in blocks. The ratio is the median
// of the rounds' ratios (a round: one block of each).
func ModernCalls(ctx context.Context, cfg Config, opts ModernCallsOptions) ([]Row, error) {
	connect := func(name, protocol string, flags ...string) (*mcp.Session, error) {
		srv := controller.MCPSpec(localServer(name, append([]string{cfg.TestServer}, flags...)))
		srv.Protocol = protocol
		s, err := mcp.Connect(ctx, srv, mcp.Options{Logger: logr.Discard()})
		if err != nil {
			return nil, err
		}
		if s.Protocol() != protocol {
			s.Close()
			return nil, fmt.Errorf("%s speaks %s, not %s", name, s.Protocol(), protocol)
		}
		return s, nil
	}
	legacy, err := connect("legacy", mcp.ProtocolVersion)
	if err != nil {
		return nil, err
	}
	defer legacy.Close()
	modern, err := connect("modern", mcp.ModernProtocolVersion, "--modern")
	if err != nil {
		return nil, err
	}
	defer modern.Close()

	args := json.RawMessage(`{"text":"hello"}`)
	block := func(s *mcp.Session) (time.Duration, error) {
		start := time.Now()
		for range opts.Calls {
			res, err := s.CallTool(ctx, "echo", args, nil)
			if err != nil {
				return 0, fmt.Errorf("echo on %s: %w", s.Protocol(), err)
			}
			if res.IsError {
				return 0, fmt.Errorf("echo on %s returned isError", s.Protocol())
			}
		}
		return time.Since(start) / time.Duration(opts.Calls), nil
	}
	// One block each to warm up.
	for _, s := range []*mcp.Session{legacy, modern} {
		if _, err := block(s); err != nil {
			return nil, err
		}
	}
	var ms, ls []time.Duration
	var ratios []float64
	for i := range opts.Blocks {
		order := []*mcp.Session{legacy, modern}
		if i%2 == 1 {
			order[0], order[1] = modern, legacy
		}
		var took [2]time.Duration
		for _, s := range order {
			d, err := block(s)
			if err != nil {
				return nil, err
			}
			if s == modern {
				took[0] = d
			} else {
				took[1] = d
			}
		}
		ms, ls = append(ms, took[0]), append(ls, took[1])
		ratios = append(ratios, float64(took[0])/float64(took[1]))
	}
	mm, ml, r := median(ms), median(ls), medianF(ratios)
	const group = "12. revision call cost (mcp-testserver with and without --modern over stdio, through package mcp)"
	return []Row{{
		Group: group, Name: fmt.Sprintf("echo call: 2026-07-28 vs 2025-11-25, interleaved in blocks (%d calls per block)", opts.Calls),
		Value: us(mm), Baseline: us(ml), Delta: fmt.Sprintf("%s (%+.1f%%, median of rounds' ratios %.3f)", us(mm-ml), 100*(r-1), r),
		Ratio: fmt.Sprintf("%.2f×", r), Target: "ratio ≤ 1.05 (no more than a 2025-11-25 call)", Verdict: verdict(r <= 1.05), Runs: len(ratios),
	}}, nil
}
