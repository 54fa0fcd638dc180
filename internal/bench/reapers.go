package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/serve"
)

// ReapersOptions configure Reapers.
type ReapersOptions struct {
	// Rounds is how many times each way of starting runs; the order of
	// the ways rotates from round to round.
	Rounds int
	// Memory is how many copies of server-memory start beside
	// server-everything and server-filesystem.
	Memory int
}

// reaperWay is one way of starting the servers: raw mcp-go (no reaper),
// package mcp with no launcher, or package mcp under procguard's reapers
// run as the executable reaper.
type reaperWay struct {
	name   string
	raw    bool
	reaper string // "" for none
}

// reaperSample is what one start of every server measured.
type reaperSample struct {
	took time.Duration
	// Sums over the reapers, in bytes (smaps_rollup), and their CPU time
	// (schedstat) when every server was ready.
	rss, pss, private uint64
	cpu               time.Duration
	reapers           int
}

// Reapers starts the real npm servers — server-everything,
// server-filesystem and opts.Memory × server-memory — all at once, and
// times until every one has listed its tools, four ways in the same run:
// raw mcp-go clients spawning them (the baseline); package mcp with no
// launcher; and package mcp under procguard's reapers, as serve and the
// one-shot commands run them, with the dedicated reaper cmd/fc-reaper
// (cfg.Reaper) and with the freecode executable itself as the reaper
// (cfg.Freecode: what every reaper was before fc-reaper, and what freecode
// still falls back to without it). Each reaper's memory comes from
// /proc/<pid>/smaps_rollup once every server is ready.
func Reapers(ctx context.Context, cfg Config, opts ReapersOptions) ([]Row, error) {
	scratch, err := os.MkdirTemp("", "fc-bench-reapers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	modules := filepath.Join(cfg.Repo, "testdata", "npm", "node_modules")
	node := filepath.Join(modules, ".bin", "node")
	script := func(s string) string { return filepath.Join(modules, filepath.FromSlash(s)) }
	type server struct {
		name string
		argv []string
		env  map[string]string
	}
	servers := []server{
		{"everything", []string{node, script("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}, nil},
		{"filesystem", []string{node, script("@modelcontextprotocol/server-filesystem/dist/index.js"), scratch}, nil},
	}
	for i := range opts.Memory {
		name := fmt.Sprintf("memory%d", i)
		servers = append(servers, server{name, []string{node, script("@modelcontextprotocol/server-memory/dist/index.js")},
			map[string]string{"MEMORY_FILE_PATH": filepath.Join(scratch, name+".jsonl")}})
	}
	for _, f := range []string{node, servers[0].argv[1], servers[1].argv[1], script("@modelcontextprotocol/server-memory/dist/index.js")} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("real servers (npm ci --prefix testdata/npm): %w", err)
		}
	}
	for _, b := range []string{cfg.Reaper, cfg.Freecode} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%w (build it first: make build)", err)
		}
	}
	ways := []reaperWay{
		{name: "raw", raw: true},
		{name: "direct"},
		{name: "fc-reaper", reaper: cfg.Reaper},
		{name: "freecode", reaper: cfg.Freecode},
	}

	// startAll starts every server the given way, returns once all have
	// listed their tools (or one failed), and stops them all (not timed).
	startAll := func(w reaperWay) (s reaperSample, err error) {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		var opts mcp.Options
		opts.Logger = logr.Discard()
		if w.reaper != "" {
			opts.Launcher = serve.ReaperLauncher(procguard.NewReaper(w.reaper, nil), logr.Discard())
		}
		var (
			mu      sync.Mutex // guards closers, pids and errs
			closers []func()
			pids    []int
			errs    []error
			wg      sync.WaitGroup
		)
		defer func() {
			var cw sync.WaitGroup
			for _, c := range closers {
				cw.Go(c)
			}
			cw.Wait()
		}()
		start := time.Now()
		for _, srv := range servers {
			wg.Go(func() {
				var closer func()
				var pid int
				var err error
				if w.raw {
					closer, err = rawStart(ctx, srv.argv, srv.env)
				} else {
					spec := controller.MCPSpec(localServer(srv.name, srv.argv))
					spec.Env, spec.Protocol = srv.env, mcp.ProtocolVersion
					var sess *mcp.Session
					if sess, err = mcp.Connect(ctx, spec, opts); err == nil {
						closer, pid = func() { _ = sess.Close() }, sess.PID()
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", srv.name, err))
					return
				}
				closers, pids = append(closers, closer), append(pids, pid)
			})
		}
		wg.Wait()
		s.took = time.Since(start)
		if len(errs) > 0 {
			return s, fmt.Errorf("%s: %w", w.name, errors.Join(errs...))
		}
		if w.reaper == "" {
			return s, nil
		}
		for _, pid := range pids {
			r, err := procParent(pid)
			if err != nil {
				return s, fmt.Errorf("%s: the reaper of %d: %w", w.name, pid, err)
			}
			m, err := smapsRollup(r)
			if err != nil {
				return s, fmt.Errorf("%s: reaper %d: %w", w.name, r, err)
			}
			c, err := schedCPU(r)
			if err != nil {
				return s, fmt.Errorf("%s: reaper %d: %w", w.name, r, err)
			}
			s.rss += m["Rss"]
			s.pss += m["Pss"]
			// Anonymous, not Private_*: a file page that only one
			// process maps counts as private too, and the pages of a
			// just-built executable are dirty until written back.
			s.private += m["Anonymous"]
			s.cpu += c
			s.reapers++
		}
		return s, nil
	}

	samples := map[string][]reaperSample{}
	for round := range opts.Rounds {
		for k := range ways {
			w := ways[(round+k)%len(ways)]
			s, err := startAll(w)
			if err != nil {
				return nil, err
			}
			samples[w.name] = append(samples[w.name], s)
			cfg.logf("  round %d, %s: %s", round+1, w.name, ms(s.took))
		}
	}

	took := func(name string) time.Duration {
		var ds []time.Duration
		for _, s := range samples[name] {
			ds = append(ds, s.took)
		}
		return median(ds)
	}
	mem := func(name string, f func(reaperSample) float64) float64 {
		var xs []float64
		for _, s := range samples[name] {
			xs = append(xs, f(s))
		}
		return medianF(xs)
	}
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	n := len(servers)
	group := fmt.Sprintf("13. reapers (%d real npm servers started at once: server-everything, server-filesystem, %d × server-memory; until all listed tools)", n, opts.Memory)
	// Paired by round: each round runs every way once, back to back, so
	// the median of the per-round differences and ratios sheds most of
	// what a busy machine does to one round.
	paired := func(name, base string) (time.Duration, string) {
		var ds []time.Duration
		var rs []float64
		for i, s := range samples[name] {
			b := samples[base][i].took
			ds, rs = append(ds, s.took-b), append(rs, float64(s.took)/float64(b))
		}
		return median(ds), fmt.Sprintf("%.2f×", medianF(rs))
	}
	var rows []Row
	for _, w := range []struct{ name, base, label, target string }{
		{"fc-reaper", "raw", "package mcp, each server under the dedicated reaper (fc-reaper), vs raw mcp-go", "≤ 1.10× (paired)"},
		{"freecode", "raw", "package mcp, each server under freecode itself as reaper (before fc-reaper; the fallback without it), vs raw mcp-go", ""},
		{"direct", "raw", "for reference: package mcp, no reaper, vs raw mcp-go (package mcp's own connect: resources, prompts, schemas)", ""},
		{"fc-reaper", "direct", "the reaper's own cost: under fc-reaper vs no reaper (both package mcp)", ""},
		{"freecode", "direct", "the reaper's own cost before: under freecode as reaper vs no reaper (both package mcp)", ""},
		{"fc-reaper", "freecode", "fc-reaper vs freecode as reaper", ""},
	} {
		d, r := paired(w.name, w.base)
		row := Row{Group: group, Name: w.label, Value: ms(took(w.name)), Baseline: ms(took(w.base)),
			Delta: ms(d) + " (paired)", Ratio: r + " (paired)", Runs: opts.Rounds}
		if w.target != "" {
			var rs []float64
			for i, s := range samples[w.name] {
				rs = append(rs, float64(s.took)/float64(samples[w.base][i].took))
			}
			row.Target, row.Verdict = w.target, verdict(medianF(rs) <= 1.10)
		}
		rows = append(rows, row)
	}
	memRow := func(what string, f func(reaperSample) float64, unit string) Row {
		ours, before := mem("fc-reaper", f), mem("freecode", f)
		r := Row{Group: group, Name: fmt.Sprintf("the %d reapers' %s: fc-reaper vs freecode as reaper", n, what),
			Value: fmt.Sprintf("%.1f %s", ours, unit), Baseline: fmt.Sprintf("%.1f %s", before, unit), Runs: opts.Rounds}
		if before > 0 {
			r.Ratio = fmt.Sprintf("%.2f×", ours/before)
		}
		return r
	}
	rows = append(rows,
		memRow("private memory together (anonymous pages: heap, stacks, written data; RssAnon)", func(s reaperSample) float64 { return mib(s.private) }, "MiB"),
		memRow("RSS together (mostly file pages shared between reapers)", func(s reaperSample) float64 { return mib(s.rss) }, "MiB"),
		memRow("PSS together (shared pages split between their users)", func(s reaperSample) float64 { return mib(s.pss) }, "MiB"),
		memRow("CPU time together, from start to all ready (schedstat)", func(s reaperSample) float64 { return float64(s.cpu) / float64(time.Millisecond) }, "ms"),
	)
	return rows, nil
}

// rawStart is rawConnect that leaves the server running: it spawns argv
// with env added to this process's environment, connects a plain mcp-go
// client, initializes and lists tools, and returns the function that closes
// the client and reaps the process.
func rawStart(ctx context.Context, argv []string, env map[string]string) (func(), error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c := client.NewClient(transport.NewIO(stdout, stdin, nil), client.WithProtocolVersion(mcp.ProtocolVersion))
	closer := func() {
		_ = c.Close() // closes stdin: the server exits
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	if err := c.Start(ctx); err != nil {
		closer()
		return nil, fmt.Errorf("raw client start: %w", err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		closer()
		return nil, fmt.Errorf("raw initialize: %w", err)
	}
	if _, err := c.ListTools(ctx, mcpgo.ListToolsRequest{}); err != nil {
		closer()
		return nil, fmt.Errorf("raw tools/list: %w", err)
	}
	return closer, nil
}

// schedCPU returns the CPU time pid's threads have used (not its
// children's) at nanosecond resolution: the sum of
// /proc/<pid>/task/*/schedstat (a thread that has exited is not counted;
// a Go runtime's rarely exit).
func schedCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: empty", pid, t.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, t.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// smapsRollup returns the kB fields of /proc/<pid>/smaps_rollup (Rss, Pss,
// Private_Clean, ...) in bytes.
func smapsRollup(pid int) (map[string]uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for line := range strings.Lines(string(b)) {
		k, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
		}
		out[k] = kb * 1024
	}
	return out, nil
}
