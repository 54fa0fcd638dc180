// Package bench measures the whole MCP host against raw mcp-go, in one run,
// for `make bench` (cmd/freecode-bench). Each scenario returns table rows;
// every figure is a median over repeated runs and, where a baseline exists,
// the baseline is measured in the same run, interleaved with ours, so that
// a noisy machine shifts both.
//
// Scenarios (see BENCHMARKS.md for what each one means):
//
//   - EditToReady: an in-process controller.Watch + controller + registry +
//     Bus (the real ones, as `freecode serve` wires them) sees the config
//     file rewritten to add one test server; time until its ToolsChanged.
//     Baseline: a raw mcp-go client spawning the same binary and flags,
//     initializing and listing tools.
//   - Converge: cold start of 1, 10 and 50 slow-to-initialize servers.
//   - Calls: runs bridge's BenchmarkCallOverhead with `go test -bench` and
//     parses it (orchestrator path vs raw mcp-go CallTool).
//   - Idle: a real `freecode serve` subprocess with connected servers;
//     CPU time and RSS of serve itself from /proc.
//   - Scale: conversion, registration and provider defs of 100 × 100 tools.
//   - Restarts: ToolsChanged events and DefsCache versions across restarts
//     of servers that come back with identical tools.
//   - Reconnect: remote servers whose endpoints go away and come back on
//     the same port; time from the return to ready, probing vs the
//     backoff alone.
//   - AuthCalls: runs package mcp's BenchmarkAuthorizedCall and package
//     auth's BenchmarkRoundTrip (an authorized call vs an unauthorized one
//     on the same local server).
//   - Protocol: runs package mcp's BenchmarkConnectNpm (connect of each
//     real npm server with the protocol revision pinned vs negotiated).
//   - Gateway: `freecode mcp serve` under a plain mcp-go host: an echo
//     call through it vs straight to the server, and the time from a
//     config edit to the host's list_changed.
//   - Reapers: real npm servers started at once under procguard's
//     reapers (fc-reaper, and freecode itself as before) vs raw mcp-go,
//     and the reapers' memory from /proc.
//   - OnDemand: ten real npm servers under a real `freecode serve`, always
//     running vs on demand: the memory of serve's process tree while idle,
//     the tools advertised, tools_changed over sleep/wake cycles, and a
//     sleeping server's first-call latency against its own cold start.
package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Row is one line of the results table.
type Row struct {
	// Group is the scenario ("1. edit-to-ready" ...).
	Group string
	// Name says what was measured.
	Name string
	// Value is our median; Baseline the baseline's median ("" if none).
	Value, Baseline string
	// Delta is the overhead (Value - Baseline) and Ratio Value/Baseline
	// (or the stated reference), "" if not applicable.
	Delta, Ratio string
	// Target is the goal, Verdict PASS or MISS against it ("" if none).
	// Informational only: a MISS never fails the run.
	Target, Verdict string
	// Runs says how many repetitions the median is over.
	Runs int
}

// Config is what every scenario needs.
type Config struct {
	// TestServer is the mcp-testserver binary; Freecode the freecode binary
	// (Idle, Gateway, Reapers); Reaper the fc-reaper binary (Reapers);
	// Repo the module root (Calls runs `go test` there).
	TestServer, Freecode, Reaper, Repo string
	// Go is the go command (Calls).
	Go string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// median returns the median of ds (the mean of the middle two for an even
// count); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianF is median for plain numbers.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ms formats d in milliseconds with a precision that suits its size.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f ms", f)
	case f >= 10:
		return fmt.Sprintf("%.1f ms", f)
	default:
		return fmt.Sprintf("%.2f ms", f)
	}
}

// us formats d in microseconds.
func us(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// WriteTable renders rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| scenario | measurement | ours (median) | baseline (median) | overhead | ratio | target | | runs |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: |")
	last := ""
	for _, r := range rows {
		g := r.Group
		if g == last {
			g = ""
		}
		last = r.Group
		runs := ""
		if r.Runs > 0 {
			runs = fmt.Sprint(r.Runs)
		}
		cells := []string{g, r.Name, r.Value, r.Baseline, r.Delta, r.Ratio, r.Target, r.Verdict, runs}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}
