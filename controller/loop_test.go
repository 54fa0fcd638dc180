package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// fakeDialer hands out fake connections or errors and records every dial.
type fakeDialer struct {
	t    *testing.T
	mu   sync.Mutex // guards the fields below
	fail map[string]error
	// block, if set for a server, is waited on before answering; the dial
	// ignores ctx while blocked, like a slow start that misses a stop.
	block    map[string]chan struct{}
	dials    map[string]int
	conns    map[string][]*fakeConn
	inFlight int
	maxIn    int
	nextPID  int
}

func newFakeDialer(t *testing.T) *fakeDialer {
	return &fakeDialer{t: t, fail: map[string]error{}, block: map[string]chan struct{}{}, dials: map[string]int{}, conns: map[string][]*fakeConn{}, nextPID: 1000}
}

func (d *fakeDialer) dial(ctx context.Context, srv schema.Server) (Conn, error) {
	d.mu.Lock()
	d.dials[srv.Name]++
	d.inFlight++
	d.maxIn = max(d.maxIn, d.inFlight)
	block, err := d.block[srv.Name], d.fail[srv.Name]
	d.nextPID++
	pid := d.nextPID
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
	}()
	if block != nil {
		<-block
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	c := newFakeConn(d.t, srv.Name, pid, "t1", "t2")
	d.mu.Lock()
	d.conns[srv.Name] = append(d.conns[srv.Name], c)
	d.mu.Unlock()
	return c, nil
}

func (d *fakeDialer) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[name]
}

func (d *fakeDialer) last(name string) *fakeConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := d.conns[name]
	if len(cs) == 0 {
		return nil
	}
	return cs[len(cs)-1]
}

func (d *fakeDialer) set(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

func fakeServer(name string) schema.Server {
	return schema.Server{Name: name, Type: schema.Local, Command: []string{"/fake/" + name}, Enabled: true, Timeout: time.Second}
}

// runLoop starts c in the current synctest bubble and returns a stop
// function that ends it and waits.
func runLoop(c *Controller) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			panic(err)
		}
	}
}

func statusOf(c *Controller, name string) wire.ServerStatus {
	for _, s := range c.Status().Servers {
		if s.Name == name {
			return s
		}
	}
	return wire.ServerStatus{Name: "<missing>"}
}

func TestLoopBackoffTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		d.fail["s"] = errors.New("boom")
		b := Backoff{Initial: time.Second, Max: 8 * time.Second, Factor: 2, Jitter: 0.2, StableAfter: time.Minute}
		c := New(Options{Dial: d.dial, Backoff: b, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeServer("s")}, time.Hour)

		var prev time.Duration
		for n := 1; n <= 6; n++ {
			synctest.Wait()
			require.Equal(t, n, d.count("s"))
			st := statusOf(c, "s")
			require.Equal(t, wire.PhaseBackoff, st.Phase)
			require.Equal(t, "boom", st.LastError)
			wait := time.Until(st.NextRetry)
			want := b.delay(n, 0)
			require.LessOrEqual(t, wait, want, "failure %d", n)
			require.GreaterOrEqual(t, wait, time.Duration(float64(want)*0.8), "failure %d", n)
			if want < b.Max {
				require.Greater(t, wait, prev, "failure %d waits longer", n)
			}
			prev = wait
			// Not a moment early...
			time.Sleep(wait - time.Nanosecond)
			synctest.Wait()
			require.Equal(t, n, d.count("s"), "retried before NextRetry")
			// ...and right on time.
			time.Sleep(time.Nanosecond)
		}

		// A success that stays up for StableAfter resets the count.
		d.set(func() { delete(d.fail, "s") })
		synctest.Wait()
		if statusOf(c, "s").Phase != wire.PhaseReady {
			time.Sleep(time.Until(statusOf(c, "s").NextRetry))
			synctest.Wait()
		}
		require.Equal(t, wire.PhaseReady, statusOf(c, "s").Phase)
		time.Sleep(b.StableAfter)
		d.last("s").crash(errors.New("gone"))
		synctest.Wait()
		st := statusOf(c, "s")
		require.Equal(t, wire.PhaseBackoff, st.Phase)
		require.Equal(t, "gone", st.LastError)
		require.LessOrEqual(t, time.Until(st.NextRetry), b.Initial, "count reset after a stable run")

		// An unstable run does not reset it.
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "s").Phase)
		d.last("s").crash(errors.New("again"))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Greater(t, time.Until(st.NextRetry), b.Initial)

		// Restart skips the wait.
		require.NoError(t, c.Restart("s"))
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "s").Phase)
	})
}

func TestLoopStaleDialIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		release := make(chan struct{})
		d.block["slow"] = release
		bus := event.NewBus()
		reg := registry.NewRegistry(bus)
		c := New(Options{Registry: reg, Bus: bus, Dial: d.dial, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()

		c.SetDesired([]schema.Server{fakeServer("slow")}, time.Hour)
		synctest.Wait()
		require.Equal(t, wire.PhaseStarting, statusOf(c, "slow").Phase)
		require.Equal(t, int64(1), statusOf(c, "slow").Generation)
		require.Equal(t, int64(0), statusOf(c, "slow").ObservedGeneration)

		// Removed while connecting: it is stopping until the dial returns.
		c.SetDesired(nil, time.Hour)
		synctest.Wait()
		require.Equal(t, wire.PhaseStopping, statusOf(c, "slow").Phase)

		close(release)
		synctest.Wait()
		conn := d.last("slow")
		require.NotNil(t, conn)
		require.True(t, conn.isClosed(), "stale session closed")
		require.Empty(t, reg.List(), "stale session's tools never registered")
		require.Equal(t, "<missing>", statusOf(c, "slow").Name, "forgotten once stopped")
	})
}

func TestLoopMaxParallelStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		release := make(chan struct{})
		var servers []schema.Server
		for i := range 6 {
			s := fakeServer(fmt.Sprintf("s%d", i))
			d.block[s.Name] = release
			servers = append(servers, s)
		}
		c := New(Options{Dial: d.dial, MaxParallelStarts: 2, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired(servers, time.Hour)
		synctest.Wait()
		phases := map[wire.Phase]int{}
		for _, s := range c.Status().Servers {
			phases[s.Phase]++
		}
		require.Equal(t, map[wire.Phase]int{wire.PhaseStarting: 2, wire.PhasePending: 4}, phases)
		close(release)
		synctest.Wait()
		for _, s := range c.Status().Servers {
			require.Equal(t, wire.PhaseReady, s.Phase, s.Name)
		}
		require.Equal(t, 2, d.maxIn)
	})
}

func TestLoopToolsChangedAndCollision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		bus := event.NewBus()
		reg := registry.NewRegistry(bus)
		events, cancel := bus.Subscribe(100)
		defer cancel()
		c := New(Options{Registry: reg, Bus: bus, Dial: d.dial, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeServer("a")}, time.Hour)
		synctest.Wait()
		require.Len(t, reg.SourceTools("a"), 2)
		count := func() int {
			n := 0
			for {
				select {
				case m := <-events:
					if tc, ok := m.Event.(registry.ToolsChanged); ok && tc.Source == "a" {
						n++
					}
				default:
					return n
				}
			}
		}
		require.Equal(t, 1, count())

		conn := d.last("a")
		conn.changeTools(t, "t1", "t2") // same set: no event
		synctest.Wait()
		require.Equal(t, 0, count())
		conn.changeTools(t, "t1", "t2", "t3")
		synctest.Wait()
		require.Equal(t, 1, count())
		require.Equal(t, 3, statusOf(c, "a").Tools)

		// A tool id already owned by another source: the server stays up
		// without tools and says why.
		_, err := reg.ReplaceSource("other", []registry.Tool{{ID: "mcp__a__t4", Call: func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
			return wire.CallResult{}, nil
		}}})
		require.NoError(t, err)
		conn.changeTools(t, "t1", "t4")
		synctest.Wait()
		st := statusOf(c, "a")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Zero(t, st.Tools)
		require.Contains(t, st.LastError, "already provided by other")
		require.Empty(t, reg.SourceTools("a"))
		reg.RemoveSource("other")
	})
}

func TestStartTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Options{Dial: newFakeDialer(t).dial})
		stop := runLoop(c)
		synctest.Wait()
		require.Error(t, c.Start(context.Background()))
		stop()
	})
}

func TestLoopShutdownEndsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		d.fail["bad"] = errors.New("boom")
		c := New(Options{Dial: d.dial, Logger: testLogger(t)})
		stop := runLoop(c)
		c.SetDesired([]schema.Server{fakeServer("bad"), fakeServer("good")}, time.Hour)
		synctest.Wait()
		require.Equal(t, wire.PhaseBackoff, statusOf(c, "bad").Phase)
		require.Equal(t, wire.PhaseReady, statusOf(c, "good").Phase)
		stop()
		for _, s := range c.Status().Servers {
			require.Equal(t, wire.PhaseStopped, s.Phase, s.Name)
			require.True(t, s.NextRetry.IsZero())
		}
		require.True(t, d.last("good").isClosed())
		// Nothing runs after Start returned, whatever is asked.
		c.SetDesired([]schema.Server{fakeServer("late")}, time.Hour)
		synctest.Wait()
		require.Equal(t, 2, d.count("bad")+d.count("good"))
	})
}
