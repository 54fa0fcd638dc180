package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// DefaultProbeInterval is how often, at most, a remote server that cannot
// be reached is probed (Options.ProbeInterval): it is ready again within
// about this long of its endpoint's return, whatever the backoff.
const DefaultProbeInterval = time.Second

// Prober reports whether a remote server's endpoint answers again: nil if
// it does. It must be cheap — it runs up to once per ProbeInterval while
// the server is down — open no session and run no sign-in, and give up
// when ctx ends.
type Prober func(ctx context.Context, srv schema.Server) error

// MCPProber probes with mcp.Probe (one OPTIONS request), the spec built by
// MCPSpec.
func MCPProber(opts mcp.Options) Prober {
	return func(ctx context.Context, srv schema.Server) error {
		return mcp.Probe(ctx, MCPSpec(srv), opts)
	}
}

// outage is a remote server that cannot be reached: its session was lost,
// or its start failed, with an error wrapping mcp.ErrUnreachable. While
// it lasts the server waits in backoff as any failed server does, and is
// also probed (at most once per probe interval, one probe at a time): a
// probe that reaches the endpoint only says "look again", and the next
// plan starts the server at once. Its tools stay registered meanwhile
// (see holdTools). Every start replaces the outage with a copy whose
// probe state is fresh, so that a probe of an earlier round counts for
// nothing; a failure that does not wrap mcp.ErrUnreachable, a changed
// spec, a disable or a removal ends it.
type outage struct {
	since  time.Time // when the server was first found unreachable
	reason string    // the latest reason (mcp.UnreachableError.Reason)
	hash   string    // the spec hash it belongs to

	nextProbe time.Time // no probe starts before
	probing   bool      // a probe is in flight
	answered  bool      // a probe reached the endpoint since the last failed start
}

// fresh is o for a new round: same outage, no probe state.
func (o *outage) fresh() *outage {
	return &outage{since: o.since, reason: o.reason, hash: o.hash}
}

// unreachableReason is the short reason of an error that says a remote
// server cannot be reached, and whether it says so.
func unreachableReason(err error) (string, bool) {
	if !errors.Is(err, mcp.ErrUnreachable) {
		return "", false
	}
	var ue *mcp.UnreachableError
	if errors.As(err, &ue) && ue.Reason != "" {
		return ue.Reason, true
	}
	return "no connection", true
}

// noteFailureLocked updates st's outage for err, the failure that ends a
// run of spec, at now (nil: not a failure). c.mu held.
func (c *Controller) noteFailureLocked(st *serverState, spec schema.Server, err error, now time.Time) {
	reason, ok := unreachableReason(err)
	if !ok || spec.Type != schema.Remote {
		st.outage = nil
		return
	}
	hash := spec.SpecHash()
	if st.outage == nil || st.outage.hash != hash {
		st.outage = &outage{since: now, hash: hash}
	} else {
		st.outage = st.outage.fresh()
	}
	st.outage.reason = reason
	st.outage.nextProbe = now.Add(c.probeInterval)
}

// probeServer starts one probe of spec's server if it is still waiting in
// an outage with no probe in flight. The probe runs on its own goroutine
// (counted in c.owners, ended by root), bounded by the server's timeout,
// and triggers the loop when it is done.
func (c *Controller) probeServer(root context.Context, spec schema.Server) {
	c.mu.Lock()
	st := c.servers[spec.Name]
	if st == nil || st.inst != nil || st.phase != wire.PhaseBackoff || st.outage == nil || st.outage.probing || c.probeInterval <= 0 {
		c.mu.Unlock()
		return
	}
	o := st.outage
	o.probing = true
	o.nextProbe = time.Now().Add(c.probeInterval)
	c.owners.Add(1)
	c.mu.Unlock()

	go func() {
		defer c.owners.Done()
		ctx, cancel := context.WithTimeout(root, spec.Timeout)
		err := c.probe(ctx, spec)
		cancel()
		c.mu.Lock()
		current := c.servers[spec.Name] == st && st.outage == o
		if current {
			o.probing = false
			if err == nil {
				o.answered = true
			} else if reason, ok := unreachableReason(err); ok {
				o.reason = reason
			}
		}
		c.mu.Unlock()
		if current && err == nil {
			c.log.Info("endpoint answers again; reconnecting now", "server", spec.Name)
		} else if current {
			c.log.V(1).Info("probe: still unreachable", "server", spec.Name, "err", err.Error())
		}
		c.trigger()
	}()
}

// holdTools keeps name's registered tools (and resources and prompts:
// holdFeatures) through an outage: same
// definitions (so no ToolsChanged and the provider's prompt cache stays
// valid), but a call answers with the outage (outageError) instead of
// reaching a session that is gone. Only an owner calls it, before it
// reports its end, so no other owner registers tools meanwhile.
func (c *Controller) holdTools(name string) {
	tools := c.reg.SourceTools(name)
	if len(tools) == 0 {
		c.holdFeatures(name)
		return
	}
	call := func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		return wire.CallResult{}, c.outageError(name)
	}
	for i := range tools {
		tools[i].Call = call
	}
	changed, err := c.reg.ReplaceSourceQuiet(name, tools)
	if err != nil {
		c.log.Error(err, "keeping tools through an outage", "server", name)
		c.dropTools(name)
	} else {
		c.refresh(name)
		if changed {
			c.reg.AnnounceTools(name)
		}
	}
	c.holdFeatures(name)
}

// dropTools removes name's tools, resources and prompts from the registry.
func (c *Controller) dropTools(name string) {
	c.removeTools(name)
	c.dropFeatures(name)
}

// removeTools removes name's tools (only) from the registry.
func (c *Controller) removeTools(name string) {
	changed := c.reg.RemoveSourceQuiet(name)
	c.mu.Lock()
	if st := c.servers[name]; st != nil {
		st.toolsHash, st.filterKey = "", ""
	}
	c.relistLocked(name)
	c.unlock()
	if changed {
		c.reg.AnnounceTools(name) // once the snapshot has it
	}
}

// narrowTools removes from name's registered tools those filter hides,
// keeping the rest as they are (their calls included): the set of a
// server without a ready session, which can only narrow until a session
// registers anew. It records the filter as the set's.
func (c *Controller) narrowTools(name string, filter schema.ToolFilter) {
	c.mu.Lock()
	st := c.servers[name]
	if st == nil || st.toolsHash == "" || (st.inst != nil && st.phase == wire.PhaseReady) {
		c.mu.Unlock() // none kept, or a session registers them itself
		return
	}
	c.mu.Unlock()
	tools := c.reg.SourceTools(name)
	kept := tools[:0:0]
	for _, t := range tools {
		if _, hidden := filter.Hides(t.Name); !hidden {
			kept = append(kept, t)
		}
	}
	changed := false
	if len(kept) != len(tools) {
		var err error
		if changed, err = c.reg.ReplaceSourceQuiet(name, kept); err != nil {
			c.log.Error(err, "narrowing kept tools to the tools filter", "server", name)
			c.dropTools(name)
			return
		}
		c.log.Info("tools filter changed; kept tools it hides removed", "server", name, "removed", len(tools)-len(kept))
	}
	c.mu.Lock()
	if st := c.servers[name]; st != nil && st.toolsHash != "" {
		st.filterKey = filter.Key()
	}
	c.relistLocked(name)
	c.unlock()
	if changed {
		c.reg.AnnounceTools(name) // once the snapshot has it
	}
}

// OutageError is the answer to a call of a tool whose remote server
// cannot be reached now. It wraps registry.ErrTransport (the API answers
// 502), mcp.ErrTransport and mcp.ErrUnreachable.
type OutageError struct {
	Server string
	// Since is when the server was first found unreachable; Reason the
	// latest reason ("connection refused").
	Since  time.Time
	Reason string
	// Retry says when FreeCode tries again: "every second", "now", "at
	// 12:03:30".
	Retry string
}

func (e *OutageError) Error() string {
	return fmt.Sprintf("server %q is unreachable since %s (%s); FreeCode retries %s",
		e.Server, clockTime(e.Since, time.Now()), e.Reason, e.Retry)
}

func (e *OutageError) Unwrap() []error {
	return []error{registry.ErrTransport, mcp.ErrTransport, mcp.ErrUnreachable}
}

// outageError is the answer of a held tool of name, from the server's
// state now.
func (c *Controller) outageError(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	if st == nil || st.outage == nil {
		// Between an outage and the tools of the session that ended it.
		return fmt.Errorf("server %q is not connected; FreeCode is reconnecting: %w", name, registry.ErrTransport)
	}
	e := &OutageError{Server: name, Since: st.outage.since, Reason: st.outage.reason}
	switch {
	case st.inst != nil:
		e.Retry = "now"
	case c.probeInterval > 0:
		e.Retry = "every " + intervalWords(c.probeInterval)
	default:
		e.Retry = "at " + clockTime(st.nextRetry, time.Now())
	}
	return e
}

// intervalWords is d as "second" or "2s".
func intervalWords(d time.Duration) string {
	if d == time.Second {
		return "second"
	}
	return d.String()
}

// clockTime is t in local time, with the date when it is not now's day.
func clockTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}
