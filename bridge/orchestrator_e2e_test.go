package bridge_test

// End-to-end tests of the orchestrator path with a real MCP server: the
// mcp-testserver binary runs as a child process through mcp.Connect, its
// tools go through bridge.Tools into a registry.Registry, and calls go
// through orchestrator.Orchestrator.Run. What the server saw is read from its
// --call-log file (see package internal/testserver).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

// serverName is the name every test server is registered under.
const serverName = "ts"

// wait bounds every wait on a condition; generous for a loaded machine.
const wait = 10 * time.Second

func TestMain(m *testing.M) { testutil.Main(m, &testServerBin) }

func id(tool string) string { return mcp.ToolID(serverName, tool) }

// allowAll lets every tool of the test server run without an approver.
func allowAll() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"mcp__" + serverName}} }

// fixture is one running test server, connected and registered.
type fixture struct {
	sess    *mcp.Session
	reg     *registry.Registry
	callLog string
}

// startServer runs the test server with a call log and flags, connects it
// and registers its tools. At cleanup the session is closed and no process
// of its group may remain.
func startServer(tb testing.TB, logger logr.Logger, flags ...string) *fixture {
	tb.Helper()
	callLog := filepath.Join(tb.TempDir(), "calls.jsonl")
	srv := schema.MCP{}.Resolve(schema.Server{
		Name:    serverName,
		Type:    schema.Local,
		Command: append([]string{testServerBin, "--call-log", callLog}, flags...),
		Enabled: true,
		Timeout: wait,
	})
	sess, err := mcp.Connect(context.Background(), controller.MCPSpec(srv), mcp.Options{Logger: logger})
	require.NoError(tb, err)
	pid := sess.PID()
	tb.Cleanup(func() {
		require.NoError(tb, sess.Close())
		requireGroupGone(tb, pid)
	})
	reg := registry.NewRegistry(nil)
	changed, err := reg.ReplaceSource(serverName, bridge.Tools(sess, sess.Tools()))
	require.NoError(tb, err)
	require.True(tb, changed)
	return &fixture{sess: sess, reg: reg, callLog: callLog}
}

func (f *fixture) orchestrator(opts orchestrator.Options) *orchestrator.Orchestrator {
	opts.Registry = f.reg
	if opts.Rules == nil {
		opts.Rules = allowAll
	}
	return orchestrator.New(opts)
}

// testLogger logs to t at V(1), so session and orchestrator logs show in
// verbose output.
func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
}

// callRecord is one line of the test server's call log.
type callRecord = testserver.CallRecord

// readCallLog returns every record of the call log at path (none if the
// file does not exist).
func readCallLog(tb testing.TB, path string) []callRecord {
	tb.Helper()
	recs, err := testserver.ReadCallLog(path)
	require.NoError(tb, err)
	return recs
}

// phase returns the records of the given phase, in log order.
func phase(recs []callRecord, p string) []callRecord {
	var out []callRecord
	for _, r := range recs {
		if r.Phase == p {
			out = append(out, r)
		}
	}
	return out
}

// argText is the "text" argument of a record, or its ms argument as text.
func argText(t *testing.T, r callRecord) string {
	t.Helper()
	var a struct {
		Text string `json:"text"`
		MS   *int   `json:"ms"`
	}
	require.NoError(t, json.Unmarshal(r.Args, &a))
	if a.MS != nil {
		return strconv.Itoa(*a.MS)
	}
	return a.Text
}

// overlap reports whether the [Start, End] intervals of a and b intersect.
func overlap(a, b callRecord) bool {
	return a.Start.Before(b.End) && b.Start.Before(a.End)
}

func requireGroupGone(tb testing.TB, pgid int) {
	tb.Helper()
	require.Eventually(tb, func() bool { return len(testutil.GroupMembers(pgid)) == 0 }, wait, 5*time.Millisecond,
		"processes of group %d still running: %v", pgid, testutil.GroupMembers(pgid))
}

func TestE2EInvalidArgumentsNeverReachServer(t *testing.T) {
	f := startServer(t, testLogger(t))
	orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

	out := orch.Run(t.Context(), []orchestrator.Call{
		{ID: "1", Tool: id("echo"), Args: json.RawMessage(`{}`)},             // missing required text
		{ID: "2", Tool: id("note"), Args: nil},                               // missing required text
		{ID: "3", Tool: id("sleep"), Args: json.RawMessage(`{"ms":"soon"}`)}, // wrong type
		{ID: "4", Tool: id("echo"), Args: json.RawMessage(`["x"]`)},          // not an object
	})
	for _, oc := range out {
		require.ErrorIs(t, oc.Err, orchestrator.ErrInvalidArgs, "call %s", oc.ID)
		require.Zero(t, oc.Attempts, "call %s", oc.ID)
		require.True(t, oc.Result.IsError)
	}
	require.Contains(t, out[0].Err.Error(), "text")
	require.Contains(t, out[1].Err.Error(), "text")
	require.Contains(t, out[2].Err.Error(), "ms")
	require.Empty(t, readCallLog(t, f.callLog))

	// A valid call afterwards is logged as the server's first call: nothing
	// of the rejected ones was in flight.
	out = orch.Run(t.Context(), []orchestrator.Call{{ID: "5", Tool: id("echo"), Args: json.RawMessage(`{"text":"ok"}`)}})
	require.NoError(t, out[0].Err)
	require.Equal(t, "ok", out[0].Result.Text())
	recs := readCallLog(t, f.callLog)
	require.Len(t, recs, 2, "records: %+v", recs)
	for _, r := range recs {
		require.Equal(t, 1, r.Seq)
		require.Equal(t, "echo", r.Tool)
		require.JSONEq(t, `{"text":"ok"}`, string(r.Args))
	}
}

func TestE2EReadOnlyCallsOverlap(t *testing.T) {
	f := startServer(t, testLogger(t))
	orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

	out := orch.Run(t.Context(), []orchestrator.Call{
		{ID: "a", Tool: id("sleep"), Args: json.RawMessage(`{"ms":400}`)},
		{ID: "b", Tool: id("sleep"), Args: json.RawMessage(`{"ms":401}`)},
	})
	for _, oc := range out {
		require.NoError(t, oc.Err)
		require.False(t, oc.Result.IsError, oc.Result.Text())
		require.Equal(t, 1, oc.Attempts)
	}
	ends := phase(readCallLog(t, f.callLog), "end")
	require.Len(t, ends, 2)
	require.True(t, overlap(ends[0], ends[1]), "read-only calls ran one after the other: [%s, %s] and [%s, %s]",
		ends[0].Start.Format(time.StampMicro), ends[0].End.Format(time.StampMicro),
		ends[1].Start.Format(time.StampMicro), ends[1].End.Format(time.StampMicro))
}

func TestE2EMutatingCallsRunAlone(t *testing.T) {
	f := startServer(t, testLogger(t))
	orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

	// group is the batch's execution group: consecutive read-only calls
	// share one, every mutating call has its own.
	calls := []struct {
		call  orchestrator.Call
		group int
	}{
		{orchestrator.Call{ID: "s1", Tool: id("sleep"), Args: json.RawMessage(`{"ms":150}`)}, 0},
		{orchestrator.Call{ID: "s2", Tool: id("sleep"), Args: json.RawMessage(`{"ms":151}`)}, 0},
		{orchestrator.Call{ID: "n1", Tool: id("note"), Args: json.RawMessage(`{"text":"first"}`)}, 1},
		{orchestrator.Call{ID: "s3", Tool: id("sleep"), Args: json.RawMessage(`{"ms":152}`)}, 2},
		{orchestrator.Call{ID: "n2", Tool: id("note"), Args: json.RawMessage(`{"text":"second"}`)}, 3},
		{orchestrator.Call{ID: "n3", Tool: id("note"), Args: json.RawMessage(`{"text":"third"}`)}, 4},
		{orchestrator.Call{ID: "s4", Tool: id("sleep"), Args: json.RawMessage(`{"ms":153}`)}, 5},
		{orchestrator.Call{ID: "s5", Tool: id("sleep"), Args: json.RawMessage(`{"ms":154}`)}, 5},
		{orchestrator.Call{ID: "n4", Tool: id("note"), Args: json.RawMessage(`{"text":"fourth"}`)}, 6},
	}
	batch := make([]orchestrator.Call, len(calls))
	groupOf := make(map[string]int) // by argument text
	for i, c := range calls {
		batch[i] = c.call
		var a struct {
			Text string `json:"text"`
			MS   *int   `json:"ms"`
		}
		require.NoError(t, json.Unmarshal(c.call.Args, &a))
		key := a.Text
		if a.MS != nil {
			key = strconv.Itoa(*a.MS)
		}
		groupOf[key] = c.group
	}

	out := orch.Run(t.Context(), batch)
	require.Len(t, out, len(batch))
	notes := 0
	for i, oc := range out {
		require.Equal(t, batch[i].ID, oc.ID, "outcomes are in batch order")
		require.NoError(t, oc.Err)
		require.False(t, oc.Result.IsError, oc.Result.Text())
		require.Equal(t, 1, oc.Attempts)
		if batch[i].Tool == id("note") {
			notes++
			// note answers how many notes the server holds: batch order.
			require.Equal(t, strconv.Itoa(notes), oc.Result.Text(), "call %s", oc.ID)
		}
	}

	ends := phase(readCallLog(t, f.callLog), "end")
	require.Len(t, ends, len(batch))
	for _, n := range ends {
		if n.Tool != "note" {
			continue
		}
		for _, o := range ends {
			if o.Seq != n.Seq {
				require.False(t, overlap(n, o), "mutating call %s (seq %d) overlaps %s %s (seq %d)",
					argText(t, n), n.Seq, o.Tool, argText(t, o), o.Seq)
			}
		}
	}
	// Groups ran strictly in batch order: every call of an earlier group
	// ended before any call of a later group started.
	for _, a := range ends {
		for _, b := range ends {
			if groupOf[argText(t, a)] < groupOf[argText(t, b)] {
				require.False(t, a.End.After(b.Start), "%s %s (group %d) ended after %s %s (group %d) started",
					a.Tool, argText(t, a), groupOf[argText(t, a)], b.Tool, argText(t, b), groupOf[argText(t, b)])
			}
		}
	}
	var noteOrder []string
	for _, r := range phase(readCallLog(t, f.callLog), "start") {
		if r.Tool == "note" {
			noteOrder = append(noteOrder, argText(t, r))
		}
	}
	require.Equal(t, []string{"first", "second", "third", "fourth"}, noteOrder)
}

func TestE2ETransportFailure(t *testing.T) {
	t.Run("mutating call is made exactly once", func(t *testing.T) {
		f := startServer(t, testLogger(t), "--crash-after", "1")
		orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

		out := orch.Run(t.Context(), []orchestrator.Call{{ID: "1", Tool: id("note"), Args: json.RawMessage(`{"text":"x"}`)}})
		oc := out[0]
		require.Error(t, oc.Err)
		require.ErrorIs(t, oc.Err, registry.ErrTransport)
		require.Equal(t, 1, oc.Attempts)
		var exit *mcp.ExitError
		require.ErrorAs(t, oc.Err, &exit, "error: %v", oc.Err)
		require.Equal(t, 3, exit.ExitCode())

		recs := readCallLog(t, f.callLog)
		require.Len(t, phase(recs, "start"), 1, "records: %+v", recs)
		require.Empty(t, phase(recs, "end"), "records: %+v", recs)
		require.Equal(t, "note", recs[0].Tool)
		select {
		case <-f.sess.Done():
		case <-time.After(wait):
			t.Fatal("session did not end after the server crashed")
		}
	})

	// A read-only call is retried once on a transport failure. The tool is
	// bound to its session, and a crashed local server takes the session
	// with it, so the retry does not reach any server: it fails at once
	// with ErrClosed, which wraps the exit of the process (an
	// ErrTransport). The server sees the call once.
	t.Run("read-only call is retried at most once", func(t *testing.T) {
		f := startServer(t, testLogger(t), "--crash-after", "1")
		orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

		out := orch.Run(t.Context(), []orchestrator.Call{{ID: "1", Tool: id("echo"), Args: json.RawMessage(`{"text":"x"}`)}})
		oc := out[0]
		t.Logf("outcome after retry: attempts=%d err=%v", oc.Attempts, oc.Err)
		require.Equal(t, 2, oc.Attempts)
		require.ErrorIs(t, oc.Err, registry.ErrTransport)
		require.ErrorIs(t, oc.Err, mcp.ErrClosed)
		var exit *mcp.ExitError
		require.ErrorAs(t, oc.Err, &exit)
		require.Equal(t, 3, exit.ExitCode())

		recs := readCallLog(t, f.callLog)
		require.Len(t, recs, 1, "records: %+v", recs)
		require.Equal(t, "start", recs[0].Phase)
		require.Equal(t, "echo", recs[0].Tool)
	})
}

// waitCancelledSleep waits until the call log has the end line of a sleep
// call and checks that it ended early because the server saw the
// cancellation: the test server's sleep returns an isError result only when
// its context ends, and it ran far less than the ms it was asked for.
func waitCancelledSleep(t *testing.T, f *fixture, asked time.Duration) {
	t.Helper()
	var end callRecord
	require.Eventually(t, func() bool {
		ends := phase(readCallLog(t, f.callLog), "end")
		if len(ends) == 0 {
			return false
		}
		end = ends[0]
		return true
	}, wait, 5*time.Millisecond, "the server never finished the sleep call")
	require.Equal(t, "sleep", end.Tool)
	require.NotNil(t, end.IsError)
	require.True(t, *end.IsError, "sleep was not cancelled")
	ran := end.End.Sub(end.Start)
	require.Less(t, ran, asked/2, "sleep ran %s of %s", ran, asked)
	t.Logf("server-side sleep ran %s of %s", ran, asked)

	// The session survived: only the call was cancelled.
	select {
	case <-f.sess.Done():
		t.Fatalf("session ended: %v", f.sess.Err())
	default:
	}
}

func TestE2ECancellationReachesServer(t *testing.T) {
	const asked = 10 * time.Second
	sleep10s := orchestrator.Call{ID: "1", Tool: id("sleep"), Args: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, asked.Milliseconds()))}

	t.Run("per-call timeout", func(t *testing.T) {
		f := startServer(t, testLogger(t))
		orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t), CallTimeout: 200 * time.Millisecond})

		oc := orch.Run(t.Context(), []orchestrator.Call{sleep10s})[0]
		require.ErrorIs(t, oc.Err, orchestrator.ErrCallTimeout)
		require.Equal(t, 1, oc.Attempts, "a timed-out call is not retried")
		require.Less(t, oc.Duration, asked/2)
		waitCancelledSleep(t, f, asked)

		oc = orch.Run(t.Context(), []orchestrator.Call{{ID: "2", Tool: id("echo"), Args: json.RawMessage(`{"text":"still here"}`)}})[0]
		require.NoError(t, oc.Err)
		require.Equal(t, "still here", oc.Result.Text())
	})

	t.Run("batch context cancelled", func(t *testing.T) {
		f := startServer(t, testLogger(t))
		orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan []orchestrator.Outcome, 1)
		go func() { done <- orch.Run(ctx, []orchestrator.Call{sleep10s}) }()
		require.Eventually(t, func() bool { return len(readCallLog(t, f.callLog)) > 0 }, wait, 5*time.Millisecond,
			"the sleep call never reached the server")
		cancel()
		var out []orchestrator.Outcome
		select {
		case out = <-done:
		case <-time.After(wait):
			t.Fatal("Run did not return after its context was cancelled")
		}
		require.ErrorIs(t, out[0].Err, context.Canceled)
		require.Equal(t, 1, out[0].Attempts)
		waitCancelledSleep(t, f, asked)
	})
}

// Benchmarks: the same echo call through the whole orchestrator path
// (validation, permission decision, bridge, mcp.Session) and through a bare
// mcp-go client, each talking to its own mcp-testserver child over stdio,
// in the same run. Both send the arguments as the same raw JSON.

var echoArgs = json.RawMessage(`{"text":"hello"}`)

// rawClient starts the test server itself and speaks to it with a plain
// mcp-go client pinned to mcp.ProtocolVersion, as mcp.Session does.
func rawClient(b *testing.B) *client.Client {
	b.Helper()
	// The same flags as startServer's: the call log costs the server tens
	// of µs per call, which must not count as the orchestrator's overhead.
	cmd := exec.Command(testServerBin, "--call-log", filepath.Join(b.TempDir(), "calls.jsonl"))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	c := client.NewClient(transport.NewIO(stdout, stdin, nil), client.WithProtocolVersion(mcp.ProtocolVersion))
	b.Cleanup(func() {
		_ = c.Close() // closes stdin: the server answers what it has and exits
		select {
		case <-exited:
		case <-time.After(wait):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		requireGroupGone(b, cmd.Process.Pid)
	})
	require.NoError(b, c.Start(context.Background()))
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "0"}
	_, err = c.Initialize(b.Context(), req)
	require.NoError(b, err)
	return c
}

func rawEcho(ctx context.Context, c *client.Client) error {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = echoArgs
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("echo returned isError")
	}
	return nil
}

func BenchmarkCallOverhead(b *testing.B) {
	raw := rawClient(b)
	f := startServer(b, logr.Discard())
	orch := f.orchestrator(orchestrator.Options{MaxParallel: 8})
	one := []orchestrator.Call{{ID: "1", Tool: id("echo"), Args: echoArgs}}
	eight := make([]orchestrator.Call, 8)
	for i := range eight {
		eight[i] = orchestrator.Call{ID: strconv.Itoa(i), Tool: id("echo"), Args: echoArgs}
	}

	b.Run("raw-mcp-go", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			if err := rawEcho(ctx, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("orchestrator", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			if oc := orch.Run(ctx, one)[0]; oc.Err != nil || oc.Result.IsError {
				b.Fatalf("echo: %v %s", oc.Err, oc.Result.Text())
			}
		}
	})
	b.Run("raw-parallel8", func(b *testing.B) {
		ctx := b.Context()
		errs := make([]error, 8)
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { errs[i] = rawEcho(ctx, raw) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("orchestrator-parallel8", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			for _, oc := range orch.Run(ctx, eight) {
				if oc.Err != nil || oc.Result.IsError {
					b.Fatalf("echo: %v %s", oc.Err, oc.Result.Text())
				}
			}
		}
	})
}

// A content block of a type FreeCode does not know used to fail the whole
// call in mcp-go ("unknown content type"): the registered tool's result
// holds it byte for byte, beside the text block it came with.
func TestE2EUnknownContentKeptVerbatim(t *testing.T) {
	f := startServer(t, testLogger(t), "--unknown-content")
	tool, ok := f.reg.Get(id("hologram"))
	require.True(t, ok)
	res, err := tool.Call(t.Context(), json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 2)
	require.Equal(t, wire.Content{Type: "text", Text: testserver.HologramText}, res.Content[0])
	require.Equal(t, "hologram", res.Content[1].Type)
	require.Equal(t, testserver.UnknownBlock, string(res.Content[1].Raw))
	require.Equal(t, testserver.HologramText, res.Text())
}

// A call that asks for progress (orchestrator.Call.Progress) gets the
// server's notices, in order, while it runs; abandoning it then reaches
// the server (notifications/cancelled), which ends the call.
func TestE2EProgressReported(t *testing.T) {
	f := startServer(t, testLogger(t), "--progress")
	orch := f.orchestrator(orchestrator.Options{Logger: testLogger(t)})
	var mu sync.Mutex
	var got []wire.Progress
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	progress := func(p wire.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}
	done := make(chan orchestrator.Outcome, 1)
	go func() {
		done <- orch.Run(ctx, []orchestrator.Call{{ID: "1", Tool: id("progress"), Args: json.RawMessage(`{"steps":3,"hold":true}`), Progress: progress}})[0]
	}()
	// The call holds after its steps, so every notice comes while it runs.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	}, wait, 5*time.Millisecond)
	mu.Lock()
	for i, p := range got {
		require.Equal(t, wire.Progress{Progress: float64(i + 1), Total: 3, Message: fmt.Sprintf("step %d of 3", i+1)}, p)
	}
	mu.Unlock()
	cancel()
	select {
	case oc := <-done:
		require.ErrorIs(t, oc.Err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("Run did not return after its context was cancelled")
	}
	var end callRecord
	require.Eventually(t, func() bool {
		ends := phase(readCallLog(t, f.callLog), "end")
		if len(ends) == 0 {
			return false
		}
		end = ends[0]
		return true
	}, wait, 5*time.Millisecond, "the server never ended the held call: the cancellation did not reach it")
	require.Equal(t, "progress", end.Tool)
	require.True(t, *end.IsError, "ended by its context")
}
