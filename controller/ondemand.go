package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// On-demand servers (schema.LifecycleOnDemand).
//
// An on-demand server whose manifest is stored (Options.Manifests, keyed
// by its spec hash) is advertised from it without running (advertise):
// its tools, resources and prompts go into the registry as a session's
// would, and it waits in wire.PhaseIdle. The tools, resources and prompts
// of an on-demand server — from a manifest or a session — call through a
// waker, not the session: each use takes the session (acquire), starting
// the server first if it has none, and counts as in use until it returns.
// A server with nothing in use (no call, read or prompt in flight, nobody
// waiting for it to start, no subscription) for its idle timeout is
// stopped (sleep) with its lists kept, and is idle again. A server
// without a manifest is started to learn it (its lists are stored once
// registered), and, being unused, sleeps at once.
//
// Since the lists of a session and of its manifest are the same objects,
// registering one over the other changes nothing in the registry: no
// tools_changed, no new definitions version. A server that comes back
// with other lists is a real change and announced as such.

// ErrWakeFailed: an on-demand server could not be started for a use; the
// error says why (the start's failure: exit, stderr, timeout).
var ErrWakeFailed = errors.New("server could not be started")

// waker is the caller of an on-demand server's tools, resources and
// prompts: every use goes through acquire.
type waker struct {
	c    *Controller
	name string
}

var (
	_ bridge.Caller        = waker{}
	_ bridge.FeatureSource = waker{}
)

func (w waker) CallTool(ctx context.Context, tool string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error) {
	conn, release, err := w.c.acquire(ctx, w.name, "call "+mcp.ToolID(w.name, tool))
	if err != nil {
		return nil, err
	}
	defer release()
	return conn.CallTool(ctx, tool, args, progress)
}

func (w waker) ReadResource(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
	conn, release, err := w.c.acquire(ctx, w.name, "read "+uri)
	if err != nil {
		return nil, err
	}
	defer release()
	fc, ok := conn.(featureConn)
	if !ok {
		return nil, fmt.Errorf("server %q: %w", w.name, mcp.ErrNotOffered)
	}
	return fc.ReadResource(ctx, uri)
}

func (w waker) GetPrompt(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
	conn, release, err := w.c.acquire(ctx, w.name, "prompt "+name)
	if err != nil {
		return wire.PromptResult{}, err
	}
	defer release()
	fc, ok := conn.(featureConn)
	if !ok {
		return wire.PromptResult{}, fmt.Errorf("server %q: %w", w.name, mcp.ErrNotOffered)
	}
	return fc.GetPrompt(ctx, name, args)
}

// acquire returns name's ready session for one use and the function that
// ends the use (call it once). A server with no session is started for it
// (one start, however many uses wait: each only says it waits) and
// waited for until it is ready, its start fails (an error wrapping
// ErrWakeFailed with the start's failure), or ctx ends. A server waiting
// in backoff fails at once with the failure it waits after. why says what
// the use is, for the server_waking event and the log.
func (c *Controller) acquire(ctx context.Context, name, why string) (Conn, func(), error) {
	c.mu.Lock()
	var mine *serverState // the state whose waiters count this use
	leave := func() {
		if mine != nil {
			mine.waiters--
			mine = nil
		}
	}
	for {
		st := c.servers[name]
		d, desired := c.desiredLocked(name)
		switch {
		case st == nil || !desired:
			leave()
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("server %q: %w", name, ErrUnknownServer)
		case d.Hold != nil || !d.Enabled:
			leave()
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("server %q: %w (phase %s)", name, ErrNotReady, st.phase)
		case st.conn != nil && st.phase == wire.PhaseReady && st.inst != nil && !st.inst.stopping:
			leave()
			st.inflight++
			st.usedAt = time.Now()
			conn := st.conn
			c.mu.Unlock()
			return conn, func() { c.release(st) }, nil
		case st.inst == nil && st.phase == wire.PhaseBackoff:
			leave()
			msg := st.lastErr
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("server %q: %w: %s (retried at %s)", name, ErrWakeFailed, msg, clockTime(st.nextRetry, time.Now()))
		case st.inst == nil && st.phase == wire.PhaseNeedsLogin:
			leave()
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("server %q: %w (phase %s): %s", name, ErrNotReady, st.phase, c.loginReason(name))
		}
		if mine != st {
			leave()
			mine = st
			st.waiters++
			st.usedAt = time.Now()
			if st.inst == nil && st.waiters == 1 {
				// The first use of a server that does not run: it wakes.
				c.publishWaking(name, why)
			}
		}
		ch := st.waitChangeLocked()
		c.mu.Unlock()
		c.trigger()
		select {
		case <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			leave()
			c.mu.Unlock()
			c.trigger()
			return nil, nil, fmt.Errorf("server %q: waiting for it to start: %w", name, context.Cause(ctx))
		}
		c.mu.Lock()
	}
}

// publishWaking publishes wire.ServerWaking and logs it; c.mu is held
// (pubMu keeps it before the phase changes of the start it causes).
func (c *Controller) publishWaking(name, why string) {
	c.log.Info("starting on-demand server for a use", "server", name, "use", why)
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	c.bus.Publish(wire.ServerWaking{Server: name, Reason: why})
}

// release ends one use of st's session (see acquire).
func (c *Controller) release(st *serverState) {
	c.mu.Lock()
	st.inflight--
	st.usedAt = time.Now()
	c.mu.Unlock()
	c.trigger() // its idle timer starts now
}

// waitChangeLocked returns a channel closed by st's next phase change;
// c.mu held.
func (st *serverState) waitChangeLocked() <-chan struct{} {
	if st.changed == nil {
		st.changed = make(chan struct{})
	}
	return st.changed
}

// inUseLocked reports whether st is in use (see acquire): it must not
// sleep. c.mu held.
func (st *serverState) inUseLocked() bool {
	return st.inflight > 0 || st.waiters > 0 || len(st.subs) > 0
}

// idleDeadline is when a ready on-demand server unused since usedAt
// sleeps.
func idleDeadline(usedAt time.Time, d schema.Server) time.Time {
	return usedAt.Add(d.IdleTimeout)
}

// advertise registers spec's manifest, if one is stored for its spec
// hash, and moves the server to wire.PhaseIdle; without one it starts
// the server, to learn it. Nothing is done if an owner appeared since the
// plan.
func (c *Controller) advertise(root context.Context, spec schema.Server) {
	name, hash := spec.Name, spec.SpecHash()
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.inst != nil {
		c.mu.Unlock()
		return
	}
	old := st.lastHash
	c.mu.Unlock()
	if old != "" && old != hash {
		c.manifests.Forget(old) // a manifest of what no longer runs
	}
	m, err := c.manifests.Get(name, hash)
	if err != nil {
		c.log.V(1).Info("no manifest of on-demand server; starting it to learn it", "server", name)
		c.start(root, spec)
		return
	}
	all, _ := c.schemas.ConvertTools(name, m.Tools)
	tools, _ := FilterTools(spec.Tools, all)
	f := m.Features()
	w := waker{c, name}
	changed, err := c.reg.ReplaceSourceQuiet(name, bridge.Tools(w, tools))
	if err != nil {
		c.log.Error(err, "advertising the manifest's tools; starting the server instead", "server", name)
		c.start(root, spec)
		return
	}
	change, ferr := c.reg.ReplaceFeatures(name, bridge.Features(w, f))
	if ferr != nil {
		c.log.Error(ferr, "advertising the manifest's resources and prompts", "server", name)
		change = c.reg.RemoveFeatures(name)
		f = mcp.Features{}
	}
	warnings, more := ToolWarnings(tools)
	c.mu.Lock()
	var evs []wire.PhaseChanged
	if st := c.servers[name]; st != nil && st.inst == nil {
		if st.lastHash != hash {
			st.lastHash, st.failures, st.budget = hash, 0, 0
		}
		st.toolsHash, st.filterKey, st.onDemandTools = hash, spec.Tools.Key(), true
		st.tools, st.toolsTotal = len(tools), len(all)
		st.resources, st.templates, st.prompts = len(f.Resources), len(f.Templates), len(f.Prompts)
		st.warnings, st.moreWarnings = warnings, more
		st.manifest, st.manifestAt = &m, m.Stored
		st.nextRetry, st.restartRequested = time.Time{}, false
		c.relistLocked(name)
		evs = st.setPhase(wire.PhaseIdle, evs)
	}
	c.unlockPublish(evs)
	if changed {
		c.reg.AnnounceTools(name)
	}
	c.announceFeatures(name, change)
	c.log.V(1).Info("on-demand server advertised from its manifest", "server", name, "tools", len(tools), "stored", m.Stored)
}

// sleep stops name's session because it has been unused for its idle
// timeout, keeping its lists: it is idle once stopped. It re-checks
// under the lock that nothing uses it.
func (c *Controller) sleep(name string, idle time.Duration, now time.Time) {
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.inst == nil || st.inst.stopping || st.phase != wire.PhaseReady || st.inUseLocked() ||
		now.Before(st.usedAt.Add(idle)) {
		c.mu.Unlock()
		return
	}
	st.inst.stopping, st.inst.keepTools, st.inst.sleep = true, true, true
	cancel, gen := st.inst.cancel, st.inst.gen
	evs := st.setPhase(wire.PhaseStopping, nil)
	c.unlockPublish(evs)
	c.log.Info("stopping idle on-demand server", "server", name, "generation", gen, "idleFor", idle)
	cancel()
}

// saveManifest stores what conn, gen's session of name, lists now as
// the manifest of its spec hash, unless that is what was last stored.
// Only gen's owner calls it, after registering.
func (c *Controller) saveManifest(name string, gen int64, conn Conn) {
	l, ok := conn.(mcp.Lister)
	if c.manifests == nil || !ok {
		return
	}
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.inst == nil || st.inst.gen != gen {
		c.mu.Unlock()
		return
	}
	hash, last := st.inst.hash, st.manifest
	c.mu.Unlock()
	m := mcp.ManifestOf(l, hash)
	if last != nil && last.SpecHash == hash && last.Same(m) {
		return
	}
	if err := c.manifests.Put(m); err != nil {
		c.log.Info("manifest not stored; an on-demand server is started to learn it", "server", name, "err", err.Error())
		return
	}
	c.mu.Lock()
	if st := c.servers[name]; st != nil && st.inst != nil && st.inst.gen == gen {
		st.manifest, st.manifestAt = &m, m.Stored
	}
	c.unlock()
}

// onDemand reports whether name is desired as an on-demand server.
func (c *Controller) onDemand(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.desiredLocked(name)
	return ok && d.OnDemand()
}

// advertisedFor reports whether name's registered lists are those of
// spec (an on-demand server's, of its spec hash): a start of it that
// fails keeps them, each use answering with the failure (acquire).
func (c *Controller) advertisedFor(name string, spec schema.Server) bool {
	if !spec.OnDemand() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	return st != nil && st.onDemandTools && st.toolsHash == spec.SpecHash()
}
