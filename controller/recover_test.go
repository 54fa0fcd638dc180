package controller

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// startHTTPTestServer runs the test server serving HTTP on addr (a fixed
// port, or 127.0.0.1:0) with flags, in its own process group, and returns
// its URL and a function that kills it (also run at cleanup). Its stderr
// goes to t's log.
func startHTTPTestServer(t *testing.T, addr string, flags ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(testServerBin, append([]string{"--http", addr}, flags...)...)
	cmd.Stderr = testutil.LogWriter(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "unexpected first line %q", line)
	return u, kill
}

// countingListener holds a port while its server is down: it accepts each
// connection and closes it at once, counting them.
type countingListener struct {
	ln    net.Listener
	since time.Time
	wg    sync.WaitGroup
	mu    sync.Mutex // guards n
	n     int
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	var ln net.Listener
	// The port is free once the killed server's socket is closed.
	require.Eventually(t, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "port %s did not become free", addr)
	c := &countingListener{ln: ln, since: time.Now()}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
			_ = conn.Close()
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *countingListener) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// close frees the port; idempotent.
func (c *countingListener) close() {
	_ = c.ln.Close()
	c.wg.Wait()
}

// A remote server whose endpoint goes away and comes back on the same port
// is ready again long before its backoff would have retried, having been
// probed about once a second meanwhile; its tools stayed registered and
// unchanged, and a call during the outage answered with the outage.
func TestRemoteRecoversWhenItsEndpointReturns(t *testing.T) {
	for _, tt := range []struct {
		name      string
		flags     []string
		transport schema.Transport
	}{
		{"streamable HTTP", nil, schema.TransportStreamableHTTP},
		{"SSE", []string{"--sse"}, schema.TransportSSE},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The backoff would wait an hour after the loss.
			h := newHarness(t, func(o *Options) {
				o.Backoff = Backoff{Initial: time.Hour, Max: time.Hour, Factor: 2, Jitter: -1, StableAfter: time.Minute}
			})
			u, kill := startHTTPTestServer(t, "127.0.0.1:0", tt.flags...)
			parsed, err := url.Parse(u)
			require.NoError(t, err)
			addr := parsed.Host
			srv := schema.MCP{}.Resolve(schema.Server{Name: "far", Type: schema.Remote, URL: u, Transport: tt.transport,
				Enabled: true, Timeout: 10 * time.Second, Source: schema.SourceUser})
			h.c.SetDesired([]schema.Server{srv}, time.Hour)
			h.waitPhase("far", wire.PhaseReady)
			tools := h.toolIDs("far")
			require.NotEmpty(t, tools)
			changes := h.toolsChanged("far")

			kill()
			down := listenCounting(t, addr)
			st := h.waitPhase("far", wire.PhaseBackoff)
			require.Greater(t, time.Until(st.NextRetry), 30*time.Minute, "the backoff alone would wait")

			// A call now says what is going on.
			tool, ok := h.reg.Get("mcp__far__echo")
			require.True(t, ok, "the tools stay registered during the outage")
			_, err = tool.Call(context.Background(), []byte(`{"text":"hi"}`), nil)
			require.ErrorContains(t, err, `server "far" is unreachable since `)
			require.ErrorContains(t, err, "; FreeCode retries every second")

			// Probes reach the port about once a second, not more.
			require.Eventually(t, func() bool { return down.count() >= 3 }, 30*time.Second, 10*time.Millisecond,
				"the endpoint was not probed")
			n, elapsed := down.count(), time.Since(down.since)
			require.LessOrEqual(t, n, int(elapsed/DefaultProbeInterval)+2, "%d connections in %s", n, elapsed)

			// Back on the same port.
			down.close()
			_, _ = startHTTPTestServer(t, addr, tt.flags...)
			back := time.Now()
			h.waitPhase("far", wire.PhaseReady)
			require.Less(t, time.Since(back), 30*time.Second)
			require.Equal(t, tools, h.toolIDs("far"))
			require.Equal(t, changes, h.toolsChanged("far"), "no ToolsChanged across the outage")
			tool, ok = h.reg.Get("mcp__far__echo")
			require.True(t, ok)
			res, err := tool.Call(context.Background(), []byte(`{"text":"hi"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "hi", res.Text())
		})
	}
}
