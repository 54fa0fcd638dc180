package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// ReconnectOptions configure Reconnect.
type ReconnectOptions struct {
	// Outages is how many times every endpoint goes away and comes back;
	// Outage how long it stays away each time.
	Outages int
	Outage  time.Duration
}

// ReconnectTarget is the goal: ready within this long of the endpoint's
// return, whatever the backoff.
const ReconnectTarget = 2 * time.Second

// httpServer is one mcp-testserver child serving HTTP on a fixed address.
type httpServer struct {
	bin   string
	flags []string
	addr  string // host:port, kept across restarts
	url   string
	cmd   *exec.Cmd
}

// start runs the server on s.addr (127.0.0.1:0 the first time) and returns
// once it listens.
func (s *httpServer) start(ctx context.Context) error {
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var err error
	// A killed server's port is free once its process is gone; a moment's
	// retry covers a kernel that lags.
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.startOnce(ctx, addr); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (s *httpServer) startOnce(ctx context.Context, addr string) error {
	cmd := exec.Command(s.bin, append([]string{"--http", addr}, s.flags...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		u, ok := strings.CutPrefix(strings.TrimSpace(l), "listening on ")
		if !ok {
			s.kill(cmd)
			return fmt.Errorf("%s --http %s: no listening line (got %q)", s.bin, addr, l)
		}
		parsed, err := url.Parse(u)
		if err != nil {
			s.kill(cmd)
			return err
		}
		s.cmd, s.url, s.addr = cmd, u, parsed.Host
		return nil
	case <-time.After(30 * time.Second):
		s.kill(cmd)
		return fmt.Errorf("%s --http %s: not listening within 30s", s.bin, addr)
	case <-ctx.Done():
		s.kill(cmd)
		return ctx.Err()
	}
}

func (s *httpServer) kill(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// stop kills the running server, as an outage would; idempotent.
func (s *httpServer) stop() {
	if s.cmd != nil {
		s.kill(s.cmd)
		s.cmd = nil
	}
}

// reconnectHost is one in-process controller and the remote servers it
// runs, each on its own test server.
type reconnectHost struct {
	*host
	servers map[string]*httpServer
	probes  atomic.Int64
}

// Reconnect measures how long after an endpoint comes back its remote
// server is ready again. Two in-process controllers run side by side with
// the shipped backoff, one probing unreachable servers (the default), one
// with probing off (the backoff alone, as before probing existed); each has
// a streamable-HTTP and an SSE test server of its own. Every outage kills
// all four servers at once, waits Outage, starts them again on the same
// ports, and times each from its "listening" line to its PhaseReady event.
func Reconnect(ctx context.Context, cfg Config, opts ReconnectOptions) ([]Row, error) {
	kinds := []struct {
		name      string
		flags     []string
		transport schema.Transport
	}{
		{"streamable HTTP", nil, schema.TransportStreamableHTTP},
		{"SSE", []string{"--sse"}, schema.TransportSSE},
	}
	var hosts []*reconnectHost
	defer func() {
		for _, h := range hosts {
			h.close()
			for _, s := range h.servers {
				s.stop()
			}
		}
	}()
	for _, probing := range []bool{true, false} {
		rh := &reconnectHost{servers: map[string]*httpServer{}}
		o := controller.Options{}
		if probing {
			probe := controller.MCPProber(mcp.Options{})
			o.Probe = func(ctx context.Context, srv schema.Server) error {
				rh.probes.Add(1)
				return probe(ctx, srv)
			}
		} else {
			o.ProbeInterval = -1
		}
		var desired []schema.Server
		var names []string
		for i, k := range kinds {
			s := &httpServer{bin: cfg.TestServer, flags: k.flags}
			if err := s.start(ctx); err != nil {
				return nil, err
			}
			name := fmt.Sprintf("remote%d", i)
			rh.servers[name] = s
			names = append(names, name)
			desired = append(desired, schema.MCP{}.Resolve(schema.Server{Name: name, Type: schema.Remote, URL: s.url, Transport: k.transport,
				Enabled: true, Timeout: 10 * time.Second, Source: schema.SourceUser}))
		}
		rh.host = newHost(o)
		hosts = append(hosts, rh)
		rh.ctrl.SetDesired(desired, 0)
		if _, err := rh.waitReady(names...); err != nil {
			return nil, err
		}
	}

	// took[host][server] lists the time from return to ready, per outage.
	took := make([]map[string][]time.Duration, len(hosts))
	for i := range took {
		took[i] = map[string][]time.Duration{}
	}
	var down time.Duration
	for n := range opts.Outages {
		// Each outage starts from a fresh backoff, as after a stable run:
		// a restart resets the failure count.
		for _, h := range hosts {
			for name := range h.servers {
				if err := h.ctrl.Restart(name); err != nil {
					return nil, err
				}
				if _, err := h.waitFor(name+" to restart", true, func(e event.Event) bool {
					pc, ok := e.(wire.PhaseChanged)
					return ok && pc.Server == name && pc.Phase == wire.PhaseReady
				}); err != nil {
					return nil, err
				}
			}
		}
		for _, h := range hosts {
			for _, s := range h.servers {
				s.stop()
			}
		}
		wentDown := time.Now()
		select {
		case <-time.After(opts.Outage):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		back := map[*httpServer]time.Time{}
		for _, h := range hosts {
			for _, s := range h.servers {
				if err := s.start(ctx); err != nil {
					return nil, err
				}
				back[s] = time.Now()
			}
		}
		down += time.Since(wentDown)
		var wg sync.WaitGroup
		errs := make([]error, len(hosts))
		for i, h := range hosts {
			wg.Go(func() {
				ready, err := h.readyTimes()
				errs[i] = err
				for name, at := range ready {
					took[i][name] = append(took[i][name], at.Sub(back[h.servers[name]]))
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("outage %d: %w", n+1, err)
		}
		var line []string
		for i, h := range hosts {
			for _, name := range slices.Sorted(maps.Keys(h.servers)) {
				line = append(line, fmt.Sprintf("%s/%s %s", map[bool]string{true: "probing", false: "backoff"}[i == 0], name, ms(took[i][name][n])))
			}
		}
		cfg.logf("  outage %d: %s", n+1, strings.Join(line, ", "))
	}

	const group = "7. remote reconnect (endpoint away, then back on the same port)"
	var rows []Row
	for i, k := range kinds {
		name := fmt.Sprintf("remote%d", i)
		ours, base := median(took[0][name]), median(took[1][name])
		rows = append(rows, Row{
			Group: group,
			Name: fmt.Sprintf("%s: endpoint back after %s → ready; probing every %s (default) vs the backoff alone",
				k.name, opts.Outage, controller.DefaultProbeInterval),
			Value: ms(ours), Baseline: ms(base), Ratio: ratio(ours, base),
			Target: "≤ " + ReconnectTarget.String(), Verdict: verdict(ours <= ReconnectTarget), Runs: len(took[0][name]),
		})
	}
	servers := len(hosts[0].servers)
	perSecond := float64(hosts[0].probes.Load()) / (float64(servers) * down.Seconds())
	rows = append(rows, Row{
		Group: group, Name: "probes per server and second of outage",
		Value: fmt.Sprintf("%.2f", perSecond), Target: "≤ 1", Verdict: verdict(perSecond <= 1), Runs: opts.Outages,
	})
	return rows, nil
}

// readyTimes waits until every server of h is ready and returns when each
// became so. Backoff on the way is expected.
func (h *reconnectHost) readyTimes() (map[string]time.Time, error) {
	ready := map[string]time.Time{}
	_, err := h.waitFor(fmt.Sprintf("%d remote server(s) to be ready again", len(h.servers)), false, func(e event.Event) bool {
		if pc, ok := e.(wire.PhaseChanged); ok && pc.Phase == wire.PhaseReady {
			if _, mine := h.servers[pc.Server]; mine {
				ready[pc.Server] = time.Now()
			}
		}
		return len(ready) == len(h.servers)
	})
	return ready, err
}
