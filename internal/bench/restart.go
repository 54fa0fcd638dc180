package bench

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// RestartOptions configure Restarts.
type RestartOptions struct {
	// Servers running side by side; Restarts are spread over them in turn.
	Servers, Restarts int
	// Kills: further restarts caused by SIGKILL of the server process
	// (the controller restarts it after a short backoff).
	Kills      int
	ServerArgs []string
}

// stability counts what a restart sequence published.
type stability struct {
	toolsChanged int // ToolsChanged events received
	genBumps     uint64
	// versionChanges counts how often the DefsCache version seen by a
	// consumer that re-reads the defs on every ToolsChanged (as a prompt
	// builder would) differed from the one before.
	versionChanges int
	// endChanged: the version after the last restart differs from before
	// the first.
	endChanged bool
	durations  []time.Duration
}

// Restarts restarts servers that come back with identical tools and counts
// ToolsChanged events and DefsCache version changes (the contract: 0).
func Restarts(ctx context.Context, cfg Config, opts RestartOptions) ([]Row, error) {
	argv := append([]string{cfg.TestServer}, opts.ServerArgs...)
	// A short backoff, so a killed server comes back at once.
	h := newHost(controller.Options{Backoff: controller.Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}})
	defer h.close()
	names := make([]string, opts.Servers)
	servers := make([]schema.Server, opts.Servers)
	for i := range names {
		names[i] = fmt.Sprintf("r%02d", i)
		servers[i] = localServer(names[i], argv)
	}
	h.ctrl.SetDesired(servers, 0)
	if _, err := h.waitReady(names...); err != nil {
		return nil, err
	}
	cache := defs.NewDefsCache(h.reg, defs.Options{})

	run := func(count int, kick func(name string) error) (stability, error) {
		var st stability
		gen0 := h.reg.Generation()
		v0 := cache.Defs(defs.DialectJSONSchema).Version
		last := v0
		watch := func(e event.Event) {
			if _, ok := e.(registry.ToolsChanged); ok {
				st.toolsChanged++
				if v := cache.Defs(defs.DialectJSONSchema).Version; v != last {
					st.versionChanges++
					last = v
				}
			}
		}
		for i := range count {
			name := names[i%len(names)]
			start := time.Now()
			if err := kick(name); err != nil {
				return st, err
			}
			// Down first (stopping after Restart, backoff after a kill), then
			// ready again; events before that are counted too.
			down := false
			at, err := h.waitFor(name+" to restart", false, func(e event.Event) bool {
				watch(e)
				pc, ok := e.(wire.PhaseChanged)
				if !ok || pc.Server != name {
					return false
				}
				if pc.Phase == wire.PhaseStopping || pc.Phase == wire.PhaseStopped || pc.Phase == wire.PhaseBackoff || pc.Phase == wire.PhaseStarting {
					down = true
				}
				return down && pc.Phase == wire.PhaseReady
			})
			if err != nil {
				return st, err
			}
			st.durations = append(st.durations, at.Sub(start))
		}
		st.genBumps = h.reg.Generation() - gen0
		st.endChanged = cache.Defs(defs.DialectJSONSchema).Version != v0
		return st, nil
	}

	restart, err := run(opts.Restarts, h.ctrl.Restart)
	if err != nil {
		return nil, fmt.Errorf("restarts: %w", err)
	}
	cfg.logf("  %d restarts: %d ToolsChanged, %d version changes", opts.Restarts, restart.toolsChanged, restart.versionChanges)
	pidOf := func(name string) int {
		for _, s := range h.ctrl.Status().Servers {
			if s.Name == name {
				return s.PID
			}
		}
		return 0
	}
	kill, err := run(opts.Kills, func(name string) error {
		pid := pidOf(name)
		if pid <= 0 {
			return fmt.Errorf("no pid for %s", name)
		}
		return syscall.Kill(pid, syscall.SIGKILL)
	})
	if err != nil {
		return nil, fmt.Errorf("kills: %w", err)
	}
	cfg.logf("  %d kills: %d ToolsChanged, %d version changes", opts.Kills, kill.toolsChanged, kill.versionChanges)

	const group = "6. cache stability (identical tools after restart)"
	var rows []Row
	for _, c := range []struct {
		how string
		n   int
		st  stability
	}{{"controller.Restart", opts.Restarts, restart}, {"SIGKILL of the server (restart after backoff)", opts.Kills, kill}} {
		rows = append(rows,
			Row{Group: group, Name: fmt.Sprintf("%d × %s: ToolsChanged events", c.n, c.how), Value: fmt.Sprint(c.st.toolsChanged),
				Target: "0", Verdict: verdict(c.st.toolsChanged == 0), Runs: 1},
			Row{Group: group, Name: fmt.Sprintf("%d × %s: registry generation bumps (DefsCache rebuilds)", c.n, c.how), Value: fmt.Sprint(c.st.genBumps),
				Target: "0", Verdict: verdict(c.st.genBumps == 0), Runs: 1},
			Row{Group: group, Name: fmt.Sprintf("%d × %s: DefsCache version changes seen by a consumer re-reading on each event", c.n, c.how), Value: fmt.Sprint(c.st.versionChanges),
				Target: "0", Verdict: verdict(c.st.versionChanges == 0), Runs: 1},
			Row{Group: group, Name: fmt.Sprintf("%d × %s: DefsCache version after the last vs before the first", c.n, c.how), Value: map[bool]string{true: "changed", false: "same"}[c.st.endChanged],
				Target: "same", Verdict: verdict(!c.st.endChanged), Runs: 1},
			Row{Group: group, Name: fmt.Sprintf("%d × %s: time from the request to ready again", c.n, c.how), Value: ms(median(c.st.durations)), Runs: len(c.st.durations)},
		)
	}
	return rows, nil
}
