// Command freecode-bench measures the MCP host against raw mcp-go and writes
// BENCHMARKS.md; `make bench` runs it. See package internal/bench.
//
//	freecode-bench [-out BENCHMARKS.md] [-idle 60s] [-only edit,converge,...]
//
// -only reconnect,auth runs just the remote scenarios; -out "" only prints.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/bench"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == bench.RelayArg {
		// The gateway scenario's floor: this binary as a bare relay.
		if err := bench.Relay(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "freecode-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "freecode-bench:", err)
		os.Exit(1)
	}
}

var scenarios = []string{"edit", "converge", "calls", "idle", "scale", "restart", "reconnect", "auth", "protocol", "budget", "gateway", "revisions", "reapers", "ondemand", "telemetry"}

func run() error {
	var (
		testServer = flag.String("testserver", "bin/mcp-testserver", "mcp-testserver binary")
		freecode   = flag.String("freecode", "bin/freecode", "freecode binary (idle, gateway and reapers scenarios)")
		reaper     = flag.String("reaper", "bin/fc-reaper", "fc-reaper binary (reapers scenario)")
		repo       = flag.String("repo", ".", "module root (calls scenario runs go test there)")
		goCmd      = flag.String("go", "go", "go command")
		out        = flag.String("out", "BENCHMARKS.md", `Markdown file to rewrite ("" to only print)`)
		command    = flag.String("command", "make bench", "command recorded in the output file")
		only       = flag.String("only", strings.Join(scenarios, ","), "scenarios to run")
		reps       = flag.Int("reps", 7, "repetitions of edit-to-ready")
		smallDeb   = flag.Duration("small-debounce", 5*time.Millisecond, "the small watcher debounce measured next to the default")
		convReps   = flag.Int("converge-reps", 3, "repetitions of each cold start")
		wide       = flag.Int("wide-parallel", 0, "a MaxParallelStarts to measure next to the default (0: the default only)")
		initDelay  = flag.Duration("init-delay", 200*time.Millisecond, "test servers' initialize delay in the convergence scenario")
		callCount  = flag.Int("call-count", 5, "go test -count for the call-overhead benchmark")
		callTime   = flag.String("call-benchtime", "1s", "go test -benchtime for the call-overhead benchmark")
		callBlocks = flag.Int("call-blocks", 15, "blocks of 200 calls per path in the interleaved call-overhead measurement")
		idle       = flag.Duration("idle", 60*time.Second, "idle measurement of serve")
		idleWin    = flag.Int("idle-windows", 6, "windows the idle measurement is split into")
		idleSrv    = flag.Int("idle-servers", 20, "servers connected to serve while idle")
		scaleReps  = flag.Int("scale-reps", 3, "repetitions of the scale scenario")
		restarts   = flag.Int("restarts", 100, "restarts in the cache-stability scenario")
		kills      = flag.Int("kills", 20, "SIGKILL restarts in the cache-stability scenario")
		outages    = flag.Int("outages", 5, "outages in the remote-reconnect scenario")
		outage     = flag.Duration("outage", 10*time.Second, "how long each endpoint stays away in the remote-reconnect scenario")
		authCount  = flag.Int("auth-count", 1, "go test -count for the authorization-cost benchmarks")
		authTime   = flag.String("auth-benchtime", "1s", "go test -benchtime for each round of the authorization-cost benchmarks")
		protoCount = flag.Int("protocol-count", 1, "go test -count for the protocol-negotiation benchmark")
		protoTime  = flag.String("protocol-benchtime", "8x", "go test -benchtime (pairs of connects per run) for the protocol-negotiation benchmark")
		gwBlocks   = flag.Int("gateway-blocks", 15, "blocks of 200 calls per path in the gateway's call-overhead measurement")
		gwEdits    = flag.Int("gateway-edits", 5, "config edits (add, then remove, a server) timed to the gateway's list_changed")
		revBlocks  = flag.Int("revision-blocks", 21, "blocks of 1000 calls per revision in the 2026-07-28 vs 2025-11-25 call comparison")
		reapRounds = flag.Int("reaper-rounds", 9, "rounds of the reapers scenario (each starts every server once per way)")
		reapMemory = flag.Int("reaper-memory", 8, "copies of server-memory in the reapers scenario (beside everything and filesystem)")
		odMemory   = flag.Int("ondemand-memory", 8, "server-memory instances beside server-everything and server-filesystem in the on-demand scenario")
		odIdle     = flag.Duration("ondemand-idle-timeout", 2*time.Second, "the on-demand servers' idleTimeout in the on-demand scenario")
		odCycles   = flag.Int("ondemand-cycles", 20, "sleep/wake cycles in the on-demand scenario")
		telBlocks  = flag.Int("telemetry-blocks", 15, "blocks per serve in the telemetry scenario")
		telCalls   = flag.Int("telemetry-calls", 400, "echo calls per block in the telemetry scenario")
		odSettle   = flag.Duration("ondemand-settle", 3*time.Second, "wait before the on-demand scenario reads the process tree's memory")
	)
	flag.Parse()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(scenarios, s) {
			return fmt.Errorf("-only: unknown scenario %q (want some of %s)", s, strings.Join(scenarios, ","))
		}
		want[s] = true
	}
	abs := func(p *string) error {
		a, err := filepath.Abs(*p)
		*p = a
		return err
	}
	for _, p := range []*string{testServer, freecode, reaper, repo} {
		if err := abs(p); err != nil {
			return err
		}
	}
	for _, b := range []string{*testServer, *freecode} {
		if _, err := os.Stat(b); err != nil && (b == *testServer || want["idle"] || want["gateway"] || want["reapers"] || want["ondemand"] || want["telemetry"]) {
			return fmt.Errorf("%w (build it first: make build)", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := bench.Config{TestServer: *testServer, Freecode: *freecode, Reaper: *reaper, Repo: *repo, Go: *goCmd, Log: os.Stderr}
	began := time.Now()
	var rows []bench.Row
	step := func(name, title string, fn func() ([]bench.Row, error)) error {
		if !want[name] || ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(os.Stderr, "== %s\n", title)
		t := time.Now()
		r, err := fn()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "   (%s)\n", time.Since(t).Round(100*time.Millisecond))
		rows = append(rows, r...)
		return nil
	}
	steps := []struct {
		name, title string
		fn          func() ([]bench.Row, error)
	}{
		{"edit", "1. edit-to-ready", func() ([]bench.Row, error) {
			return bench.EditToReady(ctx, cfg, bench.EditOptions{
				Reps: *reps, Debounces: []time.Duration{controller.DefaultDebounce, *smallDeb},
				ServerArgs: []string{"--tools", "10"},
			})
		}},
		{"converge", "2. parallel convergence", func() ([]bench.Row, error) {
			return bench.Converge(ctx, cfg, bench.ConvergeOptions{
				Reps: *convReps, Counts: []int{1, 10, 50}, Parallel: parallelSettings(*wide),
				ServerArgs: []string{"--tools", "10", "--init-delay", initDelay.String()},
			})
		}},
		{"calls", "3. call overhead", func() ([]bench.Row, error) {
			rows, err := bench.Calls(ctx, cfg, bench.CallOptions{Count: *callCount, Benchtime: *callTime})
			if err != nil {
				return nil, err
			}
			more, err := bench.CallsInterleaved(ctx, cfg, bench.InterleavedOptions{Blocks: *callBlocks, Calls: 200})
			return append(rows, more...), err
		}},
		{"idle", "4. idle cost", func() ([]bench.Row, error) {
			return bench.Idle(ctx, cfg, bench.IdleOptions{Servers: *idleSrv, Duration: *idle, Windows: *idleWin, ServerArgs: []string{"--tools", "10"}})
		}},
		{"scale", "5. scale", func() ([]bench.Row, error) {
			return bench.Scale(ctx, cfg, bench.ScaleOptions{Reps: *scaleReps, Servers: 100, ToolsPerServer: 100, ServerArgs: []string{"--tools", "100", "--schemas", "mixed"}})
		}},
		{"restart", "6. cache stability", func() ([]bench.Row, error) {
			return bench.Restarts(ctx, cfg, bench.RestartOptions{Servers: 10, Restarts: *restarts, Kills: *kills, ServerArgs: []string{"--tools", "10"}})
		}},
		{"reconnect", "7. remote reconnect", func() ([]bench.Row, error) {
			return bench.Reconnect(ctx, cfg, bench.ReconnectOptions{Outages: *outages, Outage: *outage})
		}},
		{"auth", "8. authorization cost", func() ([]bench.Row, error) {
			return bench.AuthCalls(ctx, cfg, bench.AuthOptions{Count: *authCount, Benchtime: *authTime})
		}},
		{"protocol", "9. protocol negotiation", func() ([]bench.Row, error) {
			return bench.Protocol(ctx, cfg, bench.ProtocolOptions{Count: *protoCount, Benchtime: *protoTime})
		}},
		{"budget", "10. context budget", func() ([]bench.Row, error) {
			return bench.Budget(ctx, cfg, bench.BudgetOptions{TestServers: 20, ToolsPerServer: 50, SearchTools: 10000, SearchReps: 2000,
				Queries: bench.QueriesFile, Loads: 10})
		}},
		{"gateway", "11. gateway", func() ([]bench.Row, error) {
			return bench.Gateway(ctx, cfg, bench.GatewayOptions{Blocks: *gwBlocks, Calls: 200, Edits: *gwEdits})
		}},
		{"revisions", "12. revision call cost", func() ([]bench.Row, error) {
			return bench.ModernCalls(ctx, cfg, bench.ModernCallsOptions{Blocks: *revBlocks, Calls: 1000})
		}},
		{"reapers", "13. reapers", func() ([]bench.Row, error) {
			return bench.Reapers(ctx, cfg, bench.ReapersOptions{Rounds: *reapRounds, Memory: *reapMemory})
		}},
		{"ondemand", "14. on-demand servers", func() ([]bench.Row, error) {
			return bench.OnDemand(ctx, cfg, bench.OnDemandOptions{Memory: *odMemory, IdleTimeout: *odIdle, Cycles: *odCycles, Settle: *odSettle})
		}},
		{"telemetry", "15. telemetry with no collector", func() ([]bench.Row, error) {
			return bench.Telemetry(ctx, cfg, bench.TelemetryOptions{Blocks: *telBlocks, Calls: *telCalls})
		}},
	}
	for _, s := range steps {
		if err := step(s.name, s.title, s.fn); err != nil {
			return err
		}
	}

	var table bytes.Buffer
	bench.WriteTable(&table, rows)
	fmt.Print(table.String())
	if *out == "" {
		return nil
	}
	var doc bytes.Buffer
	writeDoc(&doc, *command, *goCmd, time.Since(began), table.String(), want)
	if err := os.WriteFile(*out, doc.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// cpuModel is the first "model name" of /proc/cpuinfo, "" if unknown.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func goVersion(goCmd string) string {
	b, err := exec.Command(goCmd, "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(b))
}

func writeDoc(w *bytes.Buffer, command, goCmd string, took time.Duration, table string, ran map[string]bool) {
	fmt.Fprintf(w, "# Benchmarks\n\n")
	fmt.Fprintf(w, "Generated by `%s` (cmd/freecode-bench); do not edit by hand — run it again.\n\n", command)
	fmt.Fprintf(w, "- date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- cores (nproc): %d\n", runtime.NumCPU())
	if m := cpuModel(); m != "" {
		fmt.Fprintf(w, "- cpu: %s\n", m)
	}
	fmt.Fprintf(w, "- %s, %s/%s, MCP protocol %s\n", goVersion(goCmd), runtime.GOOS, runtime.GOARCH, mcp.ProtocolVersion)
	fmt.Fprintf(w, "- whole run: %s\n\n", took.Round(time.Second))
	var skipped []string
	for _, s := range scenarios {
		if !ran[s] {
			skipped = append(skipped, s)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "Scenarios not run this time: %s.\n\n", strings.Join(skipped, ", "))
	}
	fmt.Fprintln(w, "Each figure is the median over the runs column; baselines are measured in the same run,")
	fmt.Fprintln(w, "interleaved with ours. Targets are informational: a MISS never fails the run.")
	fmt.Fprintln(w)
	w.WriteString(table)
	w.WriteString(methodology())
}

// parallelSettings is the MaxParallelStarts values scenario 2 measures: the
// default (0), and wide too when it is set and differs from the default.
func parallelSettings(wide int) []int {
	if wide <= 0 || wide == controller.DefaultMaxParallelStarts {
		return []int{0}
	}
	return []int{0, wide}
}

// methodology is the prose under the table. Every figure in it comes from
// the constants the code runs with, never from a copy that can go stale.
func methodology() string {
	debounce := controller.DefaultDebounce
	par := controller.DefaultMaxParallelStarts
	waves := (50 + par - 1) / par
	b := controller.DefaultBackoff()
	r := strings.NewReplacer(
		"{debounce}", debounce.String(),
		"{discoverGrace}", mcp.DiscoverGrace.String(),
		"{parallel}", strconv.Itoa(par),
		"{waves}", strconv.Itoa(waves),
		"{wavesWord}", plural(waves, "wave", "waves"),
		"{probeInterval}", controller.DefaultProbeInterval.String(),
		"{reconnectTarget}", bench.ReconnectTarget.String(),
		"{backoffInitial}", b.Initial.String(),
		"{backoffMax}", b.Max.String(),
		"{authTarget}", fmt.Sprintf("%.2f×", bench.AuthTarget),
		"{toolBudget}", strconv.Itoa(schema.DefaultToolBudget),
		"{recallTarget}", fmt.Sprintf("%.1f", bench.RecallTarget),
		"{queries}", bench.QueriesFile,
		"{onDemandTarget}", bench.OnDemandTarget.String(),
		"{onDemandRSS}", fmt.Sprintf("%.0f %%", 100*bench.OnDemandRSSTarget),
	)
	return r.Replace(methodologyText)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// methodologyText is methodology's text with {placeholders} for constants.
const methodologyText = `
## What each scenario measures

1. **Edit-to-ready.** In process: the real ` + "`controller.Watch`" + ` (fsnotify + debounce), ` + "`controller`" + `,
   ` + "`registry.Registry`" + ` and ` + "`Bus`" + `, wired as ` + "`freecode serve`" + ` wires them (no API layer, so the figure is
   our overhead, not HTTP's). A server ` + "`warm`" + ` runs throughout. The clock starts just before the config file is
   rewritten to add one ` + "`mcp-testserver --tools 10`" + ` and stops when ` + "`ToolsChanged`" + ` for it is received; then it is
   removed again and the next repetition waits until it has stopped. *In-place* truncates and writes the file;
   *rename-replace* writes a temporary file and renames it over the config (what ` + "`freecode mcp add`" + ` and most editors
   do). Baseline: a raw mcp-go client spawning the same binary with the same flags, initializing (pinned
   ` + "`mcp.ProtocolVersion`" + `, stdio) and listing tools. The watcher's debounce (` + "`controller.DefaultDebounce`" + `,
   {debounce}) is a deliberate wait for an editor's burst of events to settle, so it is part of the default figure;
   the debounce is measured at the default and at a small value, and the row "of which not the debounce" is the
   overhead minus the debounce.
2. **Parallel convergence.** A fresh in-process controller is handed 1, 10 or 50 servers whose ` + "`initialize`" + ` takes
   200 ms (` + "`--init-delay 200ms`" + `) at once (` + "`SetDesired`" + `); the clock stops when every one's tools are registered.
   Ratios are to the single-server time with the same setting. Measured with the shipped
   ` + "`controller.DefaultMaxParallelStarts`" + ` ({parallel}), and with ` + "`-wide-parallel N`" + ` also with N.
3. **Call overhead.** ` + "`go test -bench ^BenchmarkCallOverhead$ ./bridge`" + ` (bridge/orchestrator_e2e_test.go): the same
   ` + "`echo`" + ` call through the orchestrator (validation, permission rules, bridge, ` + "`mcp.Session`" + `) and through a bare
   mcp-go client, each with its own test-server child over stdio, in the same process; medians over ` + "`-count`" + ` runs.
   The "interleaved" rows measure the same two paths in the runner, alternating blocks of 200 calls (median of
   the blocks), which a shared machine's changing load affects far less than consecutive one-second runs.
4. **Idle cost.** A real ` + "`freecode serve`" + ` subprocess in a throwaway ` + "`FREECODE_HOME`" + ` with 20 connected test servers.
   After all are ready (and 2 s to settle) serve's own CPU time (` + "`/proc/<pid>/stat`" + ` utime+stime, children excluded)
   and RSS (` + "`VmRSS`" + `) are sampled over the idle period, split into windows.
5. **Scale.** The generated tools of one ` + "`mcp-testserver --tools 100 --schemas mixed`" + ` (half of them with ` + "`$ref`" + `,
   ` + "`$defs`" + `, ` + "`allOf`" + `, ` + "`oneOf`" + ` and a recursive tree), captured once through ` + "`mcp.Session`" + `, converted under 100 server
   names (` + "`mcp.ConvertTools`" + `: resolve, compile the validator), registered (` + "`registry.ReplaceSource`" + ` × 100) and turned
   into provider definitions (` + "`DefsCache.Defs`" + ` per dialect). "As listed" is what these servers really send: within one
   server the 50 simple and the 50 ` + "`$ref`" + ` tools share schema bytes, and ` + "`ConvertTools`" + ` prepares each distinct schema once.
   "Every schema distinct" adds a unique ` + "`$comment`" + ` to each schema, the worst case. Heap is ` + "`runtime.MemStats.HeapInuse`" + `
   after GC, minus before, with the distinct-schema tools, registry and defs alive.
6. **Cache stability.** An in-process controller runs 10 test servers; they are restarted in turn with
   ` + "`controller.Restart`" + `, then killed with SIGKILL (restarted after a 10 ms backoff). They come back with identical tools.
   Counted: ` + "`ToolsChanged`" + ` events on the Bus, registry generation bumps (each one makes ` + "`DefsCache`" + ` rebuild), and the
   ` + "`DefsCache`" + ` version seen by a consumer that re-reads the definitions on every ` + "`ToolsChanged`" + ` (as a prompt builder
   would): each change there is a prompt-cache miss at the provider.
7. **Remote reconnect.** Two in-process controllers with the shipped backoff (` + "`controller.DefaultBackoff`" + `:
   {backoffInitial} doubling to {backoffMax}, with jitter) run side by side: one probes unreachable remote servers
   every ` + "`controller.DefaultProbeInterval`" + ` ({probeInterval}, the default), one has probing off — the backoff alone, as
   before probing existed: the baseline. Each has a streamable-HTTP and an SSE ` + "`mcp-testserver --http`" + ` of its own.
   Every outage SIGKILLs all four servers, waits ` + "`-outage`" + `, starts them again on the same ports, and times each
   from its "listening" line to its ` + "`PhaseReady`" + ` event; medians over ` + "`-outages`" + `. The probe rate is the
   probing controller's probes divided by its servers and the outages' seconds.
8. **Authorization cost.** ` + "`go test -bench ^BenchmarkAuthorizedCall$ ./mcp`" + `: one ` + "`tools/call`" + ` of ` + "`echo`" + ` through
   ` + "`mcp.Session`" + ` over streamable HTTP to one in-process MCP server, reached directly and behind an OAuth protected
   resource (` + "`internal/testauth`" + `) by a session with a token store, signed in before the clock starts; the two paths
   take turns in rounds and the ratio is the median of the rounds' ratios. ` + "`BenchmarkRoundTrip`" + ` (` + "`./mcp/auth`" + `)
   isolates the client's part: one HTTP request through the auth Transport vs the same token as a static header.
9. **Protocol negotiation.** ` + "`go test -bench ^BenchmarkConnectNpm$ ./mcp`" + `: ` + "`mcp.Connect`" + ` (start, handshake,
   ` + "`tools/list`" + `) and ` + "`Close`" + ` of each real npm server (server-everything, -memory, -filesystem: 2025-11-25) and of
   ` + "`mcp-testserver --modern --modern-only`" + ` (2026-07-28 only) over stdio, three ways: the revision pinned (no probe:
   the baseline), by default the first time (nothing remembered: one ` + "`server/discover`" + ` probe, which the npm servers
   answer with an error before ` + "`initialize`" + `, and whose answer the modern server's handshake reuses), and by default
   later (the revision remembered in ` + "`$FREECODE_HOME/cache/protocols.json`" + `: no probe). Each iteration connects the
   three ways in rotating order; each difference is the median of the differences from the same iteration's pinned
   connect.
10. **Context budget.** In process, over real sessions: the real-servers set is server-everything (offered a root, so it
   lists ` + "`get-roots-list`" + ` too), server-filesystem and server-memory from ` + "`testdata/npm`" + `, plus 20
   ` + "`mcp-testserver --tools 50`" + `, registered beside the built-ins and ` + "`tool_search`" + `. The definitions of every
   dialect are measured as ` + "`defs.DefsCache`" + ` builds them, with ` + "`toolBudget`" + ` 0 (everything advertised: the baseline)
   and at the default ` + "`schema.DefaultToolBudget`" + ` ({toolBudget} estimated tokens, bytes / 4). ` + "`tool_search`" + `'s
   latency is timed on a generated index of 10,000 tools, the committed queries in turn; the first search after a
   change builds the index. Recall@5 is the mean, over the tasks of ` + "`{queries}`" + `, of the share of a task's tools
   among the first five matches, over the npm servers' tools (target ≥ {recallTarget}). The ranking and its synonym
   table were tuned on the first 47 tasks; the 10 marked ` + "`heldOut`" + ` were written after and never tuned on, and have
   a row of their own: what to expect of tasks no one tuned for. Another reference row ranks with BM25F alone,
   without the synonym table. Last, 10 deferred tools are loaded one by one: each load must change the version and
   keep every earlier byte of the list (the provider's prompt-cache prefix).
11. **Gateway.** A real ` + "`freecode mcp serve --no-attach`" + ` subprocess for a throwaway home with one ` + "`mcp-testserver`" + `,
   its host a plain mcp-go client over stdio. Blocks of 200 ` + "`echo`" + ` calls take turns: through the gateway, straight to
   a test server of the host's own, and through a bare mcp-go relay (this bench binary relaying stdio to the server
   and back, nothing else) — the floor of any stdio gateway, since the extra process hop is most of an echo's cost.
   Then config edits add and remove a second server, timed from the rename of the file to the host's
   ` + "`notifications/tools/list_changed`" + ` (the watcher's debounce, {debounce}, included).
12. **Revision call cost.** Two servers, each twice over stdio, one process pinned to each revision: ` + "`mcp-testserver`" + `
   with ` + "`--modern`" + ` (2026-07-28: every request carries its ` + "`_meta`" + `) and without (2025-11-25), and the TypeScript
   SDK 2.x server ` + "`testdata/npm/mrtr-server.mjs`" + `, which speaks both; an ` + "`echo`" + ` through ` + "`mcp.Session.CallTool`" + ` on
   each. Blocks of 1000 calls (enough CPU time per block that a stray GC or wake-up is a small part of it) take
   turns, which goes first alternating; ratios are the medians of the rounds' ratios.
   FreeCode's CPU time with the real server includes the server's speed on each revision (a server slower to answer
   makes FreeCode's runtime park and wake its threads more), so the row with the target replays each server's
   recorded answers of each revision from one program (` + "`mcp-testserver --replay`" + `), answering both at the same speed:
   what is left is what FreeCode does with each revision's messages. Target: a 2026-07-28 call costs no more than
   a 2025-11-25 one (ratio ≤ 1.05).
13. **Reapers.** The real npm servers — ` + "`server-everything`" + `, ` + "`server-filesystem`" + ` and ` + "`-reaper-memory`" + ` copies of
   ` + "`server-memory`" + ` — started all at once, four ways taking turns each round: raw mcp-go clients spawning them
   (the baseline), ` + "`mcp.Connect`" + ` with no launcher, and ` + "`mcp.Connect`" + ` under procguard's reapers as serve and the
   one-shot commands run them, once with the dedicated reaper ` + "`bin/fc-reaper`" + ` and once with ` + "`bin/freecode`" + ` itself as
   the reaper (every reaper before fc-reaper, and what freecode still runs without one beside it). Each way is timed
   until every server has listed its tools (sessions pinned to the revision raw mcp-go speaks); the reapers'
   memory (` + "`/proc/<pid>/smaps_rollup`" + `) and CPU time (` + "`/proc/<pid>/task/*/schedstat`" + `) are read once all are ready.
14. **On-demand servers.** The issue's ten real npm servers (server-everything, server-filesystem and 8 ×
   server-memory, from ` + "`testdata/npm`" + `) under a real ` + "`freecode serve`" + ` subprocess, twice in the same throwaway home:
   first with ` + "`lifecycle: \"always\"`" + ` (every server ready; its run stores their manifests), then with
   ` + "`lifecycle: \"on-demand\"`" + ` and a short ` + "`idleTimeout`" + ` (` + "`-ondemand-idle-timeout`" + `; every server idle, advertised from
   its manifest). After ` + "`-ondemand-settle`" + `, the memory of serve's whole process tree (serve, its helpers, the reapers
   and the servers, from ` + "`/proc`" + `) is read: VmRSS summed, as the issue counts it (a page shared by two processes
   counts twice), and Pss (shared pages split) for reference; target: on-demand ≤ {onDemandRSS} of always. Then
   ` + "`-ondemand-cycles`" + ` sleep/wake cycles over the memory servers in turn: ` + "`read_graph`" + ` through serve's API on the
   sleeping server (its first-call latency: the wake, the start and the call), the same call on it running, its idle
   stop waited for (the ` + "`phase_changed`" + ` event), and, as the baseline, the same server's own cold start: a raw mcp-go
   client spawning it, initializing and listing tools. Target: the first call within {onDemandTarget} of the cold
   start. ` + "`tools_changed`" + ` events are counted over every cycle and the advertised tools compared with always's.
15. **Telemetry with no collector.** Three real ` + "`freecode serve`" + ` subprocesses, each with one test server, take
   echo calls over the local API in blocks (` + "`-telemetry-blocks`" + ` × ` + "`-telemetry-calls`" + `, the order rotating block
   by block, one warm-up block each): telemetry off; on, with ` + "`OTEL_EXPORTER_OTLP_ENDPOINT`" + ` at a port that
   refuses connections (collector absent); on, pointed at a listener that accepts and never answers (collector
   black-holed: each export waits out its timeout while spans queue and drop). ` + "`OTEL_METRIC_EXPORT_INTERVAL`" + ` is 1 s
   so metric exports fail during the run too. Per-call medians against off (target ≤ 1.05×), and serve's VmRSS
   after every call, on against off (bounded: target ≤ +16 MiB) and its growth from the first block to the last.

## Reading the results

- **Edit-to-ready is mostly the debounce.** The watcher waits for ` + "`controller.DefaultDebounce`" + ` ({debounce}) of quiet
  after the last file event before it reads the file, so an editor's burst (write, rename, chmod) is read once.
  Everything else we add — reading and validating the config, planning, the session's handshake bookkeeping,
  converting and registering the tools — is the "of which not the debounce" row, and the small-debounce rows
  measure it directly.
- **Convergence is bounded by ` + "`MaxParallelStarts`" + `.** The shipped default is ` + "`controller.DefaultMaxParallelStarts`" + `
  ({parallel}): 50 servers whose initialize takes 200 ms start in ⌈50/{parallel}⌉ = {waves} {wavesWord}. A slot is held
  while the server *waits* in initialize, not while it uses CPU, so a wide bound costs nothing but process
  spawns, and what remains above 1× is the machine spawning 50 processes, which the raw baseline pays too
  (compare the baseline rows: on 2 cores even raw mcp-go cannot start 50 servers within 1.5× of one).
- **Call overhead:** the CPU the orchestrator adds per call is measured alone by ` + "`BenchmarkOrchestratorRun`" + `
  (registry/orchestrator) and ` + "`BenchmarkDecodeContent`" + ` (wire); the end-to-end rows compare two separate stdio servers and carry
  the variance of a shared machine.
- **Idle:** CPU time is read in 10 ms ticks; 0 ms means serve used less than one tick over the whole period.
- **Scale:** "as listed" benefits from ` + "`ConvertTools`" + ` preparing each distinct schema of a list once; "every schema
  distinct" is the cost per new schema (dominated by compiling the validator, including the library's
  metaschema check). ` + "`DefsCache`" + ` rebuilds convert only tools whose schema changed since the last build of
  the dialect, hence the "after one server's tools changed" row.
- **Cache stability:** the contract is 0. The controller keeps a restarting server's tools registered until
  the new session's outcome, so one that comes back with the same tools changes nothing (a consumer re-reading
  on every event would otherwise see the server's tools vanish and return: two prompt-cache misses per restart).
- **Remote reconnect:** with probing, a server is back within about one probe interval ({probeInterval}) of its
  endpoint, plus the handshake: the target is {reconnectTarget}, whatever the outage's length. With the backoff alone
  it waits for the next retry, which after an outage of ` + "`-outage`" + ` may be up to the delay reached by then (at most
  {backoffMax}), so the baseline grows with the outage and varies with the jitter. Probes are one ` + "`OPTIONS`" + ` request
  each, at most one per server and probe interval (target ≤ 1 per second).
- **Protocol negotiation:** the probe is one more request before ` + "`initialize`" + `, sent once per server definition
  and remembered across processes; the later connects are the ones that count, and they cost what a pinned one does.
  A stdio server that ignores unknown requests costs ` + "`mcp.DiscoverGrace`" + ` ({discoverGrace}) once.
- **Authorization cost:** the authorized path adds reading the token (a file-change check of the store), the header,
  and the resource's token check; target {authTarget} of the unauthorized call. The HTTP-request row carries the
  variance of two sub-millisecond figures on a shared machine.
- **Context budget:** the deferred list is the built-ins and ` + "`tool_search`" + `, whatever the number of servers; what
  the model pays for deferral is a search round trip per tool it needs. The held-out recall row is the honest
  expectation for tasks nobody tuned the ranking for.
- **Reapers:** the wall times of ten node servers starting on a shared machine vary by tens of per cent from one
  round to the next, more than a reaper costs, so the ratios are the medians of each round's own ratio. What a
  reaper costs is better read in its CPU time and memory: the reaper code is the same either way, and the
  difference is the executable it runs in — freecode's initialisation of every package (CUE, schemas, protobuf) and
  its data, against a program that holds procguard alone. There is still one reaper per server: only a subreaper
  of its own records, in the kernel, which server an orphaned daemon came from.
- **Gateway:** an echo is nearly all transport, so the second stdio hop alone (the bare relay row) roughly doubles
  it; the 1.3× target is out of reach of any stdio gateway for an echo, and the row FreeCode controls is the
  gateway against the relay: rules, validation and the registry. A tool that does real work hides both.
`
