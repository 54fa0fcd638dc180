package bench

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// AuthOptions configure AuthCalls.
type AuthOptions struct {
	// Count is go test's -count, Benchtime its -benchtime for each round
	// of each path.
	Count     int
	Benchtime string
}

// AuthTarget bounds what authorization may add to a remote call.
const AuthTarget = 1.10

// AuthCalls runs package mcp's BenchmarkAuthorizedCall — one tools/call
// over streamable HTTP to the same in-process MCP server, directly and
// behind an OAuth protected resource (internal/testauth) by a signed-in
// session, the two taking turns round by round — and package auth's
// BenchmarkRoundTrip (one HTTP request through the auth Transport vs the
// same token as a static header), and turns them into rows.
func AuthCalls(ctx context.Context, cfg Config, opts AuthOptions) ([]Row, error) {
	out, err := runGoBench(ctx, cfg, `^(BenchmarkAuthorizedCall|BenchmarkRoundTrip)$`, opts.Count, opts.Benchtime, "./mcp", "./mcp/auth")
	if err != nil {
		return nil, err
	}
	res, err := parseBench(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	get := func(name string) ([]time.Duration, error) {
		if s := res[name]; len(s) > 0 {
			return s, nil
		}
		return nil, fmt.Errorf("no result for %s in:\n%s", name, string(out))
	}
	const group = "8. authorization cost (the same local server, with and without OAuth)"
	var rows []Row
	for _, c := range []struct{ ours, base, name string }{
		{"BenchmarkAuthorizedCall/authorized", "BenchmarkAuthorizedCall/unauthorized",
			"one tools/call through mcp.Session over streamable HTTP: authorized (token store, bearer, the resource's check) vs not"},
		{"BenchmarkRoundTrip/transport", "BenchmarkRoundTrip/static-header",
			"one HTTP request: the auth Transport vs the same token as a static header"},
	} {
		o, err := get(c.ours)
		if err != nil {
			return nil, err
		}
		b, err := get(c.base)
		if err != nil {
			return nil, err
		}
		mo, mb := median(o), median(b)
		// Rounds ran in turn: the median of the per-round ratios is the
		// least disturbed by load that came and went.
		var ratios []float64
		for i := range min(len(o), len(b)) {
			ratios = append(ratios, float64(o[i])/float64(b[i]))
		}
		r := medianF(ratios)
		rows = append(rows, Row{
			Group: group, Name: c.name,
			Value: us(mo), Baseline: us(mb), Delta: us(mo - mb), Ratio: fmt.Sprintf("%.2f×", r),
			Target: fmt.Sprintf("≤ %.2f×", AuthTarget), Verdict: verdict(r <= AuthTarget), Runs: len(ratios),
		})
	}
	return rows, nil
}
