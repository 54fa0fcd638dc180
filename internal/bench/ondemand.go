package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/wire"
)

// OnDemandOptions configure OnDemand.
type OnDemandOptions struct {
	// Memory is how many server-memory instances run beside
	// server-everything and server-filesystem (the 10 servers: 8).
	Memory int
	// IdleTimeout is the on-demand servers' idleTimeout.
	IdleTimeout time.Duration
	// Cycles is how many sleep/wake cycles are timed (a call on a sleeping
	// server, a call on it running, then its idle stop).
	Cycles int
	// Settle is how long serve is left alone before its process tree's
	// memory is read.
	Settle time.Duration
}

// OnDemandTarget is the most a first call on a sleeping server may take
// beyond the server's own cold start (a raw mcp-go client's spawn,
// initialize and tools/list).
const OnDemandTarget = 50 * time.Millisecond

// OnDemandRSSTarget is the most the process tree of an idle serve with
// on-demand servers may hold, as a share of the same serve's with every
// server always running.
const OnDemandRSSTarget = 0.10

// odServer is one server of the on-demand scenario's config.
type odServer struct {
	name string
	argv []string
	env  map[string]string
}

// odServers are the ten real npm servers: server-everything,
// server-filesystem and memory × server-memory, each memory server with a
// file of its own under scratch.
func odServers(repo, scratch string, memory int) []odServer {
	modules := filepath.Join(repo, "testdata", "npm", "node_modules")
	node := filepath.Join(modules, ".bin", "node")
	script := func(s string) string { return filepath.Join(modules, filepath.FromSlash(s)) }
	servers := []odServer{
		{"everything", []string{node, script("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}, nil},
		{"filesystem", []string{node, script("@modelcontextprotocol/server-filesystem/dist/index.js"), scratch}, nil},
	}
	for i := range memory {
		servers = append(servers, odServer{fmt.Sprintf("mem%d", i),
			[]string{node, script("@modelcontextprotocol/server-memory/dist/index.js")},
			map[string]string{"MEMORY_FILE_PATH": filepath.Join(scratch, fmt.Sprintf("memory%d.jsonl", i))}})
	}
	return servers
}

// writeODConfig writes home's config.json: servers under lifecycle, every
// mcp tool allowed (the calls need no approval), atomically.
func writeODConfig(home string, servers []odServer, lifecycle string, idle time.Duration) error {
	var list []map[string]any
	for _, s := range servers {
		e := map[string]any{"name": s.name, "type": "local", "command": s.argv, "timeout": 30000}
		if s.env != nil {
			e["env"] = s.env
		}
		list = append(list, e)
	}
	m := map[string]any{"servers": list, "lifecycle": lifecycle}
	if idle > 0 {
		m["idleTimeout"] = idle.Milliseconds()
	}
	b, err := json.MarshalIndent(map[string]any{"mcp": m, "permission": map[string]any{"allow": []string{"mcp"}}}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(home, "config.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(home, "config.json"))
}

// serveProc is a `freecode serve` subprocess of the bench and a client of
// its API. stop ends it (SIGTERM, then SIGKILL of its process group after
// 30 s) and waits for it; it is the owner of the goroutine that waits.
type serveProc struct {
	pid    int
	client *api.Client
	exited chan error // receives Wait's result once; put back by readers
	log    string
}

// startServe starts `freecode serve` for home and waits for its API.
func startServe(ctx context.Context, cfg Config, home string) (*serveProc, error) {
	return startServeEnv(ctx, cfg, home, append(os.Environ(), "FREECODE_HOME="+home))
}

// startServeEnv is startServe with serve's whole environment given.
func startServeEnv(ctx context.Context, cfg Config, home string, env []string) (*serveProc, error) {
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(home, fmt.Sprintf("serve-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(cfg.Freecode, "serve")
	cmd.Dir = work
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", cfg.Freecode, err)
	}
	p := &serveProc{pid: cmd.Process.Pid, exited: make(chan error, 1), log: logPath}
	go func() { p.exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := api.Dial(api.SocketPath(home)); err == nil {
			if _, err := c.Status(ctx); err == nil {
				p.client = c
				return p, nil
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("serve: no API within 30s"), p.stop())
		}
		select {
		case e := <-p.exited:
			p.exited <- e
			return nil, p.withLog(fmt.Errorf("serve exited early: %v", e))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.stop())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withLog appends serve's log to err.
func (p *serveProc) withLog(err error) error {
	if b, rerr := os.ReadFile(p.log); rerr == nil {
		return fmt.Errorf("%w\n--- serve log:\n%s", err, b)
	}
	return err
}

func (p *serveProc) stop() error {
	if p.client != nil {
		p.client.Close()
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case e := <-p.exited:
		p.exited <- e
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		e := <-p.exited
		p.exited <- e
		return errors.New("serve did not stop within 30s of SIGTERM")
	}
}

// waitStatus polls serve's status every 50 ms until cond holds of it.
func (p *serveProc) waitStatus(ctx context.Context, what string, limit time.Duration, cond func(wire.Status) bool) (wire.Status, error) {
	deadline := time.Now().Add(limit)
	for {
		st, err := p.client.Status(ctx)
		if err == nil && cond(st) {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("%s: not within %s (last status error: %v)", what, limit, err)
		}
		select {
		case e := <-p.exited:
			p.exited <- e
			return st, fmt.Errorf("%s: serve exited: %v", what, e)
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allIn reports whether every server of st is in phase ph, and there are n.
func allIn(st wire.Status, n int, ph wire.Phase) bool {
	if len(st.Servers) != n {
		return false
	}
	for _, s := range st.Servers {
		if s.Phase != ph {
			return false
		}
	}
	return true
}

// treeMem is the memory of a process and its descendants.
type treeMem struct {
	procs    int
	rss, pss uint64 // bytes; pss 0 where smaps_rollup is not readable
}

// processTree returns root and every descendant of it, from /proc.
func processTree(root int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, err := procParent(pid)
		if err != nil {
			continue // gone meanwhile
		}
		children[ppid] = append(children[ppid], pid)
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
}

// procPss returns the Pss of pid (its share of every page it maps), in
// bytes, from /proc/<pid>/smaps_rollup.
func procPss(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/smaps_rollup: no Pss", pid)
}

// memOfTree sums VmRSS (and Pss) over root's process tree. RSS counts a
// page shared by two processes twice (node's own code, Go's runtime of
// serve and its helpers), as the figures do; Pss splits it.
func memOfTree(root int) (treeMem, error) {
	tree, err := processTree(root)
	if err != nil {
		return treeMem{}, err
	}
	var m treeMem
	for _, p := range tree {
		rss, err := procRSS(p)
		if err != nil {
			if p == root {
				return treeMem{}, err
			}
			continue // gone meanwhile
		}
		m.procs++
		m.rss += rss
		if pss, err := procPss(p); err == nil {
			m.pss += pss
		}
	}
	return m, nil
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// eventCounter reads serve's event stream in a goroutine of its own (its
// owner: the scenario, which ends it with stop) and hands phase changes
// on; it counts tools_changed events.
type eventCounter struct {
	stream  api.Stream
	phases  chan wire.PhaseChanged
	done    chan struct{}
	changed int // tools_changed seen; read after done is closed
	wakings int // server_waking seen; likewise
	err     error
	closing atomic.Bool // stop closes the stream: its read error is expected
}

func watchEvents(ctx context.Context, c *api.Client) (*eventCounter, error) {
	s, err := c.Events(ctx)
	if err != nil {
		return nil, err
	}
	e := &eventCounter{stream: s, phases: make(chan wire.PhaseChanged, 1024), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		defer close(e.phases)
		for {
			ev, err := s.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil && !e.closing.Load() {
					e.err = err
				}
				return
			}
			switch ev.Kind {
			case wire.KindToolsChanged:
				e.changed++
			case wire.KindServerWaking:
				e.wakings++
			case wire.KindPhaseChanged:
				var pc wire.PhaseChanged
				if ev.Decode(&pc) == nil {
					select {
					case e.phases <- pc:
					default: // nobody waits for it; the waits poll the status too
					}
				}
			}
		}
	}()
	return e, nil
}

// stop ends the stream and waits for its goroutine.
func (e *eventCounter) stop() {
	e.closing.Store(true)
	_ = e.stream.Close()
	<-e.done
}

// waitPhase waits for server to enter ph.
func (e *eventCounter) waitPhase(ctx context.Context, server string, ph wire.Phase, limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case pc, ok := <-e.phases:
			if !ok {
				return fmt.Errorf("waiting for %s to be %s: event stream ended", server, ph)
			}
			if pc.Server == server && pc.Phase == ph {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("%s not %s within %s", server, ph, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// OnDemand measures what on-demand servers save and cost, with the issue's
// ten real npm servers under a real `freecode serve` (one home, so the
// second serve finds the manifests the first stored):
//
//   - always: every server ready, then Settle; the memory of serve's whole
//     process tree (serve, its helpers, the reapers and the servers), and
//     the advertised tools.
//   - on-demand (idleTimeout IdleTimeout): every server idle (advertised
//     from its manifest), then Settle; the same tree's memory, and the
//     advertised tools, which must be the same.
//   - Cycles sleep/wake cycles over the memory servers in turn: a call on
//     the sleeping server (timed: its first-call latency), a call on it
//     running (timed), its idle stop waited for, and a raw cold start of
//     the same server (rawConnectEnv) as the baseline; tools_changed are
//     counted over all of it, and the tools' version compared after.
func OnDemand(ctx context.Context, cfg Config, opts OnDemandOptions) (rows []Row, err error) {
	home, err := os.MkdirTemp("", "fcod")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	scratch := filepath.Join(home, "scratch")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return nil, err
	}
	servers := odServers(cfg.Repo, scratch, opts.Memory)
	n := len(servers)
	group := fmt.Sprintf("14. on-demand servers (`freecode serve`, %d real npm servers: everything, filesystem, %d × memory)", n, opts.Memory)

	// always
	if err := writeODConfig(home, servers, "always", 0); err != nil {
		return nil, err
	}
	always, alwaysTools, err := func() (m treeMem, tools api.Tools, err error) {
		p, err := startServe(ctx, cfg, home)
		if err != nil {
			return m, tools, err
		}
		defer func() {
			if serr := p.stop(); serr != nil {
				err = errors.Join(err, serr)
			}
			if err != nil {
				err = p.withLog(err)
			}
		}()
		if _, err := p.waitStatus(ctx, "always: every server ready", 120*time.Second, func(st wire.Status) bool { return allIn(st, n, wire.PhaseReady) }); err != nil {
			return m, tools, err
		}
		if tools, err = p.client.ToolsSummary(ctx, ""); err != nil {
			return m, tools, err
		}
		if err := sleepCtx(ctx, opts.Settle); err != nil {
			return m, tools, err
		}
		m, err = memOfTree(p.pid)
		return m, tools, err
	}()
	if err != nil {
		return nil, fmt.Errorf("always: %w", err)
	}
	cfg.logf("  always: %d processes, RSS %s, Pss %s, %d tools", always.procs, mib(always.rss), mib(always.pss), alwaysTools.Count)

	// on-demand
	if err := writeODConfig(home, servers, "on-demand", opts.IdleTimeout); err != nil {
		return nil, err
	}
	p, err := startServe(ctx, cfg, home)
	if err != nil {
		return nil, fmt.Errorf("on-demand: %w", err)
	}
	defer func() {
		if serr := p.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			err = p.withLog(err)
		}
	}()
	events, err := watchEvents(ctx, p.client)
	if err != nil {
		return nil, err
	}
	defer events.stop()
	if _, err := p.waitStatus(ctx, "on-demand: every server idle", 120*time.Second, func(st wire.Status) bool { return allIn(st, n, wire.PhaseIdle) }); err != nil {
		return nil, err
	}
	before, err := p.client.ToolsSummary(ctx, "")
	if err != nil {
		return nil, err
	}
	if err := sleepCtx(ctx, opts.Settle); err != nil {
		return nil, err
	}
	idle, err := memOfTree(p.pid)
	if err != nil {
		return nil, err
	}
	cfg.logf("  on-demand, idle: %d processes, RSS %s, Pss %s, %d tools", idle.procs, mib(idle.rss), mib(idle.pss), before.Count)

	var sleeping, running, cold []time.Duration
	callTool := func(id string) (time.Duration, error) {
		t := time.Now()
		_, err := p.client.Call(ctx, id, json.RawMessage(`{}`))
		return time.Since(t), err
	}
	mems := servers[2:]
	for i := range opts.Cycles {
		s := mems[i%len(mems)]
		id := "mcp__" + s.name + "__read_graph"
		d, err := callTool(id)
		if err != nil {
			return nil, fmt.Errorf("cycle %d: first call of %s: %w", i, id, err)
		}
		sleeping = append(sleeping, d)
		if d, err = callTool(id); err != nil {
			return nil, fmt.Errorf("cycle %d: call of running %s: %w", i, id, err)
		}
		running = append(running, d)
		if err := events.waitPhase(ctx, s.name, wire.PhaseIdle, opts.IdleTimeout+30*time.Second); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if d, err = rawConnectEnv(ctx, s.argv, s.env); err != nil {
			return nil, fmt.Errorf("cycle %d: raw cold start of %s: %w", i, s.name, err)
		}
		cold = append(cold, d)
	}
	after, err := p.client.ToolsSummary(ctx, "")
	if err != nil {
		return nil, err
	}
	if _, err := p.waitStatus(ctx, "on-demand: every server idle after the cycles", opts.IdleTimeout+30*time.Second, func(st wire.Status) bool { return allIn(st, n, wire.PhaseIdle) }); err != nil {
		return nil, err
	}
	events.stop()
	if events.err != nil {
		return nil, fmt.Errorf("event stream: %w", events.err)
	}

	share := float64(idle.rss) / float64(always.rss)
	sameTools := before.Count == alwaysTools.Count && after.Count == alwaysTools.Count && after.Version == before.Version
	ms0, mr, mc := median(sleeping), median(running), median(cold)
	rows = []Row{
		{Group: group, Name: fmt.Sprintf("RSS of serve's process tree, idle: on-demand (idleTimeout %s, after it) vs always (%d vs %d processes; shared pages counted in each)", opts.IdleTimeout, idle.procs, always.procs),
			Value: mib(idle.rss), Baseline: mib(always.rss), Delta: mib(always.rss-idle.rss) + " saved", Ratio: fmt.Sprintf("%.3f×", share),
			Target: fmt.Sprintf("≤ %.2f×", OnDemandRSSTarget), Verdict: verdict(share <= OnDemandRSSTarget), Runs: 1},
		{Group: group, Name: "for reference: Pss of the same trees (shared pages split between their processes)",
			Value: mib(idle.pss), Baseline: mib(always.pss), Ratio: ratio(time.Duration(idle.pss), time.Duration(always.pss)), Runs: 1},
		{Group: group, Name: "tools advertised: on-demand while idle, and after the cycles, vs always",
			Value: fmt.Sprintf("%d, then %d", before.Count, after.Count), Baseline: strconv.Itoa(alwaysTools.Count),
			Target: "the same", Verdict: verdict(sameTools), Runs: 1},
		{Group: group, Name: fmt.Sprintf("%d sleep/wake cycles: tools_changed events (server_waking: %d); tools version after vs before", len(sleeping), events.wakings),
			Value:  fmt.Sprintf("%d; %s", events.changed, sameWord(after.Version == before.Version)),
			Target: "0; same", Verdict: verdict(events.changed == 0 && after.Version == before.Version), Runs: 1},
		{Group: group, Name: "first call (read_graph through serve's API) on a sleeping server-memory vs its own cold start (raw mcp-go: spawn, initialize, tools/list)",
			Value: ms(ms0), Baseline: ms(mc), Delta: ms(ms0 - mc), Ratio: ratio(ms0, mc),
			Target: "overhead ≤ " + ms(OnDemandTarget), Verdict: verdict(ms0-mc <= OnDemandTarget), Runs: len(sleeping)},
		{Group: group, Name: "for reference: the same call on the server running (just woken)", Value: ms(mr), Runs: len(running)},
	}
	return rows, nil
}

func sameWord(same bool) string {
	if same {
		return "same"
	}
	return "changed"
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
