package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/wire"
)

// rssBound is what serve may hold while every hostile server below attacks
// it at once, beside a healthy one: it peaks near 100 MiB (near 600 MiB
// with the race detector). Before the limits existed the first of them
// alone took it past 1.6 GiB in seconds.
func rssBound() int64 {
	if raceDetector {
		return 1600 << 20
	}
	return 400 << 20
}

// startHTTPTestServer runs the test server with --http and flags and
// returns its URL; it is killed at cleanup.
func startHTTPTestServer(t *testing.T, bin string, flags ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "unexpected first line %q", line)
	return u
}

// procMemory reads a field of /proc/<pid>/status in bytes ("VmRSS",
// "VmHWM"); 0 once the process is gone.
func procMemory(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// withKeys returns server with keys added.
func withKeys(server, keys map[string]any) map[string]any {
	maps.Copy(server, keys)
	return server
}

// Every way a server can make serve buffer without bound, at once: each
// hostile server's session ends with its limit named and backs off, the
// healthy server answers throughout, and serve's memory stays bounded.
func TestServeHostileServersStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	remote := func(name, url, transport string) map[string]any {
		return map[string]any{"name": name, "type": "remote", "url": url, "transport": transport}
	}
	// want is the part of each hostile server's error that names its limit;
	// byCall marks those that attack once a tool of theirs is called.
	hostile := []struct {
		server map[string]any
		want   string
		byCall bool
	}{
		{local("flood", ts, "--stdout-flood-no-newline", "start"),
			`server "flood": initialize: the server sent a message of more than 16 MiB (limit mcp.limits.maxMessageBytes)`, false},
		{local("floodcall", ts, "--stdout-flood-no-newline", "call"),
			`server "floodcall": the server sent a message of more than 16 MiB (limit mcp.limits.maxMessageBytes)`, true},
		// A lower page limit and a longer timeout than the defaults: 1000
		// pages take more than the default 5 s on a loaded machine, and
		// then the timeout, not the limit, ends the listing.
		{withKeys(local("pages", ts, "--endless-pages"), map[string]any{"limits": map[string]any{"maxListPages": 100}, "timeout": 60000}),
			`server "pages": tools/list: the server needed more than 100 pages to list its tools (limit mcp.limits.maxListPages)`, false},
		{remote("errbody", startHTTPTestServer(t, ts, "--http-attack", "error-body"), "auto"),
			`(the rest of its body, beyond 64 KiB, was not read)`, false},
		// Once set off, its stream floods every new session at once, so the
		// limit may be hit while connecting as well.
		{remote("sseline", startHTTPTestServer(t, ts, "--http-attack", "sse-line"), "streamable-http"),
			`the server sent a message of more than 16 MiB (limit mcp.limits.maxMessageBytes)`, true},
		{remote("legacy", startHTTPTestServer(t, ts, "--sse", "--http-attack", "sse-line"), "sse"),
			`server "legacy": initialize: the server sent a message of more than 16 MiB (limit mcp.limits.maxMessageBytes)`, false},
	}
	servers := []map[string]any{local("a", ts)}
	for _, h := range hostile {
		servers = append(servers, h.server)
	}
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(servers...), false)
	p := startServe(t, home)
	events := p.events()
	pid := p.cmd.Process.Pid

	// A watchdog stops serve before an unbounded buffer takes the machine.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watched sync.WaitGroup
	var peak atomic.Int64
	watched.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-tick.C:
			}
			rss := procMemory(pid, "VmRSS")
			peak.Store(max(peak.Load(), rss))
			if rss > rssBound() {
				p.signal(syscall.SIGKILL)
				return
			}
		}
	})
	t.Cleanup(func() {
		stopWatch()
		watched.Wait()
	})

	// The healthy server answers all along.
	p.waitPhase("a", "ready")
	callCtx, stopCalls := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	var answered atomic.Int64
	callErrs := make(chan error, 1)
	calls.Go(func() {
		for callCtx.Err() == nil {
			resp, err := p.client.Call(callCtx, "mcp__a__echo", json.RawMessage(`{"text":"still here"}`))
			if callCtx.Err() != nil {
				return
			}
			if err == nil && resp.Result.Text() != "still here" {
				err = assert.AnError
			}
			if err != nil {
				callErrs <- err
				return
			}
			answered.Add(1)
		}
	})
	t.Cleanup(func() {
		stopCalls()
		calls.Wait()
	})

	// Each hostile server ends in backoff with its limit named, twice: a
	// restart is no way around a limit.
	const rounds = 2
	failed := map[string]int{}
	for _, h := range hostile {
		failed[h.server["name"].(string)] = 0
	}
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	for {
		done := true
		for _, n := range failed {
			done = done && n >= rounds
		}
		if done {
			break
		}
		select {
		case ev, ok := <-events:
			require.True(t, ok, "event stream ended (serve died?); peak RSS %d MiB", peak.Load()>>20)
			var pc struct{ Server, Phase, Err string }
			if ev.Kind != wire.KindPhaseChanged || ev.Decode(&pc) != nil {
				continue
			}
			for _, h := range hostile {
				if h.server["name"] != pc.Server {
					continue
				}
				switch {
				case pc.Phase == "backoff":
					assert.Contains(t, pc.Err, h.want, "server %s", pc.Server)
					failed[pc.Server]++
				case pc.Phase == "ready" && h.byCall:
					// Set it off. Its answer may make it out before the
					// flood it sets off (over HTTP), or not: the backoff
					// tells.
					id := "mcp__" + pc.Server + "__echo"
					calls.Go(func() {
						_, _ = p.client.Call(callCtx, id, json.RawMessage(`{"text":"go"}`))
					})
				}
			}
		case err := <-callErrs:
			t.Fatalf("the healthy server stopped answering: %v", err)
		case <-deadline.C:
			t.Fatalf("hostile servers' backoffs so far: %v; peak RSS %d MiB", failed, peak.Load()>>20)
		}
	}

	hwm := procMemory(pid, "VmHWM")
	t.Logf("serve: peak RSS %d MiB (VmHWM %d MiB); healthy calls answered meanwhile: %d", peak.Load()>>20, hwm>>20, answered.Load())
	require.NotZero(t, hwm, "serve is gone")
	require.Less(t, hwm, rssBound())
	require.NotZero(t, answered.Load())
	st := p.status()
	a, _ := server(st, "a")
	require.Equal(t, "ready", string(a.Phase))
	require.Zero(t, a.Restarts)
	select {
	case err := <-callErrs:
		t.Fatalf("the healthy server stopped answering: %v", err)
	default:
	}
}
