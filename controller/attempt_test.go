package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// scriptedDialer answers each dial with the next of its outcomes (nil: a
// session) and records each attempt's budget, srv.Timeout (from which
// MCPDialer takes how long the start may go on while working).
type scriptedDialer struct {
	t        *testing.T
	mu       sync.Mutex // guards outcomes, budgets, conns
	outcomes []error
	budgets  []time.Duration
	conns    []*fakeConn
}

func (d *scriptedDialer) dial(ctx context.Context, srv schema.Server) (Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.budgets = append(d.budgets, srv.Timeout)
	var err error
	if len(d.outcomes) > 0 {
		err, d.outcomes = d.outcomes[0], d.outcomes[1:]
	}
	if err != nil {
		return nil, err
	}
	c := newFakeConn(d.t, srv.Name, 4242, "t1")
	d.conns = append(d.conns, c)
	return c, nil
}

func (d *scriptedDialer) attempts() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.budgets...)
}

func (d *scriptedDialer) lastConn() *fakeConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[len(d.conns)-1]
}

// A start that runs out of time while the server is still working gets
// twice the budget next time, up to MaxStartTimeout; other failures keep
// it, a start that succeeds and a changed spec go back to the configured
// timeout. The spec's hash never changes on the way: nothing restarts a
// server for its grown budget. (mcp.Connect itself goes on past the
// timeout while the server works, up to WorkingTimeout of its budget; this
// fake dialer does not, which is what a remote server's start is like.)
func TestStartTimeoutGrowsWhileTheServerWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		working := func() error { return &mcp.StartTimeoutError{Server: "npx", Step: "initialize", Progress: "using CPU"} }
		idle := &mcp.StartTimeoutError{Server: "npx", Step: "initialize"}
		d := &scriptedDialer{t: t, outcomes: []error{
			working(), working(), working(), working(), working(), working(), working(), // 5s … 120s, 120s
			idle,                 // 120s again: no sign of work (a stale lock, say)
			errors.New("exit 1"), // 120s: kept
			nil,                  // 120s: ready
		}}
		c := New(Options{Dial: d.dial, Logger: testLogger(t), Backoff: Backoff{Initial: time.Second, Max: time.Second}})
		stop := runLoop(c)
		defer stop()
		srv := fakeServer("npx")
		srv.Timeout = 5 * time.Second
		c.SetDesired([]schema.Server{srv}, time.Hour)
		for statusOf(c, "npx").Phase != wire.PhaseReady {
			synctest.Wait()
			if st := statusOf(c, "npx"); st.Phase == wire.PhaseBackoff {
				time.Sleep(time.Until(st.NextRetry))
			}
		}
		s := time.Second
		m := MaxStartTimeout
		require.Equal(t, []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 80 * s, m, m, m, m, m}, d.attempts())
		for _, b := range d.attempts() {
			require.Equal(t, MaxStartTimeout, WorkingTimeout(b), "every attempt may go on while working")
		}
		st := statusOf(c, "npx")
		require.Equal(t, st.Desired.SpecHash, st.SpecHash, "the running spec is the configured one")
		require.Zero(t, st.StartTimeoutMS, "ready again: the configured timeout")
		require.Equal(t, 9, st.Restarts)
		require.Equal(t, 9, st.Crashes)

		// Ready went back to the configured timeout; so does a changed
		// spec, however much the budget had grown.
		d.mu.Lock()
		d.outcomes = []error{working(), nil, working()}
		d.mu.Unlock()
		d.lastConn().crash(errors.New("gone"))
		synctest.Wait()
		st = statusOf(c, "npx")
		require.Equal(t, wire.PhaseBackoff, st.Phase)
		require.Zero(t, st.StartTimeoutMS)
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		st = statusOf(c, "npx")
		require.Equal(t, wire.PhaseBackoff, st.Phase)
		require.EqualValues(t, 10000, st.StartTimeoutMS, "the next start's budget is shown")
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		require.Equal(t, wire.PhaseReady, statusOf(c, "npx").Phase)
		srv.Command = append(srv.Command, "--changed")
		c.SetDesired([]schema.Server{srv}, time.Hour)
		synctest.Wait()
		attempts := d.attempts()
		require.Equal(t, []time.Duration{5 * s, 10 * s, 5 * s}, attempts[len(attempts)-3:])
	})
}

func TestGrownTimeout(t *testing.T) {
	s := time.Second
	require.Equal(t, 10*s, grownTimeout(5*s, 5*s))
	require.Equal(t, MaxStartTimeout, grownTimeout(90*s, 5*s))
	require.Equal(t, 10*time.Minute, grownTimeout(10*time.Minute, 10*time.Minute), "a configured timeout above the bound stays")
}

// Restarts counts every start after the first, Crashes those that followed
// a failure; a changed spec or a restart request is no crash.
func TestCrashesCountedApartFromRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &scriptedDialer{t: t, outcomes: []error{errors.New("boom")}}
		c := New(Options{Dial: d.dial, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		srv := fakeServer("s")
		c.SetDesired([]schema.Server{srv}, time.Hour)
		synctest.Wait()
		st := statusOf(c, "s")
		require.Equal(t, [2]int{0, 0}, [2]int{st.Restarts, st.Crashes}, "failed, not restarted yet")
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Equal(t, [2]int{1, 1}, [2]int{st.Restarts, st.Crashes})

		srv.Command = append(srv.Command, "--changed")
		c.SetDesired([]schema.Server{srv}, time.Hour)
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Equal(t, [2]int{2, 1}, [2]int{st.Restarts, st.Crashes}, "a config change is no crash")
		require.NoError(t, c.Restart("s"))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, [2]int{3, 1}, [2]int{st.Restarts, st.Crashes}, "nor is a restart request")

		d.lastConn().crash(errors.New("gone"))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, [2]int{3, 1}, [2]int{st.Restarts, st.Crashes}, "not restarted yet")
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Equal(t, [2]int{4, 2}, [2]int{st.Restarts, st.Crashes})
	})
}

// Options.Remedy's advice follows the error on its own line, in the status
// and in the phase event.
func TestRemedyFollowsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &scriptedDialer{t: t, outcomes: []error{errors.New("boom"), errors.New("other")}}
		var got []string
		c := New(Options{Dial: d.dial, Logger: testLogger(t), Remedy: func(srv schema.Server, err error) string {
			got = append(got, srv.Name+": "+err.Error())
			if err.Error() == "boom" {
				return "do this"
			}
			return ""
		}})
		stop := runLoop(c)
		defer stop()
		c.SetDesired([]schema.Server{fakeServer("s")}, time.Hour)
		synctest.Wait()
		st := statusOf(c, "s")
		require.Equal(t, "boom\ndo this", st.LastError)
		require.Equal(t, "boom\ndo this", st.LastFailure)
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		require.Equal(t, "other", statusOf(c, "s").LastError)
		require.Equal(t, []string{"s: boom", "s: other"}, got)
	})
}

// The status shows a local server's pid as soon as its process runs,
// while it is still starting, not only once it is ready.
func TestPIDWhileStarting(t *testing.T) {
	h := newHarness(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	h.c.SetDesired([]schema.Server{testServer("slow", "--hang-init", "--pid-file", pidFile)}, time.Hour)
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return true
	}, 30*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		st := h.server("slow")
		return st.Phase == wire.PhaseStarting && st.PID == pid
	}, 30*time.Second, 5*time.Millisecond, "status while starting: %+v", h.server("slow"))
}

// A real server that needs longer to initialize than its timeout, and says
// so on stderr meanwhile, comes up in its first start, which goes on while
// it works: its one process is never killed. One that hangs silently
// fails at its configured timeout, every time.
func TestSlowStarterComesUpInItsFirstStart(t *testing.T) {
	h := newHarness(t)
	starts := filepath.Join(t.TempDir(), "starts")
	// Seconds, not less: the window that judges the work is a quarter of
	// the budget, and a loaded machine must still run the server in it.
	slow := testServer("slow", "--init-delay", "3s", "--init-stderr-every", "50ms", "--start-log", starts)
	slow.Timeout = time.Second
	hang := testServer("hang", "--hang-init")
	hang.Timeout = time.Second
	h.c.SetDesired([]schema.Server{slow, hang}, time.Hour)
	st := h.waitPhase("slow", wire.PhaseReady)
	require.Zero(t, st.Restarts, "1s was extended while it worked: %+v", st)
	require.Zero(t, st.StartTimeoutMS)
	b, err := os.ReadFile(starts)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), "\n"), "processes started: %q", b)
	require.Eventually(t, func() bool { return h.server("hang").Crashes >= 3 }, 30*time.Second, 10*time.Millisecond)
	hs := h.server("hang")
	require.Zero(t, hs.StartTimeoutMS, "a silent hang is not given longer: %+v", hs)
	require.Contains(t, hs.LastError, "no answer to initialize within 1s")
}
