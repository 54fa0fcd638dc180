// Package controller keeps the running MCP servers in line with the
// configuration.
//
// It is level-triggered: every trigger — a new desired set (SetDesired), a
// server's session ending, a backoff timer, a restart request, the periodic
// resync — only says "look again". One loop goroutine (Start) then reads the
// desired set and each server's actual state afresh, lets the pure function
// plan decide what to do, and applies the result. Running it twice changes
// nothing.
//
// Each running server has one owner goroutine that holds its session: it
// connects, registers the session's tools with the registry (announcing
// ToolsChanged only when the set really changed), re-registers them after
// the session reports a changed tool set, and removes them when the
// session ends or is stopped. A session
// that fails to start or ends on its own is restarted after an exponential
// backoff with jitter (see Backoff). A remote server that cannot be reached
// is also probed cheaply while it waits, and started as soon as its
// endpoint answers; its tools stay registered meanwhile and answer with the
// outage (see outage). A remote server that needs a user to sign in
// (mcp.ErrNeedsLogin) is not retried on a timer: it waits in
// PhaseNeedsLogin, and the stored credentials (Options.SignIn) are one
// more input the loop reads afresh each time — once they differ from what
// was stored when it failed, it starts again.
//
// The read side is a Snapshot: every server's status and lists, immutable,
// swapped in under the lock after every change and before the change's
// events go out, and read without the lock. What stays a query of the
// Controller reads what is not its state: Status adds the stored
// sign-ins (Options.SignIn, files), Logs and WaitLogs read and wait on a
// session's log lines as they come.
//
// A server's identity is its name plus schema.Server.SpecHash: a changed
// hash restarts it, an unchanged one leaves it alone across any number of
// reloads. An invalid configuration (SetConfigError) tears nothing down: the
// last good desired set stays applied.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

var (
	// ErrUnknownServer: no server of that name is configured or known.
	ErrUnknownServer = errors.New("unknown server")
	// ErrDisabled: the server is configured with enabled: false.
	ErrDisabled = errors.New("server is disabled")
	// ErrHeld: the server is held back from running (an untrusted project
	// server, or a name both the user and the project define); the error
	// carries the hold's reason.
	ErrHeld = errors.New("server is held")
)

// Conn is a running session with one server; *mcp.Session satisfies it.
// Close must be idempotent and return once everything the session started
// has stopped; Done is closed when the session ended, for whatever reason,
// and Err then says why (nil after Close).
type Conn interface {
	Tools() []mcp.Tool
	ToolsChanged() <-chan struct{}
	Done() <-chan struct{}
	Err() error
	Close() error
	PID() int
	// LogAfter returns the session's log lines numbered above n (from 1,
	// in the order they came: a local server's stderr and the log messages
	// any server sends), the number of the last one, and a channel closed
	// by the next line, in one read.
	LogAfter(n int64) (lines []mcp.LogLine, last int64, next <-chan struct{})
	StderrTail() []string
	CallTool(ctx context.Context, name string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error)
}

// Dialer starts or reaches srv and returns its session once it is
// initialized and its tools are listed. It must give up within srv.Timeout
// — this attempt's budget, which can be longer than the configured timeout
// (see MaxStartTimeout) — and when ctx ends, leaving nothing running on
// failure. ctx carries the attempt (AttemptFrom): a dialer that starts a
// process reports its pid there as soon as it runs.
type Dialer func(ctx context.Context, srv schema.Server) (Conn, error)

// Attempt is what the controller tells a Dialer about one start, through
// the dial's context: callbacks only. The start's settings are the
// server's the Dialer is given: its Timeout is the budget of this start
// (the configured one, or longer after a start that ran out of time while
// working; see MaxStartTimeout).
type Attempt struct {
	// OnProcess, if set, takes the pid of a local server's process as soon
	// as it runs, before the handshake: the status shows it while the
	// server starts. It must not block.
	OnProcess func(pid int)
}

type attemptKey struct{}

// withAttempt returns ctx carrying a.
func withAttempt(ctx context.Context, a Attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// AttemptFrom returns the attempt ctx carries (the zero Attempt if none).
func AttemptFrom(ctx context.Context) Attempt {
	a, _ := ctx.Value(attemptKey{}).(Attempt)
	return a
}

// MCPDialer dials with mcp.Connect, the spec built by MCPSpec; the start
// may go on while the server works up to WorkingTimeout(srv.Timeout),
// which replaces opts', and the attempt's OnProcess is called after
// opts.OnProcess.
func MCPDialer(opts mcp.Options) Dialer {
	return func(ctx context.Context, srv schema.Server) (Conn, error) {
		o := opts
		o.WorkingTimeout = WorkingTimeout(srv.Timeout)
		a := AttemptFrom(ctx)
		if a.OnProcess != nil {
			o.OnProcess = func(pid int, exited <-chan struct{}) {
				if opts.OnProcess != nil {
					opts.OnProcess(pid, exited)
				}
				a.OnProcess(pid)
			}
		}
		s, err := mcp.Connect(ctx, MCPSpec(srv), o)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// MaxStartTimeout bounds how long a start may take while the server is
// still working. A start whose timeout runs out while the server is still
// working (it used CPU or wrote to stderr at the end) goes on, with its
// deadline moved to twice the time so far, up to this bound
// (WorkingTimeout, mcp.Options.WorkingTimeout): so a first `npx -y
// pkg`, which spends 10 to 20 s downloading, comes up in its first start,
// never killed mid-download. (Killing it then is what not to do: npm's npx
// can leave its install lock behind, which holds the next npx for a
// minute, or a half-installed package that then fails to load.)
//
// The next start of a server whose start ran out of time after it had
// been given longer begins with the budget that one reached, and with
// twice that (up to this bound) if it was still working at the end. A
// start that succeeds and a changed spec go back to the configured
// timeout. A configured timeout above the bound stays as it is.
const MaxStartTimeout = 2 * time.Minute

// WorkingTimeout is how long a start whose budget is timeout may go on
// while the server is still working (mcp.Options.WorkingTimeout, which
// MCPDialer sets from it): MaxStartTimeout, or timeout when that is
// longer. serve's starts and the one-shot commands' wait alike.
func WorkingTimeout(timeout time.Duration) time.Duration {
	return max(MaxStartTimeout, timeout)
}

// DefaultMaxParallelStarts is used when Options.MaxParallelStarts is below 1.
// Starting is mostly waiting for a child to initialize, so the bound is wide:
// at 8, fifty servers whose initialize takes 200 ms needed 7.3 times as long
// as one; at 64 they keep pace with raw clients all started at once
// (BENCHMARKS.md, scenario 2).
const DefaultMaxParallelStarts = 64

// Options configure a Controller.
type Options struct {
	// Registry receives every server's tools; it publishes ToolsChanged on
	// the bus it was made with. nil: a private registry without a bus.
	Registry *registry.Registry
	// Bus gets the controller's events (wire.PhaseChanged, wire.ConfigErrorChanged);
	// normally the bus the Registry publishes on. nil: no events.
	Bus *event.Bus
	// Dial connects a server; nil means MCPDialer with Logger.
	Dial Dialer
	// Logger gets one line per start, stop, failure and config error.
	Logger logr.Logger
	// MaxParallelStarts bounds how many servers connect at the same time
	// (DefaultMaxParallelStarts when below 1); the others wait in
	// PhasePending.
	MaxParallelStarts int
	// Backoff between restarts; zero fields take DefaultBackoff's values.
	Backoff Backoff
	// HoldReason phrases why a held server does not run, for
	// ServerStatus.Reason and Restart's error; nil means
	// (*schema.Hold).String, the facts alone.
	HoldReason func(*schema.Hold) string
	// SignIn reads a server's stored OAuth sign-in (nil for a server that
	// does not sign in), for wire.ServerStatus.SignIn and as an input of the
	// loop: a server in wire.PhaseNeedsLogin starts again, and a ready one is
	// asked to check its session (a ping, see own), when what it returns
	// changes (wire.SignIn.Version). It is called for remote servers that
	// sign in (schema.Server.SignsIn), never under the controller's lock,
	// from the loop, owners and Status at once; it must be cheap (a stat,
	// a small read). nil: no server has stored credentials.
	SignIn func(schema.Server) *wire.SignIn
	// LoginReason phrases what a server in wire.PhaseNeedsLogin waits for, for
	// ServerStatus.Reason; nil says "needs sign-in".
	LoginReason func(name string) string
	// Probe asks whether a remote server that cannot be reached answers
	// again; nil means MCPProber with Logger.
	Probe Prober
	// ProbeInterval is how often, at most, Probe runs for each remote
	// server waiting in backoff because it cannot be reached (its session
	// or start failed with mcp.ErrUnreachable); a probe that finds the
	// endpoint answering starts the server at once. 0 means
	// DefaultProbeInterval; a negative value turns probing off, leaving
	// the backoff alone to decide.
	ProbeInterval time.Duration
	// Manifests stores what each server lists after it connected, by spec
	// hash, and gives it back for on-demand servers (see ondemand.go).
	// nil: nothing is stored, and an on-demand server is started to be
	// listed whenever it is not running.
	Manifests *mcp.ManifestStore
	// Schemas shares prepared input schemas when a manifest's tools are
	// converted (normally the dialer's cache); nil shares nothing.
	Schemas *mcp.SchemaCache
	// Remedy, if set, says what to do about the failure err of server srv
	// (a variable it was not given, a timeout to raise), or returns "".
	// A non-empty remedy goes on its own line after the error in
	// ServerStatus.LastError (and LastFailure), and in the log.
	Remedy func(srv schema.Server, err error) string
}

// Controller reconciles the desired servers with the running ones. Its
// methods are safe for concurrent use; SetDesired, SetConfigError and
// Restart may be called before Start.
type Controller struct {
	reg     *registry.Registry
	bus     *event.Bus
	dial    Dialer
	log     logr.Logger
	backoff Backoff
	slots   chan struct{} // one token per connect in progress
	kick    chan struct{} // cap 1: "look again", coalesced
	started atomic.Bool
	owners  sync.WaitGroup // one per owner goroutine

	// pubMu keeps events in the order of the changes they report: it is
	// taken while mu is still held and released after publishing, so
	// publishing itself happens outside mu. Never take mu while holding it.
	pubMu sync.Mutex

	mu sync.Mutex // guards desired, pollInterval, configErr, servers and every *serverState in it
	// snap is the read side (Snapshot): every change under mu swaps in a
	// new one before mu is released (publishLocked), and so before the
	// events of the change are published.
	snap    atomic.Pointer[Snapshot]
	desired []schema.Server
	// desiredHash is the SpecHash of each desired server, by name, set
	// with desired: a snapshot, published on every change, does not hash
	// every server again.
	desiredHash  map[string]string
	pollInterval time.Duration
	configErr    string
	servers      map[string]*serverState

	// holdReason, signIn, loginReason and remedy are Options.HoldReason,
	// SignIn, LoginReason and Remedy; New sets them, nothing changes them.
	holdReason  func(*schema.Hold) string
	signIn      func(schema.Server) *wire.SignIn
	loginReason func(name string) string
	remedy      func(schema.Server, error) string
	// probe and probeInterval are Options.Probe and ProbeInterval with
	// the defaults applied (probeInterval 0: probing is off); read-only.
	probe         Prober
	probeInterval time.Duration
	// manifests and schemas are Options.Manifests and Schemas; read-only.
	manifests *mcp.ManifestStore
	schemas   *mcp.SchemaCache
}

// serverState is everything known about one server's actual state. All
// fields are guarded by Controller.mu.
type serverState struct {
	name  string
	phase wire.Phase
	since time.Time // of the last phase change
	// gen is bumped on every start; observedGen is the generation whose
	// outcome (ready or failed) the status reflects.
	gen, observedGen int64
	inst             *instance // the current owner goroutine; nil if none
	lastHash         string    // spec hash of inst, else of the last attempt
	restartRequested bool
	failures         int // consecutive failures, for the backoff
	nextRetry        time.Time
	starts           int
	crashes          int  // restarts that followed a failure
	reconnects       int  // starts that tried again to reach an unreachable remote server
	lastFailed       bool // the last generation ended in a failure
	// budget is the start timeout of the next attempt when it was grown
	// after a start that ran out of time while still working (see
	// MaxStartTimeout); 0 means the configured timeout. Ready and a new
	// spec reset it.
	budget     time.Duration
	lastErr    string // the failure it is in now (wire.ServerStatus.LastError)
	pid, tools int
	// resources, templates and prompts count what the session lists
	// beside tools (set with tools, cleared with them).
	resources, templates, prompts int
	// subs are the resource URIs serve is subscribed to (Subscribe); each
	// new session is asked for them again. Disabling or removing the
	// server ends them.
	subs       map[string]bool
	conn       Conn     // the connected session while inst has one
	tail       []string // log tail of the last session or failed start
	tailLast   int64    // the number of tail's last line (see logs.go)
	stderrTail []string // the stderr lines of tail
	// logGen is the generation whose stderr conn (else tail) holds; 0
	// none yet. logMoved, made by the first reader that needs it, is
	// closed when logGen or conn changes and when the server is forgotten.
	logGen   int64
	logMoved chan struct{}

	// lastFailure and lastFailureAt keep the most recent failure after the
	// server recovered (lastErr is cleared then).
	lastFailure   string
	lastFailureAt time.Time

	// credsSeen is the stored sign-in's version (wire.SignIn.Version) as
	// of the last outcome: read before the start that ended ready or in
	// PhaseNeedsLogin, or when a ready session was last asked to check.
	credsSeen string
	// outage is set while a remote server cannot be reached (see
	// outage); nil otherwise.
	outage *outage
	// toolsHash is the spec hash of the session whose tools are
	// registered for the server; "" when none are.
	toolsHash string
	// toolsTotal is how many tools the session lists before the tools
	// filter, set with tools; filterKey (kept while the tools are, see
	// toolsHash) is the schema.ToolFilter.Key of
	// the filter the registered tools went through.
	toolsTotal int
	filterKey  string

	// warnings and moreWarnings are ToolWarnings of the tools counted in
	// tools.
	warnings     []string
	moreWarnings int

	// lists is what the server has in the registry, for the snapshot;
	// replaced (relistLocked) after each change of it, never modified.
	lists *lists

	// changed, made by the first waiter that needs it (waitChangeLocked),
	// is closed by the next phase change and when the server is forgotten.
	changed chan struct{}
	// inflight counts the uses of the session through a waker (calls,
	// reads, prompts of an on-demand server) under way; waiters the uses
	// waiting for it to be ready; usedAt is when the last use began or
	// ended (see ondemand.go).
	inflight, waiters int
	usedAt            time.Time
	// onDemandTools: the registered tools call through a waker (they are
	// an on-demand server's); set with toolsHash.
	onDemandTools bool
	// lastRan is when the last session ended; manifest is the manifest
	// last stored or advertised of the server, manifestAt when it was
	// written.
	lastRan    time.Time
	manifest   *mcp.Manifest
	manifestAt time.Time
}

// instance is one owner goroutine's handle.
type instance struct {
	gen  int64
	spec schema.Server
	hash string // spec.SpecHash(), computed once at the start
	// timeout is this attempt's budget: spec.Timeout (with the default
	// applied), or longer (serverState.budget).
	timeout  time.Duration
	cancel   context.CancelFunc
	stopping bool // cancel was called: the owner is closing the session
	// keepTools: the stop is a restart; the tools stay registered.
	keepTools bool
	// verify (cap 1) asks the owner of a ready session to check that its
	// sign-in still holds.
	verify chan struct{}
	// refilter (cap 1) asks the owner of a ready session to register its
	// tools again, through the server's tools filter as now desired.
	refilter chan struct{}
	// sleep: the stop is an idle on-demand server's; it ends in
	// wire.PhaseIdle with its lists kept (keepTools is set too).
	sleep bool
}

// New returns a controller; Start runs it.
func New(opts Options) *Controller {
	if opts.Registry == nil {
		opts.Registry = registry.NewRegistry(nil)
	}
	if opts.Dial == nil {
		opts.Dial = MCPDialer(mcp.Options{Logger: opts.Logger})
	}
	if opts.MaxParallelStarts < 1 {
		opts.MaxParallelStarts = DefaultMaxParallelStarts
	}
	if opts.HoldReason == nil {
		opts.HoldReason = (*schema.Hold).String
	}
	if opts.SignIn == nil {
		opts.SignIn = func(schema.Server) *wire.SignIn { return nil }
	}
	if opts.LoginReason == nil {
		opts.LoginReason = func(string) string { return "needs sign-in" }
	}
	if opts.Probe == nil {
		opts.Probe = MCPProber(mcp.Options{Logger: opts.Logger})
	}
	switch {
	case opts.ProbeInterval == 0:
		opts.ProbeInterval = DefaultProbeInterval
	case opts.ProbeInterval < 0:
		opts.ProbeInterval = 0
	}
	c := &Controller{
		reg:           opts.Registry,
		bus:           opts.Bus,
		dial:          opts.Dial,
		log:           opts.Logger,
		backoff:       opts.Backoff.withDefaults(),
		slots:         make(chan struct{}, opts.MaxParallelStarts),
		kick:          make(chan struct{}, 1),
		pollInterval:  schema.DefaultPollInterval,
		servers:       make(map[string]*serverState),
		holdReason:    opts.HoldReason,
		signIn:        opts.SignIn,
		loginReason:   opts.LoginReason,
		remedy:        opts.Remedy,
		probe:         opts.Probe,
		probeInterval: opts.ProbeInterval,
		manifests:     opts.Manifests,
		schemas:       opts.Schemas,
	}
	c.mu.Lock()
	c.unlock() // the first snapshot: nothing desired yet
	return c
}

// trigger asks the loop to look again. It never blocks; triggers that
// arrive while one is pending are merged into it.
func (c *Controller) trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Recheck asks the loop to look again now, because something it reads
// may have changed (the token store behind Options.SignIn). It never
// blocks; the loop also looks again every poll interval anyway.
func (c *Controller) Recheck() { c.trigger() }

// Start runs the reconcile loop until ctx ends; then it stops every server,
// waits for all of them to be gone (processes reaped, tools removed from the
// registry) and returns nil. It can be called once.
func (c *Controller) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("controller: Start called twice")
	}
	root, cancelOwners := context.WithCancel(context.Background())
	defer cancelOwners()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := c.reconcile(root, time.Now())
		timer.Reset(time.Until(wake))
		select {
		case <-ctx.Done():
			c.shutdown(cancelOwners)
			return nil
		case <-c.kick:
		case <-timer.C:
		}
	}
}

// reconcile runs plan on a fresh snapshot and applies it. It returns when
// the loop must look again even without a trigger: the earliest NextRetry,
// or the periodic resync.
func (c *Controller) reconcile(root context.Context, now time.Time) time.Time {
	c.mu.Lock()
	desired := c.desired // replaced, never modified, by SetDesired
	actual := make(map[string]observed, len(c.servers))
	for name, st := range c.servers {
		actual[name] = st.observe(c.probeInterval > 0)
	}
	c.mu.Unlock()
	c.readCredentials(desired, actual)

	for _, a := range plan(desired, actual, now) {
		c.apply(root, a)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	wake := now.Add(c.pollInterval)
	for _, d := range desired {
		if st := c.servers[d.Name]; d.OnDemand() && st != nil && st.phase == wire.PhaseReady && !st.inUseLocked() {
			if at := idleDeadline(st.usedAt, d); at.After(now) && at.Before(wake) {
				wake = at
			}
		}
	}
	for _, st := range c.servers {
		if st.phase != wire.PhaseBackoff || st.inst != nil {
			continue
		}
		if st.nextRetry.After(now) && st.nextRetry.Before(wake) {
			wake = st.nextRetry
		}
		if o := st.outage; c.probeInterval > 0 && o != nil && !o.probing && o.nextProbe.After(now) && o.nextProbe.Before(wake) {
			wake = o.nextProbe
		}
	}
	return wake
}

// readCredentials fills in the stored sign-in of every server whose next
// step depends on it — one waiting in wire.PhaseNeedsLogin, one ready — outside
// the lock: Options.SignIn reads files.
func (c *Controller) readCredentials(desired []schema.Server, actual map[string]observed) {
	for _, d := range desired {
		a, ok := actual[d.Name]
		if !ok || !d.SignsIn() || (a.Phase != wire.PhaseNeedsLogin && a.Phase != wire.PhaseReady) {
			continue
		}
		a.Creds = c.signIn(d).Version()
		actual[d.Name] = a
	}
}

// credsVersion is the version of srv's stored sign-in ("" for a server
// that does not sign in).
func (c *Controller) credsVersion(srv schema.Server) string {
	if !srv.SignsIn() {
		return ""
	}
	return c.signIn(srv).Version()
}

// observe is what plan sees of st; probing says whether unreachable
// remote servers are probed.
func (st *serverState) observe(probing bool) observed {
	o := observed{Phase: st.phase, SpecHash: st.lastHash, NextRetry: st.nextRetry, RestartRequested: st.restartRequested,
		Creds: st.credsSeen, CredsSeen: st.credsSeen, Filter: st.filterKey, HasTools: st.toolsHash != "",
		OnDemandTools: st.onDemandTools, InUse: st.inUseLocked(), Waiting: st.waiters > 0, UsedAt: st.usedAt}
	if st.inst != nil {
		o.Running, o.Stopping = true, st.inst.stopping
	}
	if out := st.outage; probing && out != nil {
		o.Unreachable, o.NextProbe, o.Probing, o.Answered = true, out.nextProbe, out.probing, out.answered
	}
	return o
}

// apply carries out one action. Owners may have changed the state since the
// snapshot plan saw; each step re-checks under the lock and does nothing
// when it no longer fits — the trigger that change sent makes the loop look
// again.
func (c *Controller) apply(root context.Context, a action) {
	switch a.Kind {
	case actStart:
		c.start(root, a.Spec)
	case actStop:
		c.stop(a.Name, a.Reason, a.KeepTools)
	case actProbe:
		c.probeServer(root, a.Spec)
	case actAdvertise:
		c.advertise(root, a.Spec)
	case actSleep:
		c.sleep(a.Name, a.Spec.IdleTimeout, time.Now())
	case actDisable:
		c.dropTools(a.Name) // tools kept through a failed restart or an outage
		c.mu.Lock()
		var evs []wire.PhaseChanged
		if st := c.servers[a.Name]; st != nil && st.inst == nil {
			st.failures, st.nextRetry, st.restartRequested = 0, time.Time{}, false
			st.outage, st.subs = nil, nil
			if a.Phase == wire.PhaseDisabled {
				st.lastErr = "" // not the failure it is in: it is off (lastFailure keeps it)
			}
			evs = st.setPhase(a.Phase, evs)
		}
		c.unlockPublish(evs)
	case actVerify:
		c.mu.Lock()
		if st := c.servers[a.Name]; st != nil && st.inst != nil && !st.inst.stopping && st.phase == wire.PhaseReady {
			st.credsSeen = a.Creds
			select {
			case st.inst.verify <- struct{}{}:
			default: // a check is pending already
			}
		}
		c.mu.Unlock()
	case actNarrow:
		c.narrowTools(a.Name, a.Spec.Tools)
	case actRefilter:
		c.mu.Lock()
		if st := c.servers[a.Name]; st != nil && st.inst != nil && !st.inst.stopping && st.phase == wire.PhaseReady {
			select {
			case st.inst.refilter <- struct{}{}:
			default: // pending already; the owner reads the filter when it registers
			}
		}
		c.mu.Unlock()
	case actForget:
		c.dropTools(a.Name)
		c.mu.Lock()
		if st := c.servers[a.Name]; st != nil && st.inst == nil {
			st.logsMoved()
			if st.changed != nil {
				close(st.changed) // its waiters find it gone
				st.changed = nil
			}
			delete(c.servers, a.Name)
		}
		c.unlock()
	}
}

// setPhase moves st to p and appends the event to evs if that is a change.
func (st *serverState) setPhase(p wire.Phase, evs []wire.PhaseChanged) []wire.PhaseChanged {
	if st.phase == p {
		return evs
	}
	st.phase, st.since = p, time.Now()
	if st.changed != nil {
		close(st.changed) // waiters look again
		st.changed = nil
	}
	ev := wire.PhaseChanged{Server: st.name, Phase: p}
	switch p {
	case wire.PhaseBackoff:
		ev.Err, ev.NextRetry = st.lastErr, st.nextRetry
	case wire.PhaseNeedsLogin:
		ev.Err = st.lastErr
	}
	return append(evs, ev)
}

// unlock swaps in the snapshot of the state now and releases c.mu: every
// change under c.mu ends with it (or unlockPublish).
func (c *Controller) unlock() {
	c.publishLocked()
	c.mu.Unlock()
}

// unlockPublish swaps in the snapshot of the state now, releases c.mu and
// publishes evs in order (see pubMu).
func (c *Controller) unlockPublish(evs []wire.PhaseChanged) {
	c.publishLocked()
	if len(evs) == 0 {
		c.mu.Unlock()
		return
	}
	c.pubMu.Lock()
	c.mu.Unlock()
	for _, e := range evs {
		c.bus.Publish(e)
	}
	c.pubMu.Unlock()
}

// fail records msg as the failure the server is in now and as its most
// recent one.
func (st *serverState) fail(msg string, at time.Time) {
	st.lastErr, st.lastFailure, st.lastFailureAt = msg, msg, at
}

// shutdown stops every owner and waits for all of them.
func (c *Controller) shutdown(cancelOwners context.CancelFunc) {
	c.mu.Lock()
	names := make([]string, 0, len(c.servers))
	for name := range c.servers {
		names = append(names, name)
	}
	c.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		c.stop(name, "shutting down", false)
	}
	cancelOwners()
	c.owners.Wait()
	for _, name := range names {
		c.dropTools(name) // tools kept for servers waiting to restart
	}
	// Nothing retries any more.
	c.mu.Lock()
	var evs []wire.PhaseChanged
	for _, name := range slices.Sorted(maps.Keys(c.servers)) {
		st := c.servers[name]
		if st.phase == wire.PhaseBackoff || st.phase == wire.PhasePending {
			st.nextRetry, st.outage = time.Time{}, nil
			evs = st.setPhase(wire.PhaseStopped, evs)
		}
	}
	c.unlockPublish(evs)
}

// SetDesired makes servers (from a valid configuration) the desired set and
// triggers a reconcile. pollInterval is how often the loop looks again
// without a trigger (default schema.DefaultPollInterval). Passing the same
// set again changes nothing: servers whose SpecHash is unchanged are left
// running.
func (c *Controller) SetDesired(servers []schema.Server, pollInterval time.Duration) {
	if pollInterval <= 0 {
		pollInterval = schema.DefaultPollInterval
	}
	servers = slices.Clone(servers)
	hashes := make(map[string]string, len(servers))
	for _, s := range servers {
		if _, dup := hashes[s.Name]; !dup {
			hashes[s.Name] = s.SpecHash()
		}
	}
	c.mu.Lock()
	c.desired, c.desiredHash, c.pollInterval = servers, hashes, pollInterval
	var evs []wire.PhaseChanged
	for _, s := range servers {
		if c.servers[s.Name] != nil {
			continue
		}
		st := &serverState{name: s.Name, phase: wire.PhasePending, since: time.Now()}
		if held, ok := heldPhase(s); ok {
			st.phase = held
		}
		c.servers[s.Name] = st
		evs = append(evs, wire.PhaseChanged{Server: s.Name, Phase: st.phase})
	}
	c.unlockPublish(evs)
	c.trigger()
}

// SetConfigError records that the configuration on disk is invalid (err
// should name file:line:col); nil clears it. Nothing is stopped or started:
// the last desired set stays applied.
func (c *Controller) SetConfigError(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.mu.Lock()
	if c.configErr == msg {
		c.mu.Unlock()
		return
	}
	c.configErr = msg
	c.publishLocked()
	c.pubMu.Lock()
	c.mu.Unlock()
	c.bus.Publish(wire.ConfigErrorChanged{Err: msg})
	c.pubMu.Unlock()
	if err != nil {
		c.log.Error(err, "configuration is invalid; keeping the last valid one")
	} else {
		c.log.Info("configuration is valid again")
	}
}

// Restart stops the server if it runs and starts it again now, skipping any
// backoff wait and resetting the failure count. It returns an error wrapping
// ErrUnknownServer if no such server is configured, ErrHeld (with the
// reason) if it is held back from running, and ErrDisabled if it is
// disabled; none of these requests a restart.
func (c *Controller) Restart(name string) error {
	c.mu.Lock()
	defer c.unlock()
	d, ok := c.desiredLocked(name)
	st := c.servers[name]
	switch {
	case !ok || st == nil:
		return fmt.Errorf("restart %q: %w", name, ErrUnknownServer)
	case d.Hold != nil:
		return fmt.Errorf("restart %q: %w: %s", name, ErrHeld, c.holdReason(d.Hold))
	case !d.Enabled:
		return fmt.Errorf("restart %q: %w (enable it first)", name, ErrDisabled)
	}
	st.restartRequested, st.failures = true, 0
	st.usedAt = time.Now() // an on-demand server then runs for its idle timeout
	c.trigger()
	return nil
}

func (c *Controller) desiredLocked(name string) (schema.Server, bool) {
	for _, s := range c.desired {
		if s.Name == name {
			return s, true
		}
	}
	return schema.Server{}, false
}

// Status returns the status of every server (Snapshot), sorted by name,
// with the stored sign-in of each that signs in (Options.SignIn), read
// now: the token store is an input of the controller, not its state, so
// it stays a query of the controller and not of the snapshot.
func (c *Controller) Status() wire.Status {
	snap := c.Snapshot()
	out := snap.Status()
	for i := range out.Servers {
		if s := snap.servers[i].spec; s.SignsIn() {
			out.Servers[i].SignIn = ShownSignIn(s, out.Servers[i].Phase, c.signIn(s))
		}
	}
	return out
}

// ShownSignIn is si, the stored sign-in of srv (a server FreeCode would
// sign in to if it asked), unless nothing says the server uses OAuth:
// nothing is stored, it has no oauth object, and it has not asked for a
// sign-in (it is not in wire.PhaseNeedsLogin). A remote server that wants no
// authorization is then not shown as "not signed in".
func ShownSignIn(srv schema.Server, phase wire.Phase, si *wire.SignIn) *wire.SignIn {
	if si != nil && si.State == wire.SignInNone && srv.OAuth == nil && phase != wire.PhaseNeedsLogin {
		return nil
	}
	return si
}

// grownTimeout is the budget of the start after one with budget last ran
// out of time while still working: twice as long, at most MaxStartTimeout,
// and never less than configured.
func grownTimeout(last, configured time.Duration) time.Duration {
	return max(min(2*last, MaxStartTimeout), configured)
}

// ToolWarnings returns the warnings of tools for a ServerStatus: at most
// MaxServerWarnings of them, and how many more there are.
func ToolWarnings(tools []mcp.Tool) (warnings []string, more int) {
	for _, w := range mcp.ToolWarnings(tools) {
		if len(warnings) == wire.MaxServerWarnings {
			more++
			continue
		}
		warnings = append(warnings, w.String())
	}
	return warnings, more
}

// target is what a user recognizes a server by: its command line or URL,
// as written (schema.Server.Shown) so that expanded secrets stay out of
// status and logs.
func target(s schema.Server) string {
	if s.Shown != "" {
		return s.Shown
	}
	if s.Type == schema.Remote {
		return s.URL
	}
	return strings.Join(s.Command, " ")
}
