package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/testserver"
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
// that speaks both (testdata/npm/mrtr-server.mjs).
//
// Each server gets three rows. The wall time of a call and FreeCode's CPU
// time per call (this process's user and system time; the servers are
// other processes) with the real server are for reference: a server that
// takes longer to answer on one revision (mcp-go's 2026-07-28 serving
// does) makes FreeCode's runtime park and wake its threads more, which
// shows as FreeCode's CPU although FreeCode did nothing more. The row with
// the target is FreeCode's CPU per call when both revisions answer at the
// same speed: the real server's answers on each revision are recorded
// (testserver.RecordAnswers) and replayed by one program (mcp-testserver --replay),
// so the difference is what FreeCode does with each revision's messages.
// Ratios are the medians of the rounds' ratios (a round: one block of
// each).
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
	dir, err := os.MkdirTemp("", "fc-bench-replay")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var rows []Row
	for i, p := range pairs {
		number := fmt.Sprintf("12.%d", i+1)
		real, err := modernPair(ctx, opts, p.name, p.legacy, p.modern)
		if err != nil {
			return nil, err
		}
		var replay [2][]string // legacy, modern
		for k, modern := range []bool{false, true} {
			cmd := p.legacy
			if modern {
				cmd = p.modern
			}
			answers, err := testserver.RecordAnswers(ctx, cmd, modern)
			if err != nil {
				return nil, fmt.Errorf("%s: record its answers: %w", p.name, err)
			}
			file := filepath.Join(dir, fmt.Sprintf("%d-%d.json", i, k))
			b, _ := json.Marshal(answers)
			if err := os.WriteFile(file, b, 0o600); err != nil {
				return nil, err
			}
			replay[k] = []string{cfg.TestServer, "--replay", file}
		}
		same, err := modernPair(ctx, opts, p.name+" replayed", replay[0], replay[1])
		if err != nil {
			return nil, err
		}
		group := number + ". revision call cost: " + p.name + ", through package mcp"
		rows = append(rows,
			real.row(group, "for reference: echo call, wall time (mostly the server's and the pipe's)", real.wall, "", nil),
			real.row(group, "for reference: FreeCode's CPU per echo call, with the real server (its speed on each revision included)", real.cpu, "", nil),
			same.row(group, "FreeCode's own CPU per echo call, the server's answers on each revision replayed at the same speed (mcp-testserver --replay)", same.cpu,
				"ratio ≤ 1.05 (no more than a 2025-11-25 call)", func(r float64) bool { return r <= 1.05 }))
	}
	return rows, nil
}

// pairRun is what modernPair measured: per-call medians of each
// revision's blocks and the median of the rounds' ratios.
type pairRun struct {
	calls, rounds int
	wall, cpu     pairFigures
}

type pairFigures struct {
	modern, legacy time.Duration
	ratio          float64
}

// row is a bench row of f; pass decides the verdict against target.
func (p pairRun) row(group, what string, f pairFigures, target string, pass func(float64) bool) Row {
	r := Row{Group: group, Name: fmt.Sprintf("%s: 2026-07-28 vs 2025-11-25, interleaved in blocks (%d calls per block)", what, p.calls),
		Value: us(f.modern), Baseline: us(f.legacy), Delta: fmt.Sprintf("%s (%+.1f%%, median of rounds' ratios %.3f)", us(f.modern-f.legacy), 100*(f.ratio-1), f.ratio),
		Ratio: fmt.Sprintf("%.2f×", f.ratio), Target: target, Runs: p.rounds}
	if pass != nil {
		r.Verdict = verdict(pass(f.ratio))
	}
	return r
}

// modernPair is ModernCalls on one server, as legacyCmd and modernCmd.
func modernPair(ctx context.Context, opts ModernCallsOptions, name string, legacyCmd, modernCmd []string) (pairRun, error) {
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
		return pairRun{}, err
	}
	defer legacy.Close()
	modern, err := connect("modern", mcp.ModernProtocolVersion, modernCmd)
	if err != nil {
		return pairRun{}, err
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
			return pairRun{}, err
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
				return pairRun{}, err
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
	return pairRun{calls: opts.Calls, rounds: len(ratios),
		wall: pairFigures{median(ms), median(ls), medianF(ratios)},
		cpu:  pairFigures{median(mc), median(lc), medianF(cpuRatios)}}, nil
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
