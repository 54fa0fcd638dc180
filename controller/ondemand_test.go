package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// onDemandServer is an on-demand test server that logs its starts to
// startLog and sleeps after idle.
func onDemandServer(name, startLog string, idle time.Duration, flags ...string) schema.Server {
	s := testServer(name, append([]string{"--start-log", startLog}, flags...)...)
	s.Lifecycle, s.IdleTimeout = schema.LifecycleOnDemand, idle
	return s
}

// startPIDs are the pids a --start-log file lists, one per start.
func startPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

func withManifests(store *mcp.ManifestStore) harnessOpt {
	return func(o *Options) { o.Manifests = store }
}

// wakings counts the wire.ServerWaking events of server seen so far.
func (h *harness) wakings(server string) int {
	h.drain()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.log {
		if w, ok := e.(wire.ServerWaking); ok && w.Server == server {
			n++
		}
	}
	return n
}

func (h *harness) echo(ctx context.Context, server, text string) (wire.CallResult, error) {
	tool, ok := h.reg.Get(mcp.ToolID(server, "echo"))
	if !ok {
		h.t.Fatalf("echo of %s is not registered", server)
	}
	return tool.Call(ctx, json.RawMessage(`{"text":`+strconv.Quote(text)+`}`), nil)
}

// An on-demand server without a manifest is started once to learn it and
// stopped; its tools stay advertised while it is idle; concurrent first
// calls start it once; it sleeps again after its idle timeout; nothing of
// that is a tools_changed. Another controller on the same store
// advertises it without starting it.
func TestOnDemandLearnsSleepsAndWakes(t *testing.T) {
	dir := t.TempDir()
	startLog := filepath.Join(dir, "starts")
	store := mcp.OpenManifestStore(filepath.Join(dir, "manifests"), testLogger(t))
	srv := onDemandServer("od", startLog, 300*time.Millisecond)

	h := newHarness(t, withManifests(store))
	h.c.SetDesired([]schema.Server{srv}, 0)
	st := h.waitPhase("od", wire.PhaseIdle)
	require.Len(t, startPIDs(t, startLog), 1, "started once, to learn it")
	require.Eventually(t, func() bool { return !testutil.Alive(startPIDs(t, startLog)[0]) }, 10*time.Second, 10*time.Millisecond)
	require.NotZero(t, st.Tools)
	require.NotZero(t, st.ManifestStoredAt)
	require.NotZero(t, st.LastRunAt)
	require.Zero(t, st.PID)
	require.Equal(t, "on-demand", st.Desired.Lifecycle)
	_, err := store.Get("od", srv.SpecHash())
	require.NoError(t, err)
	ids := h.toolIDs("od")
	require.NotEmpty(t, ids)
	require.Equal(t, 1, h.toolsChanged("od"))

	// Concurrent first calls: one start.
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() {
			res, err := h.echo(t.Context(), "od", "hi")
			if err == nil && res.Text() != "hi" {
				err = os.ErrInvalid
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, startPIDs(t, startLog), 2, "the calls started it once")
	require.Equal(t, 1, h.wakings("od"))
	h.waitPhase("od", wire.PhaseIdle)
	require.Eventually(t, func() bool { return !testutil.Alive(startPIDs(t, startLog)[1]) }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, ids, h.toolIDs("od"))
	require.Equal(t, 1, h.toolsChanged("od"), "sleeping and waking with the same tools changes nothing")

	// A call in flight keeps it running past its idle timeout.
	sleep, ok := h.reg.Get(mcp.ToolID("od", "sleep"))
	require.True(t, ok)
	_, err = sleep.Call(t.Context(), json.RawMessage(`{"ms":700}`), nil)
	require.NoError(t, err)
	require.Len(t, startPIDs(t, startLog), 3)
	for _, pc := range h.phases("od")[len(h.phases("od"))-3:] {
		require.NotEqual(t, wire.PhaseStopping, pc.Phase, "stopped while a call was in flight")
	}
	h.waitPhase("od", wire.PhaseIdle)
	h.stop()

	// Another controller on the same store advertises it at once.
	h2 := newHarness(t, withManifests(store))
	h2.c.SetDesired([]schema.Server{srv}, 0)
	h2.waitPhase("od", wire.PhaseIdle)
	require.Equal(t, ids, h2.toolIDs("od"))
	require.Len(t, startPIDs(t, startLog), 3, "advertised from its manifest without starting")

	// Restart starts it now; it sleeps again after its idle timeout.
	require.NoError(t, h2.c.Restart("od"))
	h2.waitPhase("od", wire.PhaseReady)
	h2.waitPhase("od", wire.PhaseIdle)
	require.Len(t, startPIDs(t, startLog), 4)

	// A changed spec while asleep: its manifest is no longer valid, the
	// server is started once to learn the new one.
	changed := srv
	changed.Env = map[string]string{"OD_VERSION": "2"}
	h2.c.SetDesired([]schema.Server{changed}, 0)
	require.Eventually(t, func() bool { return len(startPIDs(t, startLog)) == 5 }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := store.Get("od", changed.SpecHash())
		return err == nil && h2.server("od").Phase == wire.PhaseIdle
	}, 30*time.Second, 10*time.Millisecond)
	_, err = store.Get("od", srv.SpecHash())
	require.ErrorIs(t, err, mcp.ErrNoManifest, "the old spec's manifest is dropped")
	require.Equal(t, 1, h2.toolsChanged("od"), "the same tools under a new spec change nothing")
}

// A start for a call that fails is the call's failure, with the server's
// reason; the server goes to backoff and stays advertised.
func TestOnDemandWakeFailure(t *testing.T) {
	dir := t.TempDir()
	startLog := filepath.Join(dir, "starts")
	store := mcp.OpenManifestStore(filepath.Join(dir, "manifests"), testLogger(t))
	good := onDemandServer("od", startLog, time.Minute)
	bad := onDemandServer("od", startLog, time.Minute, "--require-env", "OD_NEEDED")

	// Learn the tools under the good spec, then store them as the bad
	// spec's manifest: it is advertised, and fails when woken.
	h := newHarness(t, withManifests(store))
	h.c.SetDesired([]schema.Server{good}, 0)
	h.waitPhase("od", wire.PhaseIdle)
	m, err := store.Get("od", good.SpecHash())
	require.NoError(t, err)
	m.SpecHash = bad.SpecHash()
	// Dated apart from the good spec's, so that the wait below sees the
	// bad spec advertised and not the good one still idle.
	m.Stored = m.Stored.Add(time.Second)
	require.NoError(t, store.Put(m))
	h.c.SetDesired([]schema.Server{bad}, 0)
	require.Eventually(t, func() bool {
		st := h.server("od")
		return st.Phase == wire.PhaseIdle && st.ManifestStoredAt.Equal(m.Stored)
	}, 30*time.Second, 10*time.Millisecond)
	changes := h.toolsChanged("od")

	_, err = h.echo(t.Context(), "od", "hi")
	require.ErrorIs(t, err, ErrWakeFailed)
	require.ErrorContains(t, err, "OD_NEEDED")
	require.Equal(t, wire.PhaseBackoff, h.server("od").Phase)
	require.NotEmpty(t, h.toolIDs("od"), "still advertised")
	require.Equal(t, changes, h.toolsChanged("od"))

	// While in backoff a call fails at once with the same reason.
	_, err = h.echo(t.Context(), "od", "hi")
	require.ErrorIs(t, err, ErrWakeFailed)
}

// An on-demand server that crashes while awake goes to backoff as any
// server does, keeps its tools advertised, and is idle again once the
// backoff is over — not started again, since nobody uses it; the next
// call wakes it.
func TestOnDemandCrashReturnsToIdle(t *testing.T) {
	dir := t.TempDir()
	startLog := filepath.Join(dir, "starts")
	store := mcp.OpenManifestStore(filepath.Join(dir, "manifests"), testLogger(t))
	srv := onDemandServer("od", startLog, time.Minute)

	h := newHarness(t, withManifests(store))
	h.c.SetDesired([]schema.Server{srv}, 0)
	h.waitPhase("od", wire.PhaseIdle)
	ids := h.toolIDs("od")
	changes := h.toolsChanged("od")
	_, err := h.echo(t.Context(), "od", "wake")
	require.NoError(t, err)
	pids := startPIDs(t, startLog)
	require.Len(t, pids, 2)
	require.NoError(t, syscall.Kill(pids[1], syscall.SIGKILL))
	h.waitPhase("od", wire.PhaseBackoff)
	require.Equal(t, ids, h.toolIDs("od"), "advertised through the backoff")
	st := h.waitPhase("od", wire.PhaseIdle)
	require.Zero(t, st.PID)
	require.Len(t, startPIDs(t, startLog), 2, "not started again without a use")
	require.Equal(t, ids, h.toolIDs("od"))
	require.Equal(t, changes, h.toolsChanged("od"))

	res, err := h.echo(t.Context(), "od", "again")
	require.NoError(t, err)
	require.Equal(t, "again", res.Text())
	require.Len(t, startPIDs(t, startLog), 3)
}

// A remote on-demand server needs no process: it is learned over one
// session and then idle with no session; a call opens one, and its idle
// timeout closes it again, the tools advertised throughout.
func TestOnDemandRemote(t *testing.T) {
	dir := t.TempDir()
	requests := filepath.Join(dir, "requests")
	// The harness first: its check that no child is left runs after the
	// test server's kill (cleanups run last first).
	h := newHarness(t, withManifests(mcp.OpenManifestStore(filepath.Join(dir, "manifests"), testLogger(t))))
	url, _ := startHTTPTestServer(t, "127.0.0.1:0", "--request-log", requests)
	srv := schema.MCP{}.Resolve(schema.Server{Name: "r", Type: schema.Remote, URL: url, Enabled: true, Timeout: 10 * time.Second})
	srv.Lifecycle, srv.IdleTimeout = schema.LifecycleOnDemand, 300*time.Millisecond
	count := func(method string) int {
		b, err := os.ReadFile(requests)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), method+"\n")
	}
	h.c.SetDesired([]schema.Server{srv}, 0)
	st := h.waitPhase("r", wire.PhaseIdle)
	require.Zero(t, st.PID, "no process")
	require.NotEmpty(t, h.toolIDs("r"))
	require.Equal(t, 1, count("initialize"), "learned over one session")
	changes := h.toolsChanged("r")

	res, err := h.echo(t.Context(), "r", "over http")
	require.NoError(t, err)
	require.Equal(t, "over http", res.Text())
	require.Equal(t, 2, count("initialize"), "the call opened a session")
	require.Equal(t, 1, h.wakings("r"))
	h.waitPhase("r", wire.PhaseIdle)
	require.NotEmpty(t, h.toolIDs("r"), "advertised while idle")
	require.Equal(t, changes, h.toolsChanged("r"))
	require.Equal(t, 1, count("tools/call"))
}

// An idle on-demand server whose manifest declares no completions is not
// started to be asked for one: the answer is ErrNotOffered at once. One
// that declares them is woken for it and answers.
func TestOnDemandCompletionWakesOnlyAServerThatOffersThem(t *testing.T) {
	dir := t.TempDir()
	store := mcp.OpenManifestStore(filepath.Join(dir, "manifests"), testLogger(t))
	plainLog, offersLog := filepath.Join(dir, "plain"), filepath.Join(dir, "offers")
	plain := onDemandServer("plain", plainLog, time.Hour, "--prompts")
	offers := onDemandServer("offers", offersLog, time.Hour, "--prompts", "--completions")
	h := newHarness(t, withManifests(store))
	h.c.SetDesired([]schema.Server{plain, offers}, 0)
	h.waitPhase("plain", wire.PhaseIdle)
	h.waitPhase("offers", wire.PhaseIdle)
	require.Len(t, startPIDs(t, plainLog), 1)
	require.Len(t, startPIDs(t, offersLog), 1)
	req := wire.CompletionRequest{Ref: wire.CompletionRef{Type: wire.RefPrompt, Name: "greet"}, Argument: wire.CompletionArgument{Name: "name", Value: "A"}}

	_, err := h.c.Complete(t.Context(), "plain", req)
	require.ErrorIs(t, err, mcp.ErrNotOffered)
	require.Len(t, startPIDs(t, plainLog), 1, "not started to be asked")
	require.Zero(t, h.wakings("plain"))

	res, err := h.c.Complete(t.Context(), "offers", req)
	require.NoError(t, err)
	require.NotEmpty(t, res.Values)
	require.Len(t, startPIDs(t, offersLog), 2, "woken for it")
}
