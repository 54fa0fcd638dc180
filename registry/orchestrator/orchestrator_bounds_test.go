package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/wire"

	"github.com/freecode/freecode/registry"
)

// schemaTool is a read-only tool validated by the real validator of schema.
func schemaTool(t *testing.T, id string, schema string, calls *atomic.Int32) registry.Tool {
	t.Helper()
	p, err := jsonschema.Prepare(json.RawMessage(schema))
	require.NoError(t, err)
	tool := fakeTool(id, true, calls, nil)
	tool.Validate = p.Validator.ValidateContext
	return tool
}

func register(t *testing.T, source string, tools ...registry.Tool) *registry.Registry {
	t.Helper()
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource(source, tools)
	require.NoError(t, err)
	return r
}

// runAsync runs one batch on its own goroutine and waits (up to a generous
// bound) for the outcomes.
func runAsync(t *testing.T, ctx context.Context, o *Orchestrator, calls ...Call) []Outcome {
	t.Helper()
	done := make(chan []Outcome, 1)
	go func() { done <- o.Run(ctx, calls) }()
	select {
	case out := <-done:
		return out
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// members is an arguments object of about size bytes.
func members(size int) json.RawMessage {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k_%010d":0`, i)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

func TestArgumentSizeIsBoundedFirst(t *testing.T) {
	var calls, validations atomic.Int32
	tool := fakeTool("mcp__s__t", true, &calls, nil)
	tool.Validate = func(context.Context, json.RawMessage) error { validations.Add(1); return nil }
	r := register(t, "s", tool)

	out := newOrch(t, r, nil).Run(testCtx(t), []Call{{ID: "1", Tool: "mcp__s__t", Args: members(2_700_000)}})
	require.ErrorIs(t, out[0].Err, ErrInvalidArgs)
	require.Equal(t, "invalid arguments for mcp__s__t: arguments of 2.6 MiB exceed the limit of 1 MiB (mcp.maxArgumentBytes); send less per call", out[0].Err.Error())
	require.True(t, out[0].Result.IsError)
	// Not even an unknown tool is looked at.
	out = newOrch(t, r, nil).Run(testCtx(t), []Call{{ID: "2", Tool: "nope", Args: members(2_700_000)}})
	require.ErrorIs(t, out[0].Err, ErrInvalidArgs)
	require.Zero(t, validations.Load())
	require.Zero(t, calls.Load())

	// Limits apply per batch.
	limit := 64
	o := newOrch(t, r, func(o *Options) { o.Limits = func() Limits { return Limits{MaxArgumentBytes: limit} } })
	exact := json.RawMessage(`{"k":"` + strings.Repeat("x", 64-len(`{"k":""}`)) + `"}`)
	require.Len(t, exact, 64)
	out = o.Run(testCtx(t), []Call{{ID: "3", Tool: "mcp__s__t", Args: exact}})
	require.NoError(t, out[0].Err)
	limit = 63
	out = o.Run(testCtx(t), []Call{{ID: "4", Tool: "mcp__s__t", Args: exact}})
	require.EqualError(t, out[0].Err, "invalid arguments for mcp__s__t: arguments of 64 bytes exceed the limit of 63 bytes (mcp.maxArgumentBytes); send less per call")
	require.Equal(t, int32(1), calls.Load())
}

// The attack: a tool schema with 2,000 patternProperties and 2.7 MB of
// arguments (20 s of CPU per call when it was validated). With the size
// limit raised, the validator's estimate refuses it before validating:
// the call is never made.
func TestPatternPropertiesAttackRefused(t *testing.T) {
	pp := make([]string, 2000)
	for i := range pp {
		pp[i] = fmt.Sprintf(`"^x_%04d$":{"type":"string"}`, i)
	}
	var calls atomic.Int32
	r := register(t, "evil", schemaTool(t, "mcp__evil__t", `{"type":"object","required":["must"],"patternProperties":{`+strings.Join(pp, ",")+`}}`, &calls))
	o := newOrch(t, r, func(o *Options) { o.Limits = func() Limits { return Limits{MaxArgumentBytes: 4 << 20} } })

	out := runAsync(t, testCtx(t), o, Call{ID: "1", Tool: "mcp__evil__t", Args: members(2_700_000)})
	require.ErrorIs(t, out[0].Err, ErrInvalidArgs)
	require.ErrorIs(t, out[0].Err, jsonschema.ErrTooCostly)
	require.Contains(t, out[0].Err.Error(), "invalid arguments for mcp__evil__t: validating these arguments would take up to")
	require.Zero(t, calls.Load())
}

// nestedAnyOf makes {"a":{"a":…}} of depth d cost 2^d subschemas: the
// estimate cannot see it coming, only the validation's context stops it.
const nestedAnyOf = `{"$defs":{"n":{"anyOf":[
	{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["zz"]},
	{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}]}},
	"$ref":"#/$defs/n"}`

func endless() json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, 60) + "{}" + strings.Repeat("}", 60))
}

func TestValidationEndsWithTheCall(t *testing.T) {
	var calls atomic.Int32
	r := register(t, "s", schemaTool(t, "mcp__s__t", nestedAnyOf, &calls))
	o := newOrch(t, r, nil)

	// The client hangs up while the arguments are being validated.
	ctx, cancel := context.WithCancel(testCtx(t))
	time.AfterFunc(20*time.Millisecond, cancel)
	out := runAsync(t, ctx, o, Call{ID: "1", Tool: "mcp__s__t", Args: endless()})
	require.ErrorIs(t, out[0].Err, ErrNotStarted)
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.Zero(t, calls.Load())

	// A call's deadline ends its validation too.
	dctx, dcancel := context.WithTimeout(testCtx(t), 20*time.Millisecond)
	defer dcancel()
	out = runAsync(t, dctx, o, Call{ID: "2", Tool: "mcp__s__t", Args: endless()})
	require.ErrorIs(t, out[0].Err, context.DeadlineExceeded)

	// Without either, ValidateTimeout ends it with a timeout of its own.
	o = newOrch(t, r, func(o *Options) { o.ValidateTimeout = 20 * time.Millisecond })
	out = runAsync(t, testCtx(t), o, Call{ID: "3", Tool: "mcp__s__t", Args: endless()})
	require.ErrorIs(t, out[0].Err, ErrCallTimeout)
	require.Contains(t, out[0].Err.Error(), "the arguments for mcp__s__t were not validated within 20ms, the limit; send smaller arguments")
	require.Zero(t, calls.Load())

	// Small arguments of the same tool still validate and run.
	out = runAsync(t, testCtx(t), o, Call{ID: "4", Tool: "mcp__s__t", Args: json.RawMessage(`{"a":{}}`)})
	require.NoError(t, out[0].Err)
	require.Equal(t, int32(1), calls.Load())
}

// MaxValidations bounds validations across batches: a call that finds no
// free one waits, up to ValidateTimeout.
func TestValidationsAreBounded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := fakeTool("mcp__s__slow", true, nil, nil)
	// A validation that keeps its turn past ValidateTimeout, as one stuck
	// in a machine starved of CPU would.
	slow.Validate = func(context.Context, json.RawMessage) error {
		close(entered)
		<-release
		return nil
	}
	fast := fakeTool("mcp__s__fast", true, nil, nil)
	fast.Validate = func(context.Context, json.RawMessage) error { return nil }
	r := register(t, "s", slow, fast)
	o := newOrch(t, r, func(o *Options) {
		o.MaxValidations = 1
		o.ValidateTimeout = 100 * time.Millisecond
	})
	slowDone := make(chan []Outcome, 1)
	go func() { slowDone <- o.Run(testCtx(t), []Call{{ID: "1", Tool: "mcp__s__slow"}}) }()
	<-entered
	out := o.Run(testCtx(t), []Call{{ID: "2", Tool: "mcp__s__fast"}})
	require.ErrorIs(t, out[0].Err, ErrCallTimeout)
	require.Equal(t, "the arguments for mcp__s__fast found no free validation within 100ms (1 running, the limit); try again", out[0].Err.Error())
	close(release)
	require.NoError(t, (<-slowDone)[0].Err, "a validation that passes, however late, lets the call run")
	out = o.Run(testCtx(t), []Call{{ID: "3", Tool: "mcp__s__fast"}})
	require.NoError(t, out[0].Err)
}

func TestCallTimeoutPerSource(t *testing.T) {
	block := func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		<-ctx.Done()
		return wire.CallResult{}, ctx.Err()
	}
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("slow", []registry.Tool{fakeTool("mcp__slow__t", true, nil, block)})
	require.NoError(t, err)
	_, err = r.ReplaceSource("other", []registry.Tool{fakeTool("mcp__other__t", true, nil, func(ctx context.Context, _ json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 30*time.Minute {
			return wire.ErrorResult("want the global hour"), nil
		}
		return wire.TextResult("ok"), nil
	})})
	require.NoError(t, err)
	limits := Limits{Default: SourceLimits{CallTimeout: time.Hour}, Sources: map[string]SourceLimits{"slow": {CallTimeout: 20 * time.Millisecond}}}
	o := newOrch(t, r, func(o *Options) {
		o.CallTimeout = time.Nanosecond // replaced by Limits
		o.Limits = func() Limits { return limits }
	})
	out := runAsync(t, t.Context(), o, Call{ID: "1", Tool: "mcp__slow__t"}, Call{ID: "2", Tool: "mcp__other__t"})
	require.ErrorIs(t, out[0].Err, ErrCallTimeout)
	require.Equal(t, "tool mcp__slow__t did not finish within 20ms", out[0].Err.Error())
	require.NoError(t, out[1].Err)
	require.Equal(t, "ok", out[1].Result.Text())

	// Limits are read per batch.
	limits.Sources = map[string]SourceLimits{"slow": {CallTimeout: 30 * time.Millisecond}}
	out = runAsync(t, testCtx(t), o, Call{ID: "3", Tool: "mcp__slow__t"})
	require.Equal(t, "tool mcp__slow__t did not finish within 30ms", out[0].Err.Error())
}

func TestSensitiveCallsAsk(t *testing.T) {
	type seen struct {
		approved bool
		path     string
	}
	calls := make(chan seen, 10)
	read := fakeTool("read", true, nil, func(ctx context.Context, args json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
		var a struct{ Path string }
		_ = json.Unmarshal(args, &a)
		calls <- seen{registry.Approved(ctx), a.Path}
		return wire.TextResult("contents"), nil
	})
	read.Sensitive = func(args json.RawMessage) string {
		if strings.Contains(string(args), "secret") {
			return "secret is FreeCode's; reading it needs approval"
		}
		return ""
	}
	r := register(t, registry.SourceBuiltin, read)
	var asked []ApprovalRequest
	answer := false
	approver := ApproverFunc(func(_ context.Context, req ApprovalRequest) (bool, error) {
		asked = append(asked, req)
		return answer, nil
	})
	rules := Rules{Allow: []string{"read"}}
	o := newOrch(t, r, func(o *Options) {
		o.Rules = func() Rules { return rules }
		o.Approver = approver
	})
	secret := Call{ID: "s", Tool: "read", Args: json.RawMessage(`{"path":"secret"}`)}
	plain := Call{ID: "p", Tool: "read", Args: json.RawMessage(`{"path":"plain"}`)}

	// Allowed by a rule, the sensitive call still asks; refused, it never runs.
	out := o.Run(testCtx(t), []Call{secret, plain})
	require.ErrorIs(t, out[0].Err, ErrNotApproved)
	require.NoError(t, out[1].Err)
	require.Len(t, asked, 1)
	require.Equal(t, "secret is FreeCode's; reading it needs approval", asked[0].Reason)
	require.Equal(t, seen{false, "plain"}, <-calls)

	// Approved, it runs and knows it was approved.
	answer = true
	out = o.Run(testCtx(t), []Call{secret})
	require.NoError(t, out[0].Err)
	require.Equal(t, seen{true, "secret"}, <-calls)

	// Without an approver it is refused with the reason.
	out = newOrch(t, r, func(o *Options) { o.Rules = func() Rules { return rules } }).Run(testCtx(t), []Call{secret})
	require.ErrorIs(t, out[0].Err, ErrNotApproved)
	require.Contains(t, out[0].Err.Error(), "secret is FreeCode's")

	// A deny rule still wins, without asking.
	rules = Rules{Deny: []string{"read"}}
	asked = nil
	out = o.Run(testCtx(t), []Call{secret})
	require.ErrorIs(t, out[0].Err, ErrDenied)
	require.Empty(t, asked)
	require.Empty(t, calls)
}
