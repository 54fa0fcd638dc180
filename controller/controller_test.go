package controller

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// baseTools is how many tools the test server always has.
const baseTools = 7

func TestConvergeAddRemoveDisableChange(t *testing.T) {
	h := newHarness(t)
	a, b, c := testServer("a", "--tools", "2"), testServer("b"), testServer("c")
	h.c.SetDesired([]schema.Server{a, b, c}, time.Hour)

	sa := h.waitPhase("a", wire.PhaseReady)
	sb := h.waitPhase("b", wire.PhaseReady)
	sc := h.waitPhase("c", wire.PhaseReady)
	require.Equal(t, baseTools+2, sa.Tools)
	require.Len(t, h.toolIDs("a"), baseTools+2)
	require.Len(t, h.toolIDs("c"), baseTools)
	for _, s := range []wire.ServerStatus{sa, sb, sc} {
		require.NotZero(t, s.PID)
		require.True(t, testutil.Alive(s.PID))
		require.Equal(t, s.Desired.SpecHash, s.SpecHash)
		require.Equal(t, int64(1), s.Generation)
		require.Equal(t, int64(1), s.ObservedGeneration)
		require.Equal(t, 0, s.Restarts)
		require.Equal(t, "user", s.Source)
		require.Equal(t, "local", s.Desired.Type)
		require.True(t, strings.HasPrefix(s.Desired.Target, testServerBin))
	}
	names := []string{}
	for _, s := range h.c.Status().Servers {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"a", "b", "c"}, names, "sorted by name")
	require.Equal(t, 1, h.toolsChanged("c"))

	// Remove c: process gone, tools gone, one event.
	h.c.SetDesired([]schema.Server{a, b}, time.Hour)
	require.Eventually(t, func() bool { return !h.listed("c") }, 30*time.Second, 5*time.Millisecond)
	require.False(t, testutil.Alive(sc.PID), "removed server's process still runs")
	require.Empty(t, h.toolIDs("c"))
	require.Equal(t, 2, h.toolsChanged("c"), "one event when registered, one when removed")

	// Disable b.
	bOff := b
	bOff.Enabled = false
	h.c.SetDesired([]schema.Server{a, bOff}, time.Hour)
	st := h.waitPhase("b", wire.PhaseDisabled)
	require.False(t, testutil.Alive(sb.PID))
	require.Zero(t, st.PID)
	require.Empty(t, h.toolIDs("b"))
	require.False(t, st.Desired.Enabled)

	// Change a's command: restarted with a new pid and spec hash.
	a2 := testServer("a", "--tools", "3")
	require.NotEqual(t, a.SpecHash(), a2.SpecHash())
	h.c.SetDesired([]schema.Server{a2, bOff}, time.Hour)
	require.Eventually(t, func() bool {
		s := h.server("a")
		return s.Phase == wire.PhaseReady && s.SpecHash == a2.SpecHash()
	}, 30*time.Second, 5*time.Millisecond)
	sa2 := h.server("a")
	require.NotEqual(t, sa.PID, sa2.PID)
	require.False(t, testutil.Alive(sa.PID))
	require.Equal(t, baseTools+3, sa2.Tools)
	require.Len(t, h.toolIDs("a"), baseTools+3)
	require.Equal(t, int64(2), sa2.Generation)
	require.Equal(t, int64(2), sa2.ObservedGeneration)
	require.Equal(t, 1, sa2.Restarts)

	// Re-enable b.
	h.c.SetDesired([]schema.Server{a2, b}, time.Hour)
	sb2 := h.waitPhase("b", wire.PhaseReady)
	require.NotEqual(t, sb.PID, sb2.PID)

	// An identical desired set restarts nothing and publishes nothing.
	// A new server d afterwards is the barrier: once it is ready, the loop
	// has seen the identical set too.
	eventsA, eventsB := len(h.phases("a")), len(h.phases("b"))
	toolsA := h.toolsChanged("a")
	h.c.SetDesired([]schema.Server{testServer("a", "--tools", "3"), testServer("b")}, time.Hour)
	h.c.SetDesired([]schema.Server{a2, b, testServer("d")}, time.Hour)
	h.waitPhase("d", wire.PhaseReady)
	require.Equal(t, sa2.PID, h.server("a").PID)
	require.Equal(t, sb2.PID, h.server("b").PID)
	require.Len(t, h.phases("a"), eventsA)
	require.Len(t, h.phases("b"), eventsB)
	require.Equal(t, toolsA, h.toolsChanged("a"))
}

func TestKilledServerRestartsAfterBackoff(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("k")}, time.Hour)
	s1 := h.waitPhase("k", wire.PhaseReady)
	nTools := h.toolsChanged("k")

	require.NoError(t, syscall.Kill(s1.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		s := h.server("k")
		return s.Phase == wire.PhaseReady && s.PID != s1.PID
	}, 30*time.Second, 5*time.Millisecond)
	s2 := h.server("k")
	require.Equal(t, 1, s2.Restarts)
	require.Equal(t, int64(2), s2.Generation)
	require.Empty(t, s2.LastError, "ready again: no current error")
	require.Contains(t, s2.LastFailure, "SIGKILL")
	require.False(t, testutil.Alive(s1.PID))

	var seq []wire.Phase
	for _, e := range h.phases("k") {
		seq = append(seq, e.Phase)
	}
	require.Equal(t, []wire.Phase{wire.PhasePending, wire.PhaseStarting, wire.PhaseReady, wire.PhaseBackoff, wire.PhasePending, wire.PhaseStarting, wire.PhaseReady}, seq)
	backoff := h.phases("k")[3]
	require.Contains(t, backoff.Err, "SIGKILL")
	require.False(t, backoff.NextRetry.IsZero())
	// It came back with the same tools: they stayed registered, so the
	// tool list (and a model's prompt cache) never changed.
	require.Equal(t, nTools, h.toolsChanged("k"))
	require.Len(t, h.toolIDs("k"), baseTools)
}

func TestToolsOfAServerThatDoesNotComeBackAreRemoved(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "crashed")
	// The first start runs; every later one exits at once: a shell wrapper
	// that switches to --exit-at-start once the marker exists.
	script := fmt.Sprintf(`if [ -e %[1]s ]; then exec %[2]s --exit-at-start 3; fi; touch %[1]s; exec %[2]s`, marker, testServerBin)
	srv := schema.MCP{}.Resolve(schema.Server{Name: "gone", Type: schema.Local, Command: []string{"sh", "-c", script}, Enabled: true, Timeout: 10 * time.Second})
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	s1 := h.waitPhase("gone", wire.PhaseReady)
	require.NotEmpty(t, h.toolIDs("gone"))
	n := h.toolsChanged("gone")

	require.NoError(t, syscall.Kill(s1.PID, syscall.SIGKILL))
	// The event follows the registry's change: wait on it, not on the
	// registry, so that the count is not read in between.
	require.Eventually(t, func() bool { return h.toolsChanged("gone") == n+1 }, 30*time.Second, 5*time.Millisecond,
		"the failed restart removes the tools kept through the crash")
	require.Empty(t, h.toolIDs("gone"))
	h.waitPhase("gone", wire.PhaseBackoff)
	require.Equal(t, n+1, h.toolsChanged("gone"))
}

func TestRestartKeepsIdenticalTools(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("r")}, time.Hour)
	s1 := h.waitPhase("r", wire.PhaseReady)
	n := h.toolsChanged("r")
	for i := range 3 {
		require.NoError(t, h.c.Restart("r"))
		require.Eventually(t, func() bool {
			s := h.server("r")
			return s.Phase == wire.PhaseReady && s.Generation == s1.Generation+int64(i)+1
		}, 30*time.Second, 5*time.Millisecond)
	}
	require.Equal(t, n, h.toolsChanged("r"), "restarts of an identical server publish nothing")
	require.Len(t, h.toolIDs("r"), baseTools)

	// Removing it removes its tools at once.
	h.c.SetDesired(nil, time.Hour)
	require.Eventually(t, func() bool { return len(h.toolIDs("r")) == 0 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, n+1, h.toolsChanged("r"))
}

func TestRepeatedCrashesBackOffLonger(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("x", "--exit-at-start", "7")}, time.Hour)

	var backoffs []wire.PhaseChanged
	require.Eventually(t, func() bool {
		backoffs = backoffs[:0]
		for _, e := range h.phases("x") {
			if e.Phase == wire.PhaseBackoff {
				backoffs = append(backoffs, e)
			}
		}
		return len(backoffs) >= 4
	}, 60*time.Second, 10*time.Millisecond)

	// Each wait is at least 80% of twice the previous one's upper bound:
	// with Initial 50ms, Factor 2 and Jitter 0.2 the k-th delay lies in
	// [0.8·50ms·2^k, 50ms·2^k]. Measure between consecutive failures.
	st := h.server("x")
	require.Contains(t, st.LastError, "exited with status 7")
	require.NotEmpty(t, st.StderrTail, "stderr of the failed start is kept")
	require.Contains(t, st.LastError, st.StderrTail[len(st.StderrTail)-1], "last error quotes stderr")
	require.GreaterOrEqual(t, st.Restarts, 3)
	require.Equal(t, st.Generation, st.ObservedGeneration)
	logs, err := h.c.Logs("x", wire.LogCursor{})
	require.NoError(t, err)
	require.NotEmpty(t, logs.Lines)

	for i := 1; i < len(backoffs); i++ {
		require.True(t, backoffs[i].NextRetry.After(backoffs[i-1].NextRetry))
	}
	for i := 1; i < 4; i++ {
		lo := time.Duration(float64(50*time.Millisecond) * 0.8 * float64(int(1)<<i))
		gap := backoffs[i].NextRetry.Sub(backoffs[i-1].NextRetry)
		require.GreaterOrEqual(t, gap, lo, "backoff %d too short", i)
	}
}

func TestHangingInitializeTimesOut(t *testing.T) {
	h := newHarness(t)
	s := testServer("hang", "--hang-init")
	s.Timeout = 300 * time.Millisecond
	h.c.SetDesired([]schema.Server{s}, time.Hour)
	st := h.waitPhase("hang", wire.PhaseBackoff)
	require.Contains(t, st.LastError, "initialize")
	require.Contains(t, st.LastError, "300ms")
	require.Zero(t, st.PID)
	require.Empty(t, h.toolIDs("hang"))
}

func TestListChangedReregistersTools(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("l")}, time.Hour)
	s := h.waitPhase("l", wire.PhaseReady)
	require.Equal(t, 1, h.toolsChanged("l"))

	for i := 1; i <= 2; i++ {
		require.NoError(t, syscall.Kill(s.PID, syscall.SIGUSR1))
		want := "mcp__l__dyn_" + strconv.Itoa(i)
		require.Eventually(t, func() bool {
			_, ok := h.reg.Get(want)
			return ok
		}, 30*time.Second, 5*time.Millisecond)
		// The event and the status follow the registry; on a loaded
		// machine a moment later.
		require.Eventually(t, func() bool {
			return h.toolsChanged("l") >= 1+i && h.server("l").Tools == baseTools+i
		}, 30*time.Second, 5*time.Millisecond)
		require.Equal(t, 1+i, h.toolsChanged("l"), "one event per change")
	}
	require.Equal(t, s.PID, h.server("l").PID, "no restart")
}

func TestConfigErrorChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("e")}, time.Hour)
	s := h.waitPhase("e", wire.PhaseReady)
	n := len(h.phases("e"))

	bad := errors.New("config.json:3:5: mcp.servers.0.comand: field not allowed")
	h.c.SetConfigError(bad)
	st := h.c.Status()
	require.Equal(t, bad.Error(), st.ConfigError)
	// Still running, untouched, after the loop had every chance to act: a
	// Restart of another kind of trigger would show; look again via the
	// barrier of a second server.
	h.c.SetDesired([]schema.Server{testServer("e"), testServer("f")}, time.Hour)
	h.waitPhase("f", wire.PhaseReady)
	require.Equal(t, s.PID, h.server("e").PID)
	require.Len(t, h.phases("e"), n)
	require.Equal(t, bad.Error(), h.c.Status().ConfigError)

	h.drain()
	h.c.SetConfigError(nil)
	require.Empty(t, h.c.Status().ConfigError)
	h.drain()
	h.mu.Lock()
	var cfgEvents []wire.ConfigErrorChanged
	for _, e := range h.log {
		if ce, ok := e.(wire.ConfigErrorChanged); ok {
			cfgEvents = append(cfgEvents, ce)
		}
	}
	h.mu.Unlock()
	require.Equal(t, []wire.ConfigErrorChanged{{Err: bad.Error()}, {}}, cfgEvents)
}

func TestRestart(t *testing.T) {
	h := newHarness(t)
	off := testServer("off")
	off.Enabled = false
	h.c.SetDesired([]schema.Server{testServer("r"), off}, time.Hour)
	s1 := h.waitPhase("r", wire.PhaseReady)

	require.NoError(t, h.c.Restart("r"))
	require.Eventually(t, func() bool {
		s := h.server("r")
		return s.Phase == wire.PhaseReady && s.PID != s1.PID
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, h.server("r").Restarts)
	require.False(t, testutil.Alive(s1.PID))

	require.ErrorIs(t, h.c.Restart("nope"), ErrUnknownServer)
	require.ErrorIs(t, h.c.Restart("off"), ErrDisabled)
	_, err := h.c.Logs("nope", wire.LogCursor{})
	require.ErrorIs(t, err, ErrUnknownServer)
}

// A held server (untrusted, conflicting) must not run: Restart says so
// instead of accepting a request that would never be acted on, in the
// words of Options.HoldReason, as the status does.
func TestRestartHeld(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.HoldReason = func(h *schema.Hold) string { return h.Text("run freecode trust") }
	})
	untrusted := held(testServer("u"), schema.HoldUntrusted)
	untrusted.Hold.Trust = schema.Trust{Project: "/src/p/.freecode/settings.json", State: schema.NeverTrusted}
	conflict := held(testServer("c"), schema.HoldConflict)
	h.c.SetDesired([]schema.Server{untrusted, conflict}, time.Hour)
	h.waitPhase("u", wire.PhaseUntrusted)
	h.waitPhase("c", wire.PhaseConflict)

	err := h.c.Restart("u")
	require.ErrorIs(t, err, ErrHeld)
	const reason = "project /src/p/.freecode/settings.json is not trusted; run freecode trust"
	require.ErrorContains(t, err, reason)
	require.Equal(t, reason, statusOf(h.c, "u").Reason)
	require.ErrorIs(t, h.c.Restart("c"), ErrHeld)

	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	for _, name := range []string{"u", "c"} {
		require.False(t, h.c.servers[name].restartRequested, name)
	}
}

func TestShutdownStopsEveryProcess(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	gcFile := filepath.Join(dir, "grandchild.pid")
	h.c.SetDesired([]schema.Server{
		testServer("g", "--grandchild", "--grandchild-pid-file", gcFile),
		testServer("h", "--tools", "1"),
	}, time.Hour)
	sg := h.waitPhase("g", wire.PhaseReady)
	sh := h.waitPhase("h", wire.PhaseReady)
	var gc int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(gcFile)
		if err != nil {
			return false
		}
		gc, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 30*time.Second, 5*time.Millisecond)
	require.True(t, testutil.Alive(gc))

	h.stop()
	for _, pid := range []int{sg.PID, sh.PID, gc} {
		require.Eventually(t, func() bool { return !testutil.Alive(pid) }, 10*time.Second, 5*time.Millisecond, "pid %d", pid)
	}
	require.Empty(t, h.reg.List())
	for _, s := range h.c.Status().Servers {
		require.Equal(t, wire.PhaseStopped, s.Phase, s.Name)
		require.True(t, s.NextRetry.IsZero())
		require.Zero(t, s.PID)
	}
}

func TestCallThroughRegistry(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("call")}, time.Hour)
	h.waitPhase("call", wire.PhaseReady)
	tool, ok := h.reg.Get(mcp.ToolID("call", "echo"))
	require.True(t, ok)
	require.True(t, tool.ReadOnly)
	require.Error(t, tool.Validate(t.Context(), []byte(`{}`)))
	res, err := tool.Call(t.Context(), []byte(`{"text":"hello"}`), nil)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "hello")
}
