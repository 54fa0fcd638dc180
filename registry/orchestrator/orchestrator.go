// Package orchestrator runs a model's batch of tool calls under the
// permission rules: each call is bounded, looked up in the registry, decided
// by the rules (allow, ask, deny), validated before it can run and, when
// asked, put to the Approver; read-only calls run in parallel, mutating
// calls alone and in order; only a read-only call that failed in transport
// is retried, once.
package orchestrator

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

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
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

// Defaults of Options and Limits.
const (
	// DefaultMaxArgumentBytes bounds a call's arguments when
	// Limits.MaxArgumentBytes is 0: schema.DefaultMaxArgumentBytes, which
	// says why (a test in serve checks they are equal). The local API reads
	// at most 4 MiB of body, the most this may be raised to.
	DefaultMaxArgumentBytes = 1 << 20
	// DefaultValidateTimeout bounds one call's argument validation, waiting
	// for a free validation included. Validation is metered to about half a
	// second of CPU at most (jsonschema.MaxValidationSteps), so this is only
	// reached on a machine starved of CPU.
	DefaultValidateTimeout = 5 * time.Second
	// defaultMaxValidations bounds how many validations run at once: each
	// may use a core for up to that half second.
	defaultMaxValidations = 4
)

// errValidateTimeout is the cause of a validation context that ran out of
// DefaultValidateTimeout (or ValidateTimeout).
var errValidateTimeout = errors.New("validation timed out")

// Limits bound the work of each call. Options.Limits is read
// once per Run, like the rules, so a changed configuration applies to the
// next batch. FreeCode's serve builds them from the configuration, whose
// settings schema has resolved: nothing here is defaulted again.
type Limits struct {
	// MaxArgumentBytes bounds the size of a call's arguments; larger ones
	// are refused before anything else is looked at. 0 means
	// DefaultMaxArgumentBytes (a Limits built without a configuration).
	MaxArgumentBytes int
	// OutputDir is where a result over its cap is kept whole (see
	// capOutput); "" means results are never capped.
	OutputDir string
	// Sources, keyed by registry.Tool.Source (an MCP server's name), bound
	// the calls of that source's tools; Default bounds those of every
	// other source (the built-ins).
	Sources map[string]SourceLimits
	Default SourceLimits
}

// SourceLimits bound the calls of one source's tools.
type SourceLimits struct {
	// CallTimeout bounds each attempt of each call; 0 means no bound
	// beyond the ctx given to Run.
	CallTimeout time.Duration
	// MaxOutputTokens caps every result of a tool that is not built in, in
	// estimated tokens (EstimateTokens; 0: no cap). OwnOutputCap says it
	// is the source's own maxOutputTokens, which a tool's size hint does
	// not raise; else it is mcp.maxOutputTokens.
	MaxOutputTokens int
	OwnOutputCap    bool
}

// Of returns the bounds of the calls of source's tools.
func (l Limits) Of(source string) SourceLimits {
	if s, ok := l.Sources[source]; ok {
		return s
	}
	return l.Default
}

// MaxOutputTokensHint is the ceiling of a tool's own size hint
// (registry.Tool.OutputTokensHint): 125000 estimated tokens, the 500,000
// characters Claude Code honours at most.
const MaxOutputTokensHint = 125000

// outputCap is the cap of one result of t in estimated tokens (0: none)
// and where it comes from, as a pointer to a capped result names it: the
// source's own cap when the user set one; else mcp.maxOutputTokens, raised
// by the tool's size hint up to MaxOutputTokensHint. A hint only raises: a
// server cannot make its results go to files sooner than the user's cap
// says, and the user keeps a server below its hint with the server's own
// cap.
func (l Limits) outputCap(t registry.Tool) (int, string) {
	if l.OutputDir == "" || t.Source == registry.SourceBuiltin {
		return 0, ""
	}
	s := l.Of(t.Source)
	if s.OwnOutputCap && s.MaxOutputTokens > 0 {
		return s.MaxOutputTokens, fmt.Sprintf("maxOutputTokens of server %q", t.Source)
	}
	hint := min(t.OutputTokensHint, MaxOutputTokensHint)
	if hint > s.MaxOutputTokens && s.MaxOutputTokens > 0 {
		if t.OutputTokensHint > MaxOutputTokensHint {
			return hint, fmt.Sprintf("the tool's _meta size hint, at most %d", MaxOutputTokensHint)
		}
		return hint, "the tool's _meta size hint"
	}
	return s.MaxOutputTokens, "mcp.maxOutputTokens"
}

// TimeoutOf is the bound of one call of a tool of source (0: none).
func (l Limits) TimeoutOf(source string) time.Duration {
	return l.Of(source).CallTimeout
}

func (l Limits) maxArgumentBytes() int {
	if l.MaxArgumentBytes > 0 {
		return l.MaxArgumentBytes
	}
	return DefaultMaxArgumentBytes
}

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

// Options configure New.
type Options struct {
	// Registry is where tools are looked up (required).
	Registry *registry.Registry
	// Rules returns the current permission rules; it is called once per Run,
	// so edits take effect for the next batch. nil means no rules.
	Rules func() Rules
	// Approver answers "ask" decisions; nil refuses every ask.
	Approver Approver
	// MaxParallel bounds how many read-only calls run at once (default 4).
	MaxParallel int
	// CallTimeout bounds each attempt of each call; 0 means no bound beyond
	// the ctx given to Run. It is used only when Limits is nil.
	CallTimeout time.Duration
	// Limits returns the current bounds of each call (argument size,
	// per-source call timeouts); it is called once per Run. nil means
	// Limits{Default: SourceLimits{CallTimeout: CallTimeout}}.
	Limits func() Limits
	// MaxValidations bounds how many argument validations run at once
	// across all batches (default 4); ValidateTimeout bounds one, its wait
	// for a turn included (default DefaultValidateTimeout).
	MaxValidations  int
	ValidateTimeout time.Duration
	// Report, when not nil, is told of every call of a Run once all of
	// them ended, in order, on Run's goroutine and with Run's ctx (which
	// carries who asked for the calls). It must not block: serve queues
	// an audit record and counts the call.
	Report func(ctx context.Context, r Report)
	Logger logr.Logger
	// Telemetry, if set and on, gives each call a span "execute_tool
	// {tool}" from its checks to its outcome, with child spans for the
	// validation, the approval's wait and the output cap, the server
	// request's span under it, and counts it (telemetry.ToolSpan). nil:
	// off.
	Telemetry *telemetry.Telemetry
}

// Report is what Options.Report is told of one call.
type Report struct {
	Call Call
	// Server is the tool's Source ("" when the tool is unknown).
	Server string
	// Decided says the rules were applied (not for arguments over the
	// size limit or an unknown tool); Decision is what they said.
	Decided  bool
	Decision Decision
	// Sensitive says the tool asked for approval whatever the rules say.
	Sensitive bool
	// Asked says the call was put to the Approver (or would have been,
	// with Approver nil: NoApprover); Approved that it said yes;
	// ApprovalErr is the Approver's error; AnsweredBy who answered, as the
	// Approver said with AnsweredBy.
	Asked       bool
	NoApprover  bool
	Approved    bool
	ApprovalErr error
	AnsweredBy  string
	Outcome     Outcome
}

// answererKey keys the *string an Approver's AnsweredBy fills.
type answererKey struct{}

// AnsweredBy lets an Approver say who answered the approval it was asked
// with ctx ("cli mcp approvals answer (pid 42)", "terminal"). It must be
// called before Approve returns, on its goroutine or one Approve waits
// for; with any other ctx it does nothing.
func AnsweredBy(ctx context.Context, who string) {
	if p, ok := ctx.Value(answererKey{}).(*string); ok {
		*p = who
	}
}

// Orchestrator runs batches of tool calls under the permission rules.
// It holds no per-batch state and is safe for concurrent use.
type Orchestrator struct {
	opts        Options
	validations chan struct{} // one token per validation running
}

// New returns an orchestrator. It panics if opts.Registry is nil, which is
// a programming error.
func New(opts Options) *Orchestrator {
	if opts.Registry == nil {
		panic("orchestrator.New: Options.Registry is nil")
	}
	if opts.MaxParallel < 1 {
		opts.MaxParallel = defaultMaxParallel
	}
	if opts.Rules == nil {
		opts.Rules = func() Rules { return Rules{} }
	}
	if opts.Limits == nil {
		l := Limits{Default: SourceLimits{CallTimeout: opts.CallTimeout}}
		opts.Limits = func() Limits { return l }
	}
	if opts.MaxValidations < 1 {
		opts.MaxValidations = defaultMaxValidations
	}
	if opts.ValidateTimeout <= 0 {
		opts.ValidateTimeout = DefaultValidateTimeout
	}
	return &Orchestrator{opts: opts, validations: make(chan struct{}, opts.MaxValidations)}
}

// Call is one tool call requested by the model.
type Call struct {
	ID   string          // the model's call id, echoed in the Outcome
	Tool string          // tool id
	Args json.RawMessage // arguments object; empty means {}
	// Timeout, when positive, bounds each attempt of this call in place of
	// the limits' timeout (SourceLimits.CallTimeout): a
	// caller that says how long it will wait, as `freecode mcp call
	// --timeout` does. Waiting for an approval does not count.
	Timeout time.Duration
	// Progress, when not nil, is given the call's progress reports (see
	// registry.Tool.Call: it must not block), of every attempt.
	Progress func(wire.Progress)
}

// Outcome is the result of one Call.
type Outcome struct {
	ID   string
	Tool string
	// Result is what to show the model. When Err is non-nil it is an
	// IsError result whose text is Err's message.
	Result wire.CallResult
	// Err is non-nil when the call did not complete: it wraps
	// ErrUnknownTool, ErrDenied, ErrNotApproved, ErrInvalidArgs,
	// ErrCallTimeout, ErrToolPanicked, ErrNotStarted, registry.ErrTransport, or
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
	tool     registry.Tool
	decision Decision
	// sensitive is Tool.Sensitive's reason: the call asks whatever the
	// decision says.
	sensitive string
	// approved: the Approver said yes.
	approved bool
	timeout  time.Duration // of each attempt; 0: none
	// outputDir, outputCap and capSource: see Limits.outputCap.
	outputDir string
	outputCap int
	capSource string
	// ctx is Run's ctx with the call's span, which the call's steps and
	// its Call run under; span is that span.
	ctx  context.Context
	span telemetry.ToolSpan
}

// asks reports whether the call must be put to the Approver.
func (p prepared) asks() bool { return p.decision.Action == Ask || p.sensitive != "" }

// reason says why the call is put to the Approver.
func (p prepared) reason() string {
	if p.sensitive != "" {
		return p.sensitive
	}
	return p.decision.Reason()
}

// Run executes calls and returns one Outcome per call, in the same order.
//
// Before anything runs, each call is checked: arguments larger than
// Limits.MaxArgumentBytes, an unknown tool, a call denied by the rules, or
// arguments that fail the tool's Validate (within ValidateTimeout, at most
// MaxValidations at once) produce an error outcome and the tool's Call is
// never invoked. A call the tool's Sensitive check flags asks, whatever the
// rules allow. The remaining calls are
// grouped: consecutive read-only calls form one group and run in parallel
// (at most MaxParallel at once); every other call is a group of its own and
// runs alone. Groups run strictly one after another, in batch order, so a
// batch [r1, r2, m1, r3] runs r1‖r2, then m1, then r3. Calls whose decision
// is "ask" are put to the Approver one at a time, in order, right before
// their group starts; a refusal is an error outcome.
//
// A read-only call whose error wraps registry.ErrTransport is retried once (if ctx
// and its own timeout still allow); nothing else is ever retried. Each
// attempt gets ctx bounded by the tool's call timeout (Limits). Once ctx
// ends, calls that have not started get ctx's error.
func (o *Orchestrator) Run(ctx context.Context, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	var reports []Report // nil: nobody is told
	if o.opts.Report != nil {
		reports = make([]Report, len(calls))
		defer func() {
			for i := range reports {
				reports[i].Call, reports[i].Outcome = calls[i], out[i]
				o.opts.Report(ctx, reports[i])
			}
		}()
	}
	policy, limits := NewPolicy(o.opts.Rules()), o.opts.Limits()
	var ready []prepared
	for i, c := range calls {
		out[i] = Outcome{ID: c.ID, Tool: c.Tool}
		cctx, span := o.startSpan(ctx, c)
		p, err := o.check(cctx, span, policy, limits, i, c, reportOf(reports, i))
		if err != nil {
			out[i].fail(err)
			span.End(errorType(ctx, err, nil), 0)
			o.opts.Logger.V(1).Info("tool call rejected", "call", c.ID, "tool", c.Tool, "reason", err.Error())
			continue
		}
		p.ctx, p.span = cctx, span
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
				p.span.End(errorType(ctx, out[p.idx].Err, nil), 0)
			}
			continue
		}
		group = o.approve(ctx, group, out, reports)
		o.runGroup(ctx, group, out)
	}
	return out
}

// reportOf is reports[i], or a Report nobody reads when reports is nil.
func reportOf(reports []Report, i int) *Report {
	if reports == nil {
		return &Report{}
	}
	return &reports[i]
}

// check bounds the arguments' size, looks the tool up, applies the rules,
// validates the arguments and asks the tool whether the call is sensitive;
// rep gets the server and the decision as they are known.
func (o *Orchestrator) check(ctx context.Context, span telemetry.ToolSpan, policy Policy, limits Limits, i int, c Call, rep *Report) (prepared, error) {
	if limit := limits.maxArgumentBytes(); len(c.Args) > limit {
		return prepared{}, callErr(ErrInvalidArgs, nil,
			"invalid arguments for %s: arguments of %s exceed the limit of %s (mcp.maxArgumentBytes); send less per call",
			c.Tool, byteSize(len(c.Args)), byteSize(limit))
	}
	t, ok := o.opts.Registry.Get(c.Tool)
	if !ok {
		return prepared{}, callErr(ErrUnknownTool, nil, "tool %q is not available", c.Tool)
	}
	d := policy.Decide(t)
	rep.Server, rep.Decided, rep.Decision = t.Source, true, d
	span.Decision(d.Action.String(), d.Rule)
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
		step := span.Step(ctx, "validate")
		err := o.validate(ctx, t, c.Tool, args)
		step.End(errorType(ctx, err, nil))
		if err != nil {
			return prepared{}, err
		}
	}
	c.Args = args
	p := prepared{idx: i, call: c, tool: t, decision: d, timeout: limits.TimeoutOf(t.Source),
		outputDir: limits.OutputDir}
	p.outputCap, p.capSource = limits.outputCap(t)
	if c.Timeout > 0 {
		p.timeout = c.Timeout
	}
	if t.Sensitive != nil {
		p.sensitive = t.Sensitive(args)
	}
	rep.Sensitive = p.sensitive != ""
	return p, nil
}

// validate runs t.Validate under the validation bounds: a free turn among
// MaxValidations, ValidateTimeout and ctx.
func (o *Orchestrator) validate(ctx context.Context, t registry.Tool, id string, args json.RawMessage) error {
	vctx, cancel := context.WithTimeoutCause(ctx, o.opts.ValidateTimeout, errValidateTimeout)
	defer cancel()
	var err error
	select {
	case o.validations <- struct{}{}:
		err = t.Validate(vctx, args)
		<-o.validations
	case <-vctx.Done():
		if ctx.Err() == nil {
			return callErr(ErrCallTimeout, context.Cause(vctx), "the arguments for %s found no free validation within %s (%d running, the limit); try again", id, o.opts.ValidateTimeout, o.opts.MaxValidations)
		}
		err = context.Cause(vctx)
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return callErr(ErrNotStarted, err, "call to %q was not started: %v", id, context.Cause(ctx))
	case errors.Is(err, errValidateTimeout):
		return callErr(ErrCallTimeout, err, "the arguments for %s were not validated within %s, the limit; send smaller arguments", id, o.opts.ValidateTimeout)
	}
	// Validators say "invalid arguments: <details>"; name the tool once.
	detail := strings.TrimPrefix(err.Error(), "invalid arguments: ")
	return callErr(ErrInvalidArgs, err, "invalid arguments for %s: %s", id, detail)
}

// byteSize writes n bytes for people: "512 bytes", "64 KiB", "2.6 MiB".
func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<10)), ".0") + " KiB"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MiB"
}

// approve asks the Approver about every "ask" call of group, in order, and
// returns the calls that may run; reports (when not nil) get the answers.
func (o *Orchestrator) approve(ctx context.Context, group []prepared, out []Outcome, reports []Report) []prepared {
	kept := group[:0:0]
	for _, p := range group {
		if !p.asks() {
			kept = append(kept, p)
			continue
		}
		rep := reportOf(reports, p.idx)
		rep.Asked = true
		if o.opts.Approver == nil {
			rep.NoApprover = true
			out[p.idx].fail(callErr(ErrNotApproved, nil, "tool %q needs approval (%s) but no approver is available", p.call.Tool, p.reason()))
			p.span.End(errorType(ctx, out[p.idx].Err, nil), 0)
			continue
		}
		var by string
		actx := context.WithValue(p.ctx, answererKey{}, &by)
		step := p.span.Step(p.ctx, "approval")
		ok, err := o.opts.Approver.Approve(actx, ApprovalRequest{
			CallID:    p.call.ID,
			ToolID:    p.call.Tool,
			Args:      p.call.Args,
			ReadOnly:  p.tool.ReadOnly,
			Reason:    p.reason(),
			Rule:      p.decision.Rule,
			Sensitive: p.sensitive != "",
		})
		rep.Approved, rep.ApprovalErr, rep.AnsweredBy = ok && err == nil, err, by
		step.End(errorType(ctx, err, nil), telemetry.KeyApproved.Bool(ok && err == nil))
		switch {
		case err != nil:
			out[p.idx].fail(callErr(ErrNotApproved, err, "approval for %q failed: %v", p.call.Tool, err))
		case !ok:
			out[p.idx].fail(callErr(ErrNotApproved, nil, "the call to %q was not approved", p.call.Tool))
		default:
			p.approved = true
			kept = append(kept, p)
		}
		if !p.approved {
			p.span.End(errorType(ctx, out[p.idx].Err, nil), 0)
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
	outer := ctx
	if p.ctx != nil {
		ctx = p.ctx // Run's, with the call's span
	}
	var (
		res wire.CallResult
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
			errors.Is(err, registry.ErrTransport) && ctx.Err() == nil
		o.opts.Logger.V(1).Info("tool call failed", "call", p.call.ID, "tool", p.call.Tool,
			"attempt", oc.Attempts, "retry", retry, "error", err.Error())
		if !retry {
			break
		}
	}
	oc.Duration = time.Since(start)
	if err != nil {
		oc.fail(err)
		p.span.End(errorType(outer, err, nil), oc.Attempts)
		return
	}
	if p.outputCap > 0 {
		step := p.span.Step(ctx, "output cap")
		var pruneErr error
		res, pruneErr = capOutput(p.outputDir, p.outputCap, p.capSource, p.call.Tool, res, time.Now())
		if pruneErr != nil {
			o.opts.Logger.Error(pruneErr, "pruning capped outputs", "dir", p.outputDir)
		}
		step.End("")
	}
	oc.Result = res
	p.span.End(errorType(outer, nil, &res), oc.Attempts)
	o.opts.Logger.V(1).Info("tool call done", "call", p.call.ID, "tool", p.call.Tool,
		"attempts", oc.Attempts, "duration", oc.Duration, "isError", res.IsError)
}

// attempt makes one call under its timeout, converting panics to errors.
func (o *Orchestrator) attempt(ctx context.Context, p prepared) (res wire.CallResult, err error, timedOut bool) {
	cctx := ctx
	if p.approved {
		cctx = registry.WithApproval(cctx)
	}
	if p.timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeoutCause(cctx, p.timeout, ErrCallTimeout)
		defer cancel()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				o.opts.Logger.Error(fmt.Errorf("%v", r), "tool panicked", "tool", p.call.Tool, "stack", string(debug.Stack()))
				err = callErr(ErrToolPanicked, nil, "tool %s failed internally: %v", p.call.Tool, r)
			}
		}()
		res, err = p.tool.Call(cctx, p.call.Args, p.call.Progress)
	}()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrCallTimeout) {
		return wire.CallResult{}, callErr(ErrCallTimeout, err, "tool %s did not finish within %s", p.call.Tool, p.timeout), true
	}
	if err != nil {
		return wire.CallResult{}, fmt.Errorf("tool %s: %w", p.call.Tool, err), false
	}
	return res, nil, false
}

// fail records err as the outcome's error and model-facing result.
func (oc *Outcome) fail(err error) {
	oc.Err = err
	oc.Result = wire.ErrorResult(err.Error())
}

// startSpan starts the span of call c under ctx (telemetry.StartTool),
// naming the server its tool comes from.
func (o *Orchestrator) startSpan(ctx context.Context, c Call) (context.Context, telemetry.ToolSpan) {
	tel := o.opts.Telemetry
	if !tel.On() {
		return ctx, telemetry.ToolSpan{}
	}
	tc := telemetry.ToolCall{Tool: c.Tool, CallID: c.ID}
	if t, ok := o.opts.Registry.Get(c.Tool); ok && t.Source != registry.SourceBuiltin {
		tc.Server = t.Source
	}
	return tel.StartTool(ctx, tc)
}

// errorType is error.type of a call's outcome: its error's kind, or
// telemetry.ErrorTool when its result says isError; "" when it went well.
func errorType(ctx context.Context, err error, res *wire.CallResult) string {
	switch {
	case err == nil && res != nil && res.IsError:
		return telemetry.ErrorTool
	case err == nil:
		return ""
	case errors.Is(err, ErrUnknownTool):
		return "unknown_tool"
	case errors.Is(err, ErrDenied):
		return "denied"
	case errors.Is(err, ErrNotApproved):
		return "not_approved"
	case errors.Is(err, ErrInvalidArgs):
		return "invalid_arguments"
	case errors.Is(err, ErrCallTimeout):
		return telemetry.ErrorTimeout
	case errors.Is(err, ErrToolPanicked):
		return "panic"
	case errors.Is(err, ErrNotStarted):
		return "not_started"
	case errors.Is(err, registry.ErrTransport):
		return telemetry.ErrorTransport
	}
	return telemetry.ErrorType(ctx, err)
}
