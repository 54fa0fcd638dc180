package controller

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

func TestMain(m *testing.M) { testutil.Main(m, &testServerBin) }

// testServer is a local server config running the test server with flags,
// resolved as schema resolves a file's entry.
func testServer(name string, flags ...string) schema.Server {
	return schema.MCP{}.Resolve(schema.Server{
		Name:    name,
		Type:    schema.Local,
		Command: append([]string{testServerBin}, flags...),
		Enabled: true,
		Timeout: 10 * time.Second,
		Source:  schema.SourceUser,
	})
}

// testLogger logs to t; verbose lines too.
func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
}

// harness runs a controller for one test and checks at cleanup that it
// stopped everything it started.
type harness struct {
	t      *testing.T
	reg    *registry.Registry
	bus    *event.Bus
	c      *Controller
	events <-chan event.Message
	cancel context.CancelFunc
	done   chan error

	mu   sync.Mutex // guards pids and log
	pids map[int]bool
	log  []event.Event // every event seen by drain
}

type harnessOpt func(*Options)

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	bus := event.NewBus()
	h := &harness{t: t, bus: bus, reg: registry.NewRegistry(bus), pids: map[int]bool{}, done: make(chan error, 1)}
	o := Options{
		Registry: h.reg,
		Bus:      bus,
		Logger:   testLogger(t),
		Dial:     MCPDialer(mcp.Options{Logger: testLogger(t)}),
		Backoff:  Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second, Factor: 2, Jitter: 0.2, StableAfter: time.Minute},
	}
	for _, f := range opts {
		f(&o)
	}
	h.c = New(o)
	ch, unsubscribe := bus.Subscribe(1024)
	h.events = ch
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.c.Start(ctx) }()
	t.Cleanup(func() {
		h.stop()
		unsubscribe()
		require.Empty(t, h.reg.List(), "tools left in the registry")
		require.Empty(t, h.reg.FeatureSources(), "resources or prompts left in the registry")
		h.mu.Lock()
		pids := slices.Sorted(func(yield func(int) bool) {
			for p := range h.pids {
				if !yield(p) {
					return
				}
			}
		})
		h.mu.Unlock()
		for _, pid := range pids {
			require.False(t, testutil.Alive(pid), "process %d outlived the controller", pid)
		}
		require.Eventually(t, func() bool { return len(testutil.Children(os.Getpid())) == 0 }, 5*time.Second, 10*time.Millisecond,
			"child processes left: %v", testutil.Children(os.Getpid()))
	})
	return h
}

// stop ends Start and waits for it; idempotent.
func (h *harness) stop() {
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok {
			require.NoError(h.t, err)
			close(h.done)
		}
	case <-time.After(30 * time.Second):
		h.t.Fatal("Start did not return after its context ended")
	}
}

// server returns name's status, failing if it is not listed.
func (h *harness) server(name string) wire.ServerStatus {
	h.t.Helper()
	for _, s := range h.c.Status().Servers {
		if s.Name == name {
			if s.PID != 0 {
				h.mu.Lock()
				h.pids[s.PID] = true
				h.mu.Unlock()
			}
			return s
		}
	}
	h.t.Fatalf("server %q not in status", name)
	return wire.ServerStatus{}
}

func (h *harness) listed(name string) bool {
	for _, s := range h.c.Status().Servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

// waitPhase waits until name is in phase p (and, for ready, has a pid if
// local) and returns its status.
func (h *harness) waitPhase(name string, p wire.Phase) wire.ServerStatus {
	h.t.Helper()
	var last wire.ServerStatus
	require.Eventually(h.t, func() bool {
		last = h.server(name)
		return last.Phase == p
	}, 30*time.Second, 5*time.Millisecond, "server %s never reached %s; last status %+v", name, p, &last)
	return last
}

// drain moves every event published so far into h.log and returns the
// ones of the given kind for server/source name.
func (h *harness) drain() {
	for {
		select {
		case m := <-h.events:
			require.Zero(h.t, m.Missed, "events were dropped")
			h.mu.Lock()
			h.log = append(h.log, m.Event)
			h.mu.Unlock()
		default:
			return
		}
	}
}

// toolsChanged counts ToolsChanged events for source seen so far.
func (h *harness) toolsChanged(source string) int {
	h.drain()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.log {
		if tc, ok := e.(registry.ToolsChanged); ok && tc.Source == source {
			n++
		}
	}
	return n
}

// phases lists the wire.PhaseChanged events for server seen so far.
func (h *harness) phases(server string) []wire.PhaseChanged {
	h.drain()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []wire.PhaseChanged
	for _, e := range h.log {
		if pc, ok := e.(wire.PhaseChanged); ok && pc.Server == server {
			out = append(out, pc)
		}
	}
	return out
}

// toolNames returns the server's own names of the registered tools of source.
func (h *harness) toolIDs(source string) []string {
	var ids []string
	for _, t := range h.reg.SourceTools(source) {
		ids = append(ids, t.ID)
	}
	return ids
}

// fakeConn is a Conn without a process, for tests of the loop itself.
type fakeConn struct {
	name         string
	pid          int
	toolsChanged chan struct{}
	done         chan struct{}
	closeOnce    sync.Once

	mu     sync.Mutex // guards tools, err, closed
	tools  []mcp.Tool
	err    error
	closed bool
}

func newFakeConn(t *testing.T, name string, pid int, toolNames ...string) *fakeConn {
	f := &fakeConn{name: name, pid: pid, toolsChanged: make(chan struct{}, 1), done: make(chan struct{})}
	f.setTools(t, toolNames...)
	return f
}

func (f *fakeConn) setTools(t *testing.T, names ...string) {
	var tools []mcp.Tool
	for _, n := range names {
		tool, err := mcp.ConvertTool(f.name, json.RawMessage(`{"name":"`+n+`","inputSchema":{"type":"object"}}`))
		require.NoError(t, err)
		tools = append(tools, tool)
	}
	f.mu.Lock()
	f.tools = tools
	f.mu.Unlock()
}

// changeTools sets the tools and signals ToolsChanged.
func (f *fakeConn) changeTools(t *testing.T, names ...string) {
	f.setTools(t, names...)
	select {
	case f.toolsChanged <- struct{}{}:
	default:
	}
}

// crash ends the session with err.
func (f *fakeConn) crash(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	f.closeOnce.Do(func() { close(f.done) })
}

func (f *fakeConn) Tools() []mcp.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tools)
}
func (f *fakeConn) ToolsChanged() <-chan struct{} { return f.toolsChanged }
func (f *fakeConn) Done() <-chan struct{}         { return f.done }
func (f *fakeConn) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
func (f *fakeConn) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.closeOnce.Do(func() { close(f.done) })
	return nil
}
func (f *fakeConn) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// LogAfter numbers StderrTail's one line 1; no more lines come.
func (f *fakeConn) LogAfter(n int64) ([]mcp.LogLine, int64, <-chan struct{}) {
	if n >= 1 {
		return []mcp.LogLine{}, n, nil
	}
	return []mcp.LogLine{{Text: f.StderrTail()[0]}}, 1, nil
}
func (f *fakeConn) Instructions() string { return "" }
func (f *fakeConn) PID() int             { return f.pid }
func (f *fakeConn) StderrTail() []string { return []string{"fake stderr of " + f.name} }
func (f *fakeConn) CallTool(context.Context, string, json.RawMessage, func(wire.Progress)) (*wire.CallResult, error) {
	return &wire.CallResult{Content: []wire.Content{{Type: wire.ContentText, Text: "ok"}}}, nil
}
