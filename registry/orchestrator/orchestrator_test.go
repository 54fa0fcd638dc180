package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// fakeTool builds a tool whose Call is fn and counts invocations.
func fakeTool(id string, readOnly bool, calls *atomic.Int32, fn func(ctx context.Context, args json.RawMessage, progress func(wire.Progress)) (wire.CallResult, error)) registry.Tool {
	return registry.Tool{
		ID:       id,
		ReadOnly: readOnly,
		Call: func(ctx context.Context, args json.RawMessage, progress func(wire.Progress)) (wire.CallResult, error) {
			if calls != nil {
				calls.Add(1)
			}
			if fn == nil {
				return wire.TextResult(id), nil
			}
			return fn(ctx, args, progress)
		},
	}
}

func newOrch(t *testing.T, r *registry.Registry, mod func(*Options)) *Orchestrator {
	t.Helper()
	opts := Options{Registry: r, Logger: logr.Discard()}
	if mod != nil {
		mod(&opts)
	}
	return New(opts)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOrchestratorRejectsBeforeCalling(t *testing.T) {
	var n atomic.Int32
	r := registry.NewRegistry(nil)
	valid := fakeTool("mcp__s__t", true, &n, nil)
	valid.Validate = func(_ context.Context, args json.RawMessage) error {
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		if _, ok := m["q"]; !ok {
			return errors.New(`missing required property "q"`)
		}
		return nil
	}
	_, err := r.ReplaceSource("s", []registry.Tool{valid, fakeTool("mcp__s__mut", false, &n, nil)})
	require.NoError(t, err)
	_, err = r.ReplaceSource("github", []registry.Tool{fakeTool("mcp__github__x", true, &n, nil)})
	require.NoError(t, err)

	refuse := ApproverFunc(func(context.Context, ApprovalRequest) (bool, error) { return false, nil })
	o := newOrch(t, r, func(o *Options) {
		o.Rules = func() Rules { return Rules{Deny: []string{"mcp__github"}} }
		o.Approver = refuse
	})
	out := o.Run(testCtx(t), []Call{
		{ID: "1", Tool: "nope"},
		{ID: "2", Tool: "mcp__github__x", Args: json.RawMessage(`{}`)},
		{ID: "3", Tool: "mcp__s__t", Args: json.RawMessage(`{"other":1}`)},
		{ID: "4", Tool: "mcp__s__t", Args: json.RawMessage(`[1]`)},
		{ID: "5", Tool: "mcp__s__mut"},
	})
	require.Len(t, out, 5)
	require.Zero(t, n.Load(), "no tool was called")
	want := []struct {
		kind error
		msg  string
	}{
		{ErrUnknownTool, `tool "nope" is not available`},
		{ErrDenied, `tool "mcp__github__x" is denied by rule "mcp__github" in permission.deny`},
		{ErrInvalidArgs, `invalid arguments for mcp__s__t: missing required property "q"`},
		{ErrInvalidArgs, `invalid arguments for mcp__s__t: arguments must be a JSON object`},
		{ErrNotApproved, `the call to "mcp__s__mut" was not approved`},
	}
	for i, w := range want {
		require.Equal(t, fmt.Sprint(i+1), out[i].ID)
		require.ErrorIs(t, out[i].Err, w.kind, "call %d", i+1)
		require.EqualError(t, out[i].Err, w.msg)
		require.True(t, out[i].Result.IsError)
		require.Equal(t, w.msg, out[i].Result.Text())
		require.Zero(t, out[i].Attempts)
	}

	// No approver: asks are refused; approver errors are refusals too.
	out = newOrch(t, r, nil).Run(testCtx(t), []Call{{ID: "a", Tool: "mcp__s__mut"}})
	require.ErrorIs(t, out[0].Err, ErrNotApproved)
	require.Contains(t, out[0].Err.Error(), "no approver")
	boom := errors.New("tty closed")
	out = newOrch(t, r, func(o *Options) {
		o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (bool, error) { return false, boom })
	}).Run(testCtx(t), []Call{{ID: "a", Tool: "mcp__s__mut"}})
	require.ErrorIs(t, out[0].Err, boom)
	require.Zero(t, n.Load())
}

func TestOrchestratorBuiltinValidationNeverCalls(t *testing.T) {
	r := registry.NewRegistry(nil)
	dir := t.TempDir()
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: dir}))
	o := newOrch(t, r, func(o *Options) { o.Rules = func() Rules { return Rules{Allow: []string{"write"}} } })
	out := o.Run(testCtx(t), []Call{{ID: "1", Tool: "write", Args: json.RawMessage(`{"path":"a.txt"}`)}})
	require.ErrorIs(t, out[0].Err, ErrInvalidArgs)
	require.Contains(t, out[0].Err.Error(), "content")
	require.NoFileExists(t, dir+"/a.txt")
}

// TestOrchestratorReadOnlyOverlap proves two read-only calls run at the same
// time: each waits until both have entered before returning.
func TestOrchestratorReadOnlyOverlap(t *testing.T) {
	var entered sync.WaitGroup
	entered.Add(2)
	both := make(chan struct{})
	go func() { entered.Wait(); close(both) }()
	barrier := func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		entered.Done()
		select {
		case <-both:
			return wire.TextResult("met"), nil
		case <-ctx.Done():
			return wire.CallResult{}, ctx.Err()
		}
	}
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{fakeTool("r1", true, nil, barrier), fakeTool("r2", true, nil, barrier)})
	require.NoError(t, err)
	out := newOrch(t, r, nil).Run(testCtx(t), []Call{{ID: "a", Tool: "r1"}, {ID: "b", Tool: "r2"}})
	for _, oc := range out {
		require.NoError(t, oc.Err)
		require.Equal(t, "met", oc.Result.Text())
	}
}

func TestOrchestratorMutatingRunsAloneInOrder(t *testing.T) {
	var (
		mu       sync.Mutex
		log      []string
		active   atomic.Int32
		overlaps atomic.Int32
	)
	record := func(ev string) {
		mu.Lock()
		log = append(log, ev)
		mu.Unlock()
	}
	mk := func(id string, ro bool) registry.Tool {
		return fakeTool(id, ro, nil, func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
			n := active.Add(1)
			if !ro && n != 1 {
				overlaps.Add(1)
			}
			record("start " + id)
			record("end " + id)
			if !ro && active.Load() != 1 {
				overlaps.Add(1)
			}
			active.Add(-1)
			return wire.TextResult(id), nil
		})
	}
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{mk("r1", true), mk("r2", true), mk("m1", false), mk("r3", true), mk("m2", false), mk("m3", false), mk("r4", true)})
	require.NoError(t, err)
	o := newOrch(t, r, func(o *Options) { o.Rules = func() Rules { return Rules{Allow: []string{"*"}} } })
	ids := []string{"r1", "r2", "m1", "r3", "m2", "m3", "r4"}
	var calls []Call
	for _, id := range ids {
		calls = append(calls, Call{ID: "c-" + id, Tool: id})
	}
	out := o.Run(testCtx(t), calls)
	for i, oc := range out {
		require.NoError(t, oc.Err)
		require.Equal(t, ids[i], oc.Result.Text(), "outcomes in call order")
		require.Equal(t, 1, oc.Attempts)
	}
	require.Zero(t, overlaps.Load(), "a mutating call overlapped another call")

	pos := map[string]int{}
	for i, ev := range log {
		pos[ev] = i
	}
	// Groups: {r1,r2} < m1 < {r3} < m2 < m3 < {r4}.
	before := func(a, b string) {
		require.Less(t, pos["end "+a], pos["start "+b], "%s must finish before %s starts", a, b)
	}
	before("r1", "m1")
	before("r2", "m1")
	before("m1", "r3")
	before("r3", "m2")
	before("m2", "m3")
	before("m3", "r4")
	for _, m := range []string{"m1", "m2", "m3"} {
		require.Equal(t, pos["start "+m]+1, pos["end "+m], "nothing happens during %s", m)
	}
}

func TestOrchestratorMaxParallel(t *testing.T) {
	var active, peak atomic.Int32
	fn := func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		n := active.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		active.Add(-1)
		return wire.TextResult("ok"), nil
	}
	r := registry.NewRegistry(nil)
	var tools []registry.Tool
	var calls []Call
	for i := range 8 {
		id := fmt.Sprintf("r%d", i)
		tools = append(tools, fakeTool(id, true, nil, fn))
		calls = append(calls, Call{ID: id, Tool: id})
	}
	_, err := r.ReplaceSource("s", tools)
	require.NoError(t, err)
	out := newOrch(t, r, func(o *Options) { o.MaxParallel = 2 }).Run(testCtx(t), calls)
	require.Len(t, out, 8)
	require.LessOrEqual(t, peak.Load(), int32(2))
}

func TestOrchestratorRetries(t *testing.T) {
	transport := fmt.Errorf("connection reset: %w", registry.ErrTransport)
	cases := []struct {
		name         string
		readOnly     bool
		errs         []error // per attempt; nil = success
		wantCalls    int32
		wantErr      error
		wantAttempts int
	}{
		{"mutating transport failure is not retried", false, []error{transport, nil}, 1, registry.ErrTransport, 1},
		{"read-only transport failure retried once", true, []error{transport, nil}, 2, nil, 2},
		{"read-only retried at most once", true, []error{transport, transport, nil}, 2, registry.ErrTransport, 2},
		{"read-only tool error not retried", true, []error{errors.New("bad"), nil}, 1, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			tl := fakeTool("t", c.readOnly, &n, func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
				i := int(n.Load()) - 1
				if err := c.errs[i]; err != nil {
					return wire.CallResult{}, err
				}
				return wire.TextResult("ok"), nil
			})
			r := registry.NewRegistry(nil)
			_, err := r.ReplaceSource("s", []registry.Tool{tl})
			require.NoError(t, err)
			o := newOrch(t, r, func(o *Options) { o.Rules = func() Rules { return Rules{Allow: []string{"t"}} } })
			out := o.Run(testCtx(t), []Call{{ID: "1", Tool: "t"}})
			require.Equal(t, c.wantCalls, n.Load())
			require.Equal(t, c.wantAttempts, out[0].Attempts)
			switch {
			case c.wantErr != nil:
				require.ErrorIs(t, out[0].Err, c.wantErr)
				require.True(t, out[0].Result.IsError)
			case c.name == "read-only tool error not retried":
				require.Error(t, out[0].Err)
				require.NotErrorIs(t, out[0].Err, registry.ErrTransport)
			default:
				require.NoError(t, out[0].Err)
				require.Equal(t, "ok", out[0].Result.Text())
			}
		})
	}
}

func TestOrchestratorTimeoutPropagates(t *testing.T) {
	var n atomic.Int32
	seen := make(chan error, 2)
	tl := fakeTool("slow", true, &n, func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		// An adapter may report the aborted call as a transport failure;
		// a timed-out attempt is still not retried.
		return wire.CallResult{}, fmt.Errorf("aborted: %w: %w", registry.ErrTransport, ctx.Err())
	})
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{tl})
	require.NoError(t, err)
	o := newOrch(t, r, func(o *Options) { o.CallTimeout = 20 * time.Millisecond })
	out := o.Run(testCtx(t), []Call{{ID: "1", Tool: "slow"}})
	require.ErrorIs(t, <-seen, context.DeadlineExceeded)
	require.ErrorIs(t, out[0].Err, ErrCallTimeout)
	require.Contains(t, out[0].Err.Error(), "did not finish within 20ms")
	require.Equal(t, int32(1), n.Load())
}

func TestOrchestratorCancellation(t *testing.T) {
	started := make(chan struct{})
	var later atomic.Int32
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{
		fakeTool("block", false, nil, func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
			close(started)
			<-ctx.Done()
			return wire.CallResult{}, ctx.Err()
		}),
		fakeTool("after", false, &later, nil),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	go func() { <-started; cancel() }()
	o := newOrch(t, r, func(o *Options) { o.Rules = func() Rules { return Rules{Allow: []string{"*"}} } })
	out := o.Run(ctx, []Call{{ID: "1", Tool: "block"}, {ID: "2", Tool: "after"}})
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.ErrorIs(t, out[1].Err, ErrNotStarted)
	require.Zero(t, later.Load())
}

func TestOrchestratorApprovalsAndRuntimeRules(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []string
	)
	approver := ApproverFunc(func(_ context.Context, req ApprovalRequest) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req.CallID+":"+req.ToolID+":"+req.Reason)
		return req.ToolID != "m2", nil
	})
	var approvalsAtRun atomic.Int32
	runFn := func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		mu.Lock()
		approvalsAtRun.Store(int32(len(reqs)))
		mu.Unlock()
		return wire.TextResult("ok"), nil
	}
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{fakeTool("r1", true, nil, runFn), fakeTool("m1", false, nil, nil), fakeTool("m2", false, nil, nil)})
	require.NoError(t, err)
	var rules atomic.Pointer[Rules]
	rules.Store(&Rules{Ask: []string{"r1"}})
	o := newOrch(t, r, func(o *Options) {
		o.Approver = approver
		o.Rules = func() Rules { return *rules.Load() }
	})
	out := o.Run(testCtx(t), []Call{{ID: "1", Tool: "r1"}, {ID: "2", Tool: "m1"}, {ID: "3", Tool: "m2"}})
	require.NoError(t, out[0].Err)
	require.NoError(t, out[1].Err)
	require.ErrorIs(t, out[2].Err, ErrNotApproved)
	require.Equal(t, []string{
		`1:r1:approval required by rule "r1" in permission.ask`,
		"2:m1:approval required by default (tool may change things)",
		"3:m2:approval required by default (tool may change things)",
	}, reqs)
	require.Equal(t, int32(1), approvalsAtRun.Load(), "r1 was approved before it ran, m1 after")

	// Rules changed at runtime apply to the next batch.
	rules.Store(&Rules{Deny: []string{"r1"}})
	out = o.Run(testCtx(t), []Call{{ID: "4", Tool: "r1"}})
	require.ErrorIs(t, out[0].Err, ErrDenied)
}

func TestOrchestratorPanicBecomesError(t *testing.T) {
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{fakeTool("p", true, nil, func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) { panic("oops") })})
	require.NoError(t, err)
	out := newOrch(t, r, nil).Run(testCtx(t), []Call{{ID: "1", Tool: "p"}})
	require.ErrorIs(t, out[0].Err, ErrToolPanicked)
	require.Contains(t, out[0].Err.Error(), "oops")
}

func BenchmarkOrchestratorRun(b *testing.B) {
	r := registry.NewRegistry(nil)
	echo := fakeTool("mcp__bench__echo", true, nil, func(_ context.Context, args json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		return wire.TextResult(string(args)), nil
	})
	echo.Validate = func(context.Context, json.RawMessage) error { return nil }
	if _, err := r.ReplaceSource("bench", []registry.Tool{echo}); err != nil {
		b.Fatal(err)
	}
	o := New(Options{Registry: r, Logger: logr.Discard(), CallTimeout: time.Minute})
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	for _, size := range []int{1, 4} {
		calls := make([]Call, size)
		for i := range calls {
			calls[i] = Call{ID: fmt.Sprint(i), Tool: "mcp__bench__echo", Args: args}
		}
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := o.Run(ctx, calls)
				if out[0].Err != nil {
					b.Fatal(out[0].Err)
				}
			}
		})
	}
}
