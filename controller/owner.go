package controller

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// errSessionEnded stands in for a session that ended on its own without
// saying why.
var errSessionEnded = errors.New("session ended")

// start launches the owner goroutine of a new generation for spec.
func (c *Controller) start(root context.Context, spec schema.Server) {
	c.mu.Lock()
	st := c.servers[spec.Name]
	if st == nil {
		st = &serverState{name: spec.Name, phase: wire.PhasePending, since: time.Now()}
		c.servers[spec.Name] = st
	}
	if st.inst != nil {
		c.mu.Unlock() // an owner appeared since the snapshot; look again later
		return
	}
	ctx, cancel := context.WithCancel(root)
	st.gen++
	st.starts++
	hash := spec.SpecHash()
	switch {
	case st.starts == 1:
	case st.outage != nil && st.outage.hash == hash && !st.restartRequested:
		// Trying again to reach an endpoint that was not there.
		st.reconnects++
	case st.lastFailed:
		st.crashes++
	}
	st.lastFailed = false
	var stale string // the manifest of what no longer runs
	if hash != st.lastHash {
		stale = st.lastHash
		// A new spec starts a new failure count, with its own timeout.
		st.lastHash, st.failures, st.budget = hash, 0, 0
	}
	timeout := max(spec.Timeout, st.budget)
	st.inst = &instance{gen: st.gen, spec: spec, hash: hash, timeout: timeout, cancel: cancel, verify: make(chan struct{}, 1),
		refilter: make(chan struct{}, 1)}
	if st.outage != nil {
		// A probe still in flight speaks of the round before this start.
		st.outage = st.outage.fresh()
		if st.outage.hash != st.lastHash {
			st.outage = nil
		}
	}
	st.restartRequested = false
	st.nextRetry = time.Time{}
	evs := st.setPhase(wire.PhasePending, nil)
	gen, verify, refilter := st.gen, st.inst.verify, st.inst.refilter
	c.owners.Add(1)
	c.unlockPublish(evs)
	if stale != "" {
		c.manifests.Forget(stale)
	}
	go c.own(ctx, gen, spec, timeout, verify, refilter)
}

// stop tells the owner of name to stop; it returns at once. The owner
// closes the session, removes the tools (unless keepTools: the server is
// about to start again) and reports wire.PhaseStopped.
func (c *Controller) stop(name, reason string, keepTools bool) {
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.inst == nil || st.inst.stopping {
		c.mu.Unlock()
		return
	}
	st.inst.stopping, st.inst.keepTools = true, keepTools
	cancel, gen := st.inst.cancel, st.inst.gen
	evs := st.setPhase(wire.PhaseStopping, nil)
	c.unlockPublish(evs)
	c.log.Info("stopping server", "server", name, "generation", gen, "reason", reason)
	cancel()
}

// own is the owner goroutine of one generation of one server: the only
// goroutine that touches its session. It returns once the session is
// closed, after reporting how it ended (ended).
//
// Tools outlive a session that is expected back — one that crashed (it is
// restarted after backoff) or is restarted on request or for a changed
// spec — so that a server returning with the same tools changes nothing in
// the registry: no ToolsChanged, no new DefsCache version, no broken prompt
// cache. Resources and prompts go with the tools, every step of the way:
// whatever keeps, holds or drops the tools does the same to them. Until then a call of one of them fails with the session's end
// error. If the next start fails, the tools are removed; they are removed
// at once when the server is removed, disabled, held or shut down.
//
// A remote server that cannot be reached (an error wrapping
// mcp.ErrUnreachable: its connection was lost, or a start found no one
// there) keeps its tools for as long as that lasts and its spec is
// unchanged, each call answering with an *OutageError (see holdTools); a
// start that fails for another reason removes them as above.
//
// The dial gets spec with Timeout set to timeout, this attempt's budget;
// spec itself, and so its hash, stays as configured.
//
// The stored sign-in is read before connecting, so that a sign-in that
// lands while a start fails for want of one is a change the loop sees. A
// signal on verify (the stored sign-in of a ready server changed) pings
// the session: one whose sign-in is gone then ends with
// mcp.ErrNeedsLogin, as any request of it would.
func (c *Controller) own(ctx context.Context, gen int64, spec schema.Server, timeout time.Duration, verify, refilter <-chan struct{}) {
	defer c.owners.Done()
	name := spec.Name
	log := c.log.WithValues("server", name, "generation", gen)

	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		c.ended(name, gen, nil, nil, time.Time{})
		return
	}
	c.transition(name, gen, wire.PhaseStarting)
	if timeout > spec.Timeout {
		log.Info("connecting with a longer timeout: the last start needed longer", "timeout", timeout)
	}
	log.V(1).Info("connecting", "target", target(spec))
	creds := c.credsVersion(spec)
	dialSpec := spec
	dialSpec.Timeout = timeout
	dctx := withAttempt(ctx, Attempt{OnProcess: func(pid int) { c.processStarted(name, gen, pid) }})
	conn, err := c.dial(dctx, dialSpec)
	<-c.slots
	c.sawCreds(name, gen, creds)
	err = c.sawRefusal(name, gen, spec, err)
	if err != nil {
		if ctx.Err() != nil {
			err = nil // stopped while connecting: not a failure
		}
		switch {
		case c.keepingTools(name, gen):
		case c.outageHoldsTools(name, spec, err):
			c.holdTools(name)
		case c.advertisedFor(name, spec):
			// An on-demand server stays advertised through a failed wake.
		default:
			// The server did not come back: drop tools kept from before.
			c.dropTools(name)
		}
		c.ended(name, gen, err, withError(stderrOf(err), spec, err), time.Time{})
		return
	}
	if !c.adopt(ctx, name, gen, conn) {
		// Superseded while connecting: this result is stale.
		_ = conn.Close()
		c.ended(name, gen, nil, tailOf(conn), time.Time{})
		return
	}
	// Subscriptions first: a server is ready once it has them again, so
	// an update made right after ready is not lost to a subscription
	// still being restored.
	c.resubscribe(ctx, name, gen, conn, timeout)
	readyAt := time.Now()
	c.register(name, gen, conn)
	c.saveManifest(name, gen, conn)
	c.transition(name, gen, wire.PhaseReady)
	c.trigger() // an on-demand server's idle timer starts now
	log.Info("server ready", "pid", conn.PID(), "tools", len(conn.Tools()))

	for {
		select {
		case <-ctx.Done():
			// Tools go first, so nothing new is routed to a closing session.
			if !c.keepingTools(name, gen) {
				c.dropTools(name)
			}
			if err := conn.Close(); err != nil {
				log.Error(err, "closing session")
			}
			c.ended(name, gen, nil, tailOf(conn), readyAt)
			return
		case <-conn.Done():
			// Kept for the restart after backoff (see above).
			err := conn.Err()
			_ = conn.Close() // already ended; releases what is left
			if ctx.Err() != nil {
				err = nil
			} else if err == nil {
				err = errSessionEnded
			}
			err = c.sawRefusal(name, gen, spec, err)
			if c.outageHoldsTools(name, spec, err) {
				c.holdTools(name)
			}
			c.ended(name, gen, err, withError(tailOf(conn), spec, err), readyAt)
			return
		case <-conn.ToolsChanged():
			c.register(name, gen, conn)
			c.saveManifest(name, gen, conn)
		case <-featuresChanged(conn):
			c.registerFeatures(name, gen, conn)
			c.saveManifest(name, gen, conn)
		case <-resourceUpdates(conn):
			c.publishUpdates(name, conn)
		case <-verify:
			c.verify(ctx, log, spec, conn)
		case <-refilter:
			log.Info("tools filter changed; registering the tools again")
			c.register(name, gen, conn)
		}
	}
}

// pinger is a session that can be asked whether it is still usable;
// *mcp.Session is one.
type pinger interface {
	Ping(ctx context.Context) error
}

// verify pings conn within the server's timeout, to find out whether its
// sign-in still holds. A session whose sign-in is gone ends by itself
// (its Done follows); any other failure is left to the session's own
// detection of a lost connection.
func (c *Controller) verify(ctx context.Context, log logr.Logger, spec schema.Server, conn Conn) {
	p, ok := conn.(pinger)
	if !ok {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	if err := p.Ping(pctx); err != nil && !errors.Is(err, mcp.ErrNeedsLogin) {
		log.V(1).Info("checking the session after its stored sign-in changed", "err", err.Error())
	}
}

// sawRefusal handles err, how gen's start or session failed, and returns
// the failure the loop is to act on. If it needs a sign-in, the engine may
// have written to the store just now (a refusal it recorded, or a forced
// renewal after a 401), a change the loop must not take for a new
// sign-in: so the store is read again and its version recorded. If the
// store still says signed in — the server refused a token the store holds
// as good (a renewal it just made, or a sign-in that landed meanwhile) —
// waiting in wire.PhaseNeedsLogin would be wrong both ways, so the failure is
// returned as a *refusedSignInError: retried after backoff like any other,
// which tries a sign-in that landed and bounds the renewals of a token the
// server keeps refusing.
func (c *Controller) sawRefusal(name string, gen int64, spec schema.Server, err error) error {
	if !errors.Is(err, mcp.ErrNeedsLogin) || !spec.SignsIn() {
		return err
	}
	si := c.signIn(spec)
	c.sawCreds(name, gen, si.Version())
	if si != nil && si.State == wire.SignInSignedIn {
		return &refusedSignInError{Err: err}
	}
	return err
}

// refusedSignInError is a failure for want of a sign-in (Err wraps
// mcp.ErrNeedsLogin) of a server whose stored sign-in still reads as good
// after it. It does not unwrap: the server is in wire.PhaseBackoff, not
// PhaseNeedsLogin.
type refusedSignInError struct{ Err error }

func (e *refusedSignInError) Error() string { return e.Err.Error() }

// sawCreds records creds, the stored sign-in's version read before gen's
// start, as the one its outcome goes with.
func (c *Controller) sawCreds(name string, gen int64, creds string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.servers[name]; st != nil && st.inst != nil && st.inst.gen == gen {
		st.credsSeen = creds
	}
}

// outageHoldsTools reports whether err, the failure of a run of spec,
// keeps name's registered tools as an outage's (see holdTools): spec is a
// remote server's, err says it cannot be reached, and the tools are those
// of a session of this same spec.
func (c *Controller) outageHoldsTools(name string, spec schema.Server, err error) bool {
	if _, ok := unreachableReason(err); !ok || spec.Type != schema.Remote {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	return st != nil && st.toolsHash != "" && st.toolsHash == spec.SpecHash()
}

// processStarted records the pid of gen's process, which runs but is not ready
// yet, if gen is still current.
func (c *Controller) processStarted(name string, gen int64, pid int) {
	c.mu.Lock()
	defer c.unlock()
	if st := c.servers[name]; st != nil && st.inst != nil && st.inst.gen == gen {
		st.pid = pid
	}
}

// keepingTools reports whether gen is being stopped to start again.
func (c *Controller) keepingTools(name string, gen int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	return st != nil && st.inst != nil && st.inst.gen == gen && st.inst.stopping && st.inst.keepTools
}

// adopt records conn as gen's session, unless gen is no longer current or
// is being stopped.
func (c *Controller) adopt(ctx context.Context, name string, gen int64, conn Conn) bool {
	c.mu.Lock()
	defer c.unlock()
	st := c.servers[name]
	if st == nil || st.inst == nil || st.inst.gen != gen || st.inst.stopping || ctx.Err() != nil {
		return false
	}
	st.conn, st.pid, st.observedGen = conn, conn.PID(), gen
	st.lastErr = "" // recovered; lastFailure keeps it
	st.outage = nil
	st.budget = 0 // the configured timeout is enough again
	st.logGen = gen
	st.logsMoved()
	c.relistLocked(name) // the session's warnings
	return true
}

// register makes the session's current tools that the server's tools
// filter keeps (as desired now) the registry's set for name, and its
// resources and prompts too (registerFeatures). Only gen's owner calls
// it, so the filter it reads is applied in order. A rejected tool
// set (an id already taken by another source) leaves the server running
// without tools and shows the error in its status until a later set is
// accepted.
func (c *Controller) register(name string, gen int64, conn Conn) {
	defer c.registerFeatures(name, gen, conn)
	c.mu.Lock()
	d, ok := c.desiredLocked(name)
	c.mu.Unlock()
	if !ok || d.Hold != nil {
		// Being stopped (no longer desired, or held): no filter to apply,
		// so nothing new is registered; the stop removes what is.
		return
	}
	filter := d.Tools
	all := conn.Tools()
	tools, _ := FilterTools(filter, all)
	n := len(tools)
	var caller bridge.Caller = conn
	if d.OnDemand() {
		caller = waker{c, name} // each call counts as a use (see ondemand.go)
	}
	changed, err := c.reg.ReplaceSourceQuiet(name, bridge.Tools(caller, tools))
	if err != nil {
		c.log.Error(err, "registering tools", "server", name)
		c.removeTools(name)
		c.mu.Lock()
		if st := c.servers[name]; st != nil && st.gen == gen {
			st.fail(err.Error(), time.Now())
		}
		c.unlock()
		n = 0
	}
	var warnings []string
	var more int
	if err == nil {
		warnings, more = ToolWarnings(tools)
	}
	c.mu.Lock()
	if d, ok := c.desiredLocked(name); ok && d.Tools.Key() != filter.Key() {
		// The filter changed while this set was registered: look again
		// (the plan asks for the set anew).
		defer c.trigger()
	}
	if st := c.servers[name]; st != nil && st.gen == gen {
		total := len(all)
		if err != nil {
			total = 0 // nothing registered: no "N of M"
		}
		st.tools, st.toolsTotal, st.filterKey = n, total, filter.Key()
		st.warnings, st.moreWarnings = warnings, more
		if err == nil {
			st.lastErr = "" // an earlier refused set is replaced
			if st.inst != nil {
				st.toolsHash, st.onDemandTools = st.inst.hash, d.OnDemand()
			}
		}
	}
	c.relistLocked(name)
	c.unlock()
	if changed {
		c.reg.AnnounceTools(name) // once the snapshot has them
	}
}

// transition moves name to p if gen is still its current generation.
func (c *Controller) transition(name string, gen int64, p wire.Phase) {
	c.mu.Lock()
	var evs []wire.PhaseChanged
	if st := c.servers[name]; st != nil && st.inst != nil && st.inst.gen == gen && !st.inst.stopping {
		evs = st.setPhase(p, evs)
	}
	c.unlockPublish(evs)
}

// ended records that gen's owner is done: stopped on request (err nil) or
// failed (err non-nil: backoff). readyAt is when the session became ready
// (zero if it never did); a run of at least StableAfter resets the failure
// count. It triggers the loop, which decides what comes next.
func (c *Controller) ended(name string, gen int64, err error, tail *stderrTail, readyAt time.Time) {
	now := time.Now()
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.inst == nil || st.inst.gen != gen {
		c.mu.Unlock()
		return
	}
	inst := st.inst
	inst.cancel()
	c.noteFailureLocked(st, inst.spec, err, now)
	if st.conn != nil {
		st.lastRan = now
	}
	// An idle server keeps advertising what it has registered.
	counts := [...]int{st.tools, st.toolsTotal, st.resources, st.templates, st.prompts}
	// filterKey stays: it is the registered tools', which may be kept.
	st.inst, st.conn, st.pid, st.tools, st.toolsTotal = nil, nil, 0, 0, 0
	st.resources, st.templates, st.prompts = 0, 0, 0
	st.warnings, st.moreWarnings = nil, 0
	if tail != nil {
		st.keepTail(gen, tail)
	}
	c.relistLocked(name) // no session: none of its warnings
	var evs []wire.PhaseChanged
	var delay time.Duration
	var remedy string
	needsLogin := errors.Is(err, mcp.ErrNeedsLogin)
	switch {
	case err == nil && inst.sleep:
		st.tools, st.toolsTotal, st.resources, st.templates, st.prompts = counts[0], counts[1], counts[2], counts[3], counts[4]
		evs = st.setPhase(wire.PhaseIdle, evs)
	case err == nil:
		evs = st.setPhase(wire.PhaseStopped, evs)
	case needsLogin:
		// No timer: a sign-in (a change of the stored credentials, see
		// plan), a changed spec or a restart request starts it again.
		st.observedGen = gen
		st.fail(err.Error(), now)
		st.nextRetry = time.Time{}
		evs = st.setPhase(wire.PhaseNeedsLogin, evs)
	default:
		st.observedGen = gen
		st.lastFailed = true
		// A start that needed longer than configured begins the next one
		// with what it reached; other failures keep the budget (see
		// MaxStartTimeout).
		var te *mcp.StartTimeoutError
		if errors.As(err, &te) {
			configured := inst.spec.Timeout
			reached := max(te.Timeout, inst.timeout)
			switch {
			case te.Progress != "":
				st.budget = grownTimeout(reached, configured)
			case reached > configured:
				st.budget = reached
			}
		}
		msg := err.Error()
		if c.remedy != nil {
			if remedy = c.remedy(inst.spec, err); remedy != "" {
				msg += "\n" + remedy
			}
		}
		st.fail(msg, now)
		if !readyAt.IsZero() && now.Sub(readyAt) >= c.backoff.StableAfter {
			st.failures = 0
		}
		st.failures++
		delay = c.backoff.delay(st.failures, rand.Float64())
		st.nextRetry = now.Add(delay)
		evs = st.setPhase(wire.PhaseBackoff, evs)
	}
	probing := st.outage != nil && c.probeInterval > 0
	budget := st.budget
	c.unlockPublish(evs)
	switch {
	case needsLogin:
		c.log.Info("server needs sign-in; waiting for it", "server", name, "generation", gen, "err", err.Error())
	case err != nil:
		kv := []any{"server", name, "generation", gen, "retryIn", delay}
		if probing {
			kv = append(kv, "probeEvery", c.probeInterval)
		}
		if budget > 0 {
			kv = append(kv, "nextTimeout", budget)
		}
		if remedy != "" {
			kv = append(kv, "hint", remedy)
		}
		c.log.Error(err, "server failed; retrying after backoff", kv...)
	default:
		c.log.V(1).Info("server stopped", "server", name, "generation", gen)
	}
	c.trigger()
}

// stderrOf returns the stderr tail carried by a failed start's error,
// numbered from 1 (nil if it carries none).
func stderrOf(err error) *stderrTail {
	var lines []string
	var ee *mcp.ExitError
	var te *mcp.StartTimeoutError
	switch {
	case errors.As(err, &ee):
		lines = ee.Stderr
	case errors.As(err, &te):
		lines = te.Stderr
	}
	if lines == nil {
		return nil
	}
	return &stderrTail{lines: lines, last: int64(len(lines)), stderr: lines}
}

// withError adds err, why a remote server's start or session failed, to
// the end of tail as a line of its log: a remote server has no stderr, so
// without it `freecode mcp logs` of a server that cannot connect would
// show nothing. A local server's log is left as it is (its stderr, and
// the status, say why).
func withError(tail *stderrTail, spec schema.Server, err error) *stderrTail {
	if err == nil || spec.Type != schema.Remote {
		return tail
	}
	if tail == nil {
		tail = &stderrTail{}
	}
	line := "freecode: " + err.Error()
	return &stderrTail{lines: append(slices.Clone(tail.lines), line), last: tail.last + 1, stderr: tail.stderr}
}
