package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Errors an Outcome's Err matches (errors.Is) to say why a call failed.
var (
	ErrUnknownTool  = errors.New("unknown tool")
	ErrDenied       = errors.New("denied by permission rules")
	ErrNotApproved  = errors.New("not approved")
	ErrInvalidArgs  = errors.New("invalid arguments")
	ErrCallTimeout  = errors.New("call timed out")
	ErrToolPanicked = errors.New("tool panicked")
	ErrNotStarted   = errors.New("call not started")
)

const defaultMaxParallel = 4

// callError carries a model-readable message and matches its kind sentinel
// and its cause with errors.Is/As.
type callError struct {
	kind  error
	msg   string
	cause error
}

func (e *callError) Error() string { return e.msg }

func (e *callError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func callErr(kind, cause error, format string, args ...any) error {
	return &callError{kind: kind, cause: cause, msg: fmt.Sprintf(format, args...)}
}

// OrchestratorOptions configure New.
type OrchestratorOptions struct {
	// Registry is where tools are looked up (required).
	Registry *Registry
	// Rules returns the current permission rules; it is called once per Run,
	// so edits take effect for the next batch. nil means no rules.
	Rules func() Rules
	// Approver answers "ask" decisions; nil refuses every ask.
	Approver Approver
	// MaxParallel bounds how many read-only calls run at once (default 4).
	MaxParallel int
	// CallTimeout bounds each attempt of each call; 0 means no bound beyond
	// the ctx given to Run.
	CallTimeout time.Duration
	Logger      logr.Logger
}

// Orchestrator runs batches of tool calls under the permission rules.
// It holds no per-batch state and is safe for concurrent use.
type Orchestrator struct {
	opts OrchestratorOptions
}

// New returns an orchestrator. It panics if opts.Registry is nil, which is
// a programming error.
func New(opts OrchestratorOptions) *Orchestrator {
	if opts.Registry == nil {
		panic("registry.New: OrchestratorOptions.Registry is nil")
	}
	if opts.MaxParallel < 1 {
		opts.MaxParallel = defaultMaxParallel
	}
	if opts.Rules == nil {
		opts.Rules = func() Rules { return Rules{} }
	}
	return &Orchestrator{opts: opts}
}

// Call is one tool call requested by the model.
type Call struct {
	ID   string          // the model's call id, echoed in the Outcome
	Tool string          // tool id
	Args json.RawMessage // arguments object; empty means {}
}

// Outcome is the result of one Call.
type Outcome struct {
	ID   string
	Tool string
	// Result is what to show the model. When Err is non-nil it is an
	// IsError result whose text is Err's message.
	Result Result
	// Err is non-nil when the call did not complete: it wraps
	// ErrUnknownTool, ErrDenied, ErrNotApproved, ErrInvalidArgs,
	// ErrCallTimeout, ErrToolPanicked, ErrNotStarted, ErrTransport, or
	// ctx's error.
	Err error
	// Attempts is how many times the tool's Call ran (0, 1 or 2).
	Attempts int
	// Duration is the wall time spent in the tool's Call, retries included.
	Duration time.Duration
}

// prepared is a call that passed lookup, permission and validation.
type prepared struct {
	idx      int
	call     Call
	tool     Tool
	decision Decision
}

// Run executes calls and returns one Outcome per call, in the same order.
//
// Before anything runs, each call is checked: an unknown tool, a call denied
// by the rules, or arguments that fail the tool's Validate produce an error
// outcome and the tool's Call is never invoked. The remaining calls are
// grouped: consecutive read-only calls form one group and run in parallel
// (at most MaxParallel at once); every other call is a group of its own and
// runs alone. Groups run strictly one after another, in batch order, so a
// batch [r1, r2, m1, r3] runs r1‖r2, then m1, then r3. Calls whose decision
// is "ask" are put to the Approver one at a time, in order, right before
// their group starts; a refusal is an error outcome.
//
// A read-only call whose error wraps ErrTransport is retried once (if ctx
// and its own timeout still allow); nothing else is ever retried. Each
// attempt gets ctx bounded by CallTimeout. Once ctx ends, calls that have
// not started get ctx's error.
func (o *Orchestrator) Run(ctx context.Context, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	policy := NewPolicy(o.opts.Rules())
	var ready []prepared
	for i, c := range calls {
		out[i] = Outcome{ID: c.ID, Tool: c.Tool}
		p, err := o.check(policy, i, c)
		if err != nil {
			out[i].fail(err)
			o.opts.Logger.V(1).Info("tool call rejected", "call", c.ID, "tool", c.Tool, "reason", err.Error())
			continue
		}
		ready = append(ready, p)
	}

	for len(ready) > 0 {
		n := 1
		if ready[0].tool.ReadOnly {
			for n < len(ready) && ready[n].tool.ReadOnly {
				n++
			}
		}
		group := ready[:n]
		ready = ready[n:]
		if err := ctx.Err(); err != nil {
			for _, p := range group {
				out[p.idx].fail(callErr(ErrNotStarted, err, "call to %q was not started: %v", p.call.Tool, err))
			}
			continue
		}
		group = o.approve(ctx, group, out)
		o.runGroup(ctx, group, out)
	}
	return out
}

// check looks the tool up, applies the rules and validates the arguments.
func (o *Orchestrator) check(policy Policy, i int, c Call) (prepared, error) {
	t, ok := o.opts.Registry.Get(c.Tool)
	if !ok {
		return prepared{}, callErr(ErrUnknownTool, nil, "tool %q is not available", c.Tool)
	}
	d := policy.Decide(t)
	if d.Action == Deny {
		return prepared{}, callErr(ErrDenied, nil, "tool %q is %s", c.Tool, d.Reason())
	}
	args := bytes.TrimSpace(c.Args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if !json.Valid(args) || args[0] != '{' {
		return prepared{}, callErr(ErrInvalidArgs, nil, "invalid arguments for %s: arguments must be a JSON object", c.Tool)
	}
	if t.Validate != nil {
		if err := t.Validate(args); err != nil {
			// Validators say "invalid arguments: <details>"; name the tool once.
			detail := strings.TrimPrefix(err.Error(), "invalid arguments: ")
			return prepared{}, callErr(ErrInvalidArgs, err, "invalid arguments for %s: %s", c.Tool, detail)
		}
	}
	c.Args = args
	return prepared{idx: i, call: c, tool: t, decision: d}, nil
}

// approve asks the Approver about every "ask" call of group, in order, and
// returns the calls that may run.
func (o *Orchestrator) approve(ctx context.Context, group []prepared, out []Outcome) []prepared {
	kept := group[:0:0]
	for _, p := range group {
		if p.decision.Action != Ask {
			kept = append(kept, p)
			continue
		}
		if o.opts.Approver == nil {
			out[p.idx].fail(callErr(ErrNotApproved, nil, "tool %q needs approval (%s) but no approver is available", p.call.Tool, p.decision.Reason()))
			continue
		}
		ok, err := o.opts.Approver.Approve(ctx, ApprovalRequest{
			CallID:   p.call.ID,
			ToolID:   p.call.Tool,
			Args:     p.call.Args,
			ReadOnly: p.tool.ReadOnly,
			Reason:   p.decision.Reason(),
		})
		switch {
		case err != nil:
			out[p.idx].fail(callErr(ErrNotApproved, err, "approval for %q failed: %v", p.call.Tool, err))
		case !ok:
			out[p.idx].fail(callErr(ErrNotApproved, nil, "the call to %q was not approved", p.call.Tool))
		default:
			kept = append(kept, p)
		}
	}
	return kept
}

// runGroup runs a group: one call inline, several read-only calls in
// parallel under the MaxParallel bound. It returns when all are done.
func (o *Orchestrator) runGroup(ctx context.Context, group []prepared, out []Outcome) {
	if len(group) == 1 {
		o.execute(ctx, group[0], &out[group[0].idx])
		return
	}
	sem := make(chan struct{}, o.opts.MaxParallel)
	var wg sync.WaitGroup
	for _, p := range group {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o.execute(ctx, p, &out[p.idx])
		})
	}
	wg.Wait()
}

// execute runs one call with its timeout and the read-only retry rule.
func (o *Orchestrator) execute(ctx context.Context, p prepared, oc *Outcome) {
	start := time.Now()
	var (
		res Result
		err error
	)
	for {
		oc.Attempts++
		var timedOut bool
		res, err, timedOut = o.attempt(ctx, p)
		if err == nil {
			break
		}
		retry := p.tool.ReadOnly && oc.Attempts == 1 && !timedOut &&
			errors.Is(err, ErrTransport) && ctx.Err() == nil
		o.opts.Logger.V(1).Info("tool call failed", "call", p.call.ID, "tool", p.call.Tool,
			"attempt", oc.Attempts, "retry", retry, "error", err.Error())
		if !retry {
			break
		}
	}
	oc.Duration = time.Since(start)
	if err != nil {
		oc.fail(err)
		return
	}
	oc.Result = res
	o.opts.Logger.V(1).Info("tool call done", "call", p.call.ID, "tool", p.call.Tool,
		"attempts", oc.Attempts, "duration", oc.Duration, "isError", res.IsError)
}

// attempt makes one call under CallTimeout, converting panics to errors.
func (o *Orchestrator) attempt(ctx context.Context, p prepared) (res Result, err error, timedOut bool) {
	cctx := ctx
	if o.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeoutCause(ctx, o.opts.CallTimeout, ErrCallTimeout)
		defer cancel()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				o.opts.Logger.Error(fmt.Errorf("%v", r), "tool panicked", "tool", p.call.Tool, "stack", string(debug.Stack()))
				err = callErr(ErrToolPanicked, nil, "tool %s failed internally: %v", p.call.Tool, r)
			}
		}()
		res, err = p.tool.Call(cctx, p.call.Args)
	}()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrCallTimeout) {
		return Result{}, callErr(ErrCallTimeout, err, "tool %s did not finish within %s", p.call.Tool, o.opts.CallTimeout), true
	}
	if err != nil {
		return Result{}, fmt.Errorf("tool %s: %w", p.call.Tool, err), false
	}
	return res, nil, false
}

// fail records err as the outcome's error and model-facing result.
func (oc *Outcome) fail(err error) {
	oc.Err = err
	oc.Result = ErrorResult(err.Error())
}
