package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// unreachableErr is an error as package mcp reports a remote server it
// cannot reach.
func unreachableErr(reason string) error {
	return fmt.Errorf("server: cannot reach it: %w: %w", mcp.ErrTransport, &mcp.UnreachableError{Reason: reason})
}

func fakeRemote(name string) schema.Server {
	return schema.Server{Name: name, Type: schema.Remote, URL: "http://" + name + ".example/mcp", Enabled: true, Timeout: time.Second}
}

// fakeProber answers probes with err and records when each one came.
type fakeProber struct {
	mu  sync.Mutex // guards the fields below
	err error
	at  map[string][]time.Time
}

func newFakeProber(err error) *fakeProber { return &fakeProber{err: err, at: map[string][]time.Time{}} }

func (p *fakeProber) probe(ctx context.Context, srv schema.Server) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at[srv.Name] = append(p.at[srv.Name], time.Now())
	return p.err
}

func (p *fakeProber) times(name string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.at[name]...)
}

func (p *fakeProber) set(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// longBackoff would retry only after an hour.
var longBackoff = Backoff{Initial: time.Hour, Max: time.Hour, Factor: 2, Jitter: -1, StableAfter: time.Minute}

// A remote server that cannot be reached is probed once per probe
// interval while it waits in a long backoff, and is started as soon as a
// probe finds its endpoint answering; a local server in the same backoff
// is never probed.
func TestLoopProbesUnreachableRemote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		d.fail["r"] = unreachableErr("connection refused")
		d.fail["l"] = unreachableErr("connection refused")
		p := newFakeProber(unreachableErr("connection refused"))
		c := New(Options{Dial: d.dial, Probe: p.probe, Backoff: longBackoff, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeRemote("r"), fakeServer("l")}, time.Hour)
		synctest.Wait()
		failedAt := time.Now()
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "r").Phase)
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "l").Phase)

		time.Sleep(10*DefaultProbeInterval + time.Millisecond)
		synctest.Wait()
		probes := p.times("r")
		require.Len(t, probes, 10, "one probe per interval")
		for i, at := range probes {
			require.Equal(t, failedAt.Add(time.Duration(i+1)*DefaultProbeInterval), at, "probe %d", i)
		}
		require.Empty(t, p.times("l"), "local servers keep their backoff")
		require.Equal(t, 1, d.count("r"), "a failed probe starts nothing")

		// The endpoint is back: the next probe finds it and the server
		// starts at once, an hour before its backoff would have let it.
		back := time.Now()
		d.set(func() { delete(d.fail, "r"); delete(d.fail, "l") })
		p.set(nil)
		time.Sleep(DefaultProbeInterval)
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "r").Phase)
		require.Equal(t, 2, d.count("r"))
		require.LessOrEqual(t, time.Since(back), DefaultProbeInterval)
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "l").Phase)
		require.Equal(t, 1, d.count("l"))
		n := len(p.times("r"))
		time.Sleep(10 * DefaultProbeInterval)
		synctest.Wait()
		require.Len(t, p.times("r"), n, "a ready server is not probed")
	})
}

// Probing off: the backoff alone decides.
func TestLoopProbingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		d.fail["r"] = unreachableErr("connection refused")
		p := newFakeProber(nil)
		c := New(Options{Dial: d.dial, Probe: p.probe, ProbeInterval: -1, Backoff: longBackoff, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeRemote("r")}, time.Hour)
		synctest.Wait()
		d.set(func() { delete(d.fail, "r") })
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, p.times("r"))
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "r").Phase)
		time.Sleep(time.Until(statusOf(c, "r").NextRetry))
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "r").Phase)
	})
}

// A remote server that cannot be reached keeps its tools, unchanged (no
// ToolsChanged), and a call answers with the outage; when it fails for
// another reason, or its spec changed, its tools go.
func TestLoopOutageKeepsTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		p := newFakeProber(unreachableErr("connection refused"))
		bus := event.NewBus()
		reg := registry.NewRegistry(bus)
		events, unsubscribe := bus.Subscribe(100)
		defer unsubscribe()
		changes := func() int {
			n := 0
			for {
				select {
				case m := <-events:
					if tc, ok := m.Event.(registry.ToolsChanged); ok && tc.Source == "r" {
						n++
					}
				default:
					return n
				}
			}
		}
		c := New(Options{Registry: reg, Bus: bus, Dial: d.dial, Probe: p.probe, Backoff: longBackoff, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		remote := fakeRemote("r")
		c.SetDesired([]schema.Server{remote}, time.Hour)
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "r").Phase)
		require.Equal(t, 1, changes())
		call := func() error {
			tool, ok := reg.Get("mcp__r__t1")
			require.True(t, ok, "the tool is registered")
			_, err := tool.Call(context.Background(), nil, nil)
			return err
		}
		require.NoError(t, call())

		// Lost: the tools stay, and a call says why and since when.
		d.set(func() { d.fail["r"] = unreachableErr("connection refused") })
		lostAt := time.Now()
		d.last("r").crash(unreachableErr("connection reset"))
		synctest.Wait()
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "r").Phase)
		require.Len(t, reg.SourceTools("r"), 2)
		err := call()
		require.EqualError(t, err, fmt.Sprintf(`server "r" is unreachable since %s (connection reset); FreeCode retries every second`,
			lostAt.Local().Format("15:04:05")))
		require.ErrorIs(t, err, registry.ErrTransport)
		require.ErrorIs(t, err, mcp.ErrUnreachable)
		var oe *OutageError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, lostAt, oe.Since)

		// Probes and failed restarts keep it so, with the latest reason.
		time.Sleep(DefaultProbeInterval)
		synctest.Wait()
		require.ErrorContains(t, call(), "(connection refused)")
		require.NoError(t, c.Restart("r"))
		synctest.Wait()
		require.Equal(t, 2, d.count("r"))
		require.ErrorContains(t, call(), fmt.Sprintf("unreachable since %s", lostAt.Local().Format("15:04:05")))
		require.Zero(t, changes(), "the provider-facing tools never changed")

		// Back with the same tools: nothing changes for the provider.
		d.set(func() { delete(d.fail, "r") })
		p.set(nil)
		time.Sleep(DefaultProbeInterval)
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "r").Phase)
		require.NoError(t, call())
		require.Zero(t, changes())

		// Unreachable, then answering with an error of its own: the tools
		// go, as for any failed restart.
		d.set(func() { d.fail["r"] = errors.New("HTTP 500 Internal Server Error") })
		p.set(nil)
		d.last("r").crash(unreachableErr("connection reset"))
		synctest.Wait()
		require.Len(t, reg.SourceTools("r"), 2)
		time.Sleep(DefaultProbeInterval)
		synctest.Wait()
		require.Equal(t, 4, d.count("r"))
		require.Empty(t, reg.SourceTools("r"))
		require.Equal(t, 1, changes())
		_, ok := reg.Get("mcp__r__t1")
		require.False(t, ok)

		// A changed spec that cannot be reached does not keep the tools
		// of the old one.
		d.set(func() { delete(d.fail, "r") })
		require.NoError(t, c.Restart("r"))
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "r").Phase)
		require.Len(t, reg.SourceTools("r"), 2)
		changes()
		moved := remote
		moved.URL = "http://elsewhere.example/mcp"
		d.set(func() { d.fail["r"] = unreachableErr("host not found") })
		c.SetDesired([]schema.Server{moved}, time.Hour)
		synctest.Wait()
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "r").Phase)
		require.Empty(t, reg.SourceTools("r"))
	})
}

// Probing off, a call during an outage says when the backoff retries.
func TestOutageAnswerWithoutProbing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		reg := registry.NewRegistry(nil)
		c := New(Options{Registry: reg, Dial: d.dial, ProbeInterval: -1, Backoff: longBackoff, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeRemote("r")}, time.Hour)
		synctest.Wait()
		d.last("r").crash(unreachableErr("connection refused"))
		synctest.Wait()
		tool, ok := reg.Get("mcp__r__t2")
		require.True(t, ok)
		_, err := tool.Call(context.Background(), nil, nil)
		require.ErrorContains(t, err, "; FreeCode retries at "+statusOf(c, "r").NextRetry.Local().Format("15:04:05"))
	})
}
