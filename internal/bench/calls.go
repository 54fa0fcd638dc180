package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// CallOptions configure Calls.
type CallOptions struct {
	// Count is go test's -count (the repetitions the medians are over);
	// Benchtime its -benchtime.
	Count     int
	Benchtime string
}

// benchLine matches a result line of `go test -bench`, e.g.
// "BenchmarkCallOverhead/raw-mcp-go-2   	   20143	     58712 ns/op", or
// "BenchmarkAuthorizedCall/authorized#01-2 ..." for a sub-benchmark run
// again under the same name.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:#\d+)?(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// parseBench returns every ns/op sample per benchmark name (without the
// -GOMAXPROCS suffix and the #NN of a repeated sub-benchmark), in the
// order they were printed.
func parseBench(r io.Reader) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", sc.Text(), err)
		}
		out[m[1]] = append(out[m[1]], time.Duration(ns))
	}
	return out, sc.Err()
}

// runGoBench runs the benchmarks matching pattern in pkgs (`go test -run
// ^$ -bench pattern -count count -benchtime benchtime`, in the repository)
// and returns their standard output; the error quotes it.
func runGoBench(ctx context.Context, cfg Config, pattern string, count int, benchtime string, pkgs ...string) ([]byte, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern,
		"-count", strconv.Itoa(count), "-benchtime", benchtime}, pkgs...)
	cmd := exec.CommandContext(ctx, cfg.Go, args...)
	cmd.Dir = cfg.Repo
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	cfg.logf("  %s %v", cfg.Go, args)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench %s: %w\n%s", pattern, err, out.String())
	}
	return out.Bytes(), nil
}

// Calls runs bridge's BenchmarkCallOverhead (orchestrator path vs a raw
// mcp-go client, each on its own mcp-testserver child over stdio, in the
// same process) and turns its output into rows.
func Calls(ctx context.Context, cfg Config, opts CallOptions) ([]Row, error) {
	out, err := runGoBench(ctx, cfg, `^BenchmarkCallOverhead$`, opts.Count, opts.Benchtime, "./bridge")
	if err != nil {
		return nil, err
	}
	res, err := parseBench(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	get := func(sub string) ([]time.Duration, error) {
		s := res["BenchmarkCallOverhead/"+sub]
		if len(s) == 0 {
			return nil, fmt.Errorf("no result for BenchmarkCallOverhead/%s in:\n%s", sub, string(out))
		}
		return s, nil
	}
	const group = "3. call overhead (bridge BenchmarkCallOverhead: echo over stdio)"
	var rows []Row
	for _, c := range []struct{ ours, base, name string }{
		{"orchestrator", "raw-mcp-go", "sequential: one call"},
		{"orchestrator-parallel8", "raw-parallel8", "8 concurrent read-only calls: one batch"},
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
		over := float64(mo-mb) / float64(mb)
		rows = append(rows, Row{
			Group: group, Name: c.name + " (orchestrator vs raw mcp-go CallTool)",
			Value: us(mo), Baseline: us(mb), Delta: fmt.Sprintf("%s (%+.1f%%)", us(mo-mb), 100*over), Ratio: ratio(mo, mb),
			Target: "overhead < 10%", Verdict: verdict(over < 0.10), Runs: len(o),
		})
	}
	return rows, nil
}
