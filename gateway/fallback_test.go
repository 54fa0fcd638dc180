package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
)

// childServe makes the test binary run `freecode serve` (serve.Run) for
// the home childHome until SIGTERM: a serve of its own process, as users
// run it, whose end leaves this process's children alone.
const childServe = "FREECODE_GATEWAY_TEST_SERVE"

func init() {
	if os.Getenv(childServe) == "" {
		return
	}
	procguard.Dispatch() // its reapers are this binary too
	home := os.Getenv(childHome)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := serve.Run(ctx, serve.Options{Home: home, Root: home,
		Sources: schema.Sources{User: filepath.Join(home, "config.json"), Trust: schema.TrustPath(home)},
		Logger:  logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-1)}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestAttachedGatewayOutlivesServe: when the serve an attached gateway
// goes through stops, the gateway runs the servers itself and its host
// goes on calling them: a host does not start a server again that went
// away.
func TestAttachedGatewayOutlivesServe(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	log := &servetest.SyncBuffer{}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childServe+"=1", childHome+"="+home)
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", log.String())
		}
	})
	s := servetest.API{T: t, Client: dialServe(t, home, log)}
	s.WaitPhase("t", "ready")
	s.Client.Close()

	h := startHost(t, home, hostOptions{env: []string{childAttach + "=1"}})
	require.Contains(t, h.tools(), "t__echo")
	assert.Equal(t, "via serve", text(h.call("t__echo", map[string]any{"text": "via serve"}, false)))
	for _, p := range testutil.Descendants(h.cmd.Process.Pid) {
		require.NotEqual(t, "mcp-testserver", testutil.Comm(p.PID), "attached: no server of its own yet")
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	stopped = true // the cleanup must not wait for done a second time
	select {
	case err := <-done:
		require.NoError(t, err, "serve's exit on SIGTERM")
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("serve did not exit within a minute of SIGTERM")
	}
	h.waitLog("freecode serve went away; running the servers in this process")
	h.waitLog(`msg="server ready" server=t`)
	assert.Equal(t, "here now", text(h.call("t__echo", map[string]any{"text": "here now"}, false)))
	own := false
	for _, p := range testutil.Descendants(h.cmd.Process.Pid) {
		own = own || testutil.Comm(p.PID) == "mcp-testserver"
	}
	assert.True(t, own, "the gateway runs the server itself now")
	assert.Contains(t, h.tools(), "t__echo")
}

// fakeEngine is an engine whose event streams end with err at once, and
// counts its subscriptions; the other methods are not called by the
// switching stream.
type fakeEngine struct {
	api.Engine
	err    error
	events atomic.Int32
	// block makes every stream wait for ctx; else the fourth does.
	block bool
}

func (e *fakeEngine) Events(ctx context.Context) (api.Stream, error) {
	if e.events.Add(1) > 3 || e.block {
		return ctxStream{ctx}, nil
	}
	return failedStream{e.err}, nil
}

// ctxStream is a stream with no events that ends with its ctx.
type ctxStream struct{ ctx context.Context }

func (s ctxStream) Next() (api.Event, error) { <-s.ctx.Done(); return api.Event{}, s.ctx.Err() }
func (s ctxStream) Close() error             { return nil }

// A broken event stream from a serve that still runs is subscribed again
// (a restart, a full connection table), never a reason to start a second
// set of servers; only a serve that is gone is.
func TestFallbackOnlyWhenServeIsGone(t *testing.T) {
	attached := &fakeEngine{err: errors.New("stream broke")}
	own := &fakeEngine{block: true}
	var gone atomic.Bool
	starts := atomic.Int32{}
	sw := &switching{cur: attached, log: logr.Discard(), gone: gone.Load,
		start: func(context.Context) (api.Engine, error) { starts.Add(1); return own, nil }}
	// follow reads the events of sw until ctx ends, counting the
	// "missed" ones (each makes the gateway read the list again).
	missed := atomic.Int32{}
	follow := func(ctx context.Context) error {
		s, err := sw.Events(ctx)
		if err != nil {
			return err
		}
		defer s.Close()
		for {
			ev, err := s.Next()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if ev.Kind == "missed" {
				missed.Add(1)
			}
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- follow(ctx) }()
	require.Eventually(t, func() bool { return attached.events.Load() == 4 }, waitFor, time.Millisecond)
	assert.Zero(t, starts.Load(), "serve still runs: subscribed again, nothing started")
	require.Eventually(t, func() bool { return missed.Load() == 3 }, waitFor, time.Millisecond, "each new subscription reads the list again")
	assert.False(t, sw.owned())
	cancel()
	require.NoError(t, <-done)

	gone.Store(true)
	attached.events.Store(0)
	missed.Store(0)
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go func() { done <- follow(ctx) }()
	require.Eventually(t, func() bool { return own.events.Load() == 1 }, waitFor, time.Millisecond)
	assert.Equal(t, int32(1), starts.Load(), "serve gone: the servers are started here, once")
	require.Eventually(t, func() bool { return missed.Load() == 1 }, waitFor, time.Millisecond, "the new servers' list is read")
	assert.Equal(t, api.Engine(own), sw.get())
	assert.True(t, sw.owned())
	cancel()
	require.NoError(t, <-done)
}
