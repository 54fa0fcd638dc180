package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// ErrNotReady: the request needs the server's running session, and it has
// none (it is starting, in backoff, stopped); the error says its phase.
var ErrNotReady = errors.New("server is not ready")

// featureConn is what a Conn that lists resources and prompts offers;
// *mcp.Session implements it. A Conn without it has none.
type featureConn interface {
	bridge.FeatureSource
	Features() mcp.Features
	FeaturesChanged() <-chan struct{}
	Instructions() mcp.Instructions
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
	ResourceUpdates() <-chan struct{}
	TakeResourceUpdates() []string
}

// completionConn is what a Conn that may complete arguments offers;
// *mcp.Session implements it. Offers says whether its server declared
// completions.
type completionConn interface {
	Offers() mcp.Offers
	Complete(ctx context.Context, ref wire.CompletionRef, arg wire.CompletionArgument, given map[string]string) (wire.Completion, error)
}

// featuresChanged is conn's FeaturesChanged, or nil (never ready).
func featuresChanged(conn Conn) <-chan struct{} {
	if fc, ok := conn.(featureConn); ok {
		return fc.FeaturesChanged()
	}
	return nil
}

// resourceUpdates is conn's ResourceUpdates, or nil (never ready).
func resourceUpdates(conn Conn) <-chan struct{} {
	if fc, ok := conn.(featureConn); ok {
		return fc.ResourceUpdates()
	}
	return nil
}

// registerFeatures makes the session's current resources, templates and
// prompts the registry's for name, like register does for tools, and
// announces what really changed (wire.ResourcesChanged,
// PromptsChanged). A refused set is logged and leaves the server
// without them.
func (c *Controller) registerFeatures(name string, gen int64, conn Conn) {
	fc, ok := conn.(featureConn)
	if !ok {
		return
	}
	f := fc.Features()
	var src bridge.FeatureSource = fc
	c.mu.Lock()
	if d, ok := c.desiredLocked(name); ok && d.OnDemand() {
		src = waker{c, name} // each read and prompt counts as a use
	}
	c.mu.Unlock()
	change, err := c.reg.ReplaceFeatures(name, bridge.Features(src, f))
	if err != nil {
		c.log.Error(err, "registering resources and prompts", "server", name)
		change = c.reg.RemoveFeatures(name)
		f = mcp.Features{}
	}
	c.mu.Lock()
	if st := c.servers[name]; st != nil && st.gen == gen {
		st.resources, st.templates, st.prompts = len(f.Resources), len(f.Templates), len(f.Prompts)
	}
	c.relistLocked(name)
	c.unlock()
	c.announceFeatures(name, change)
}

// announceFeatures publishes the events of change.
func (c *Controller) announceFeatures(name string, change registry.FeaturesChange) {
	if change.Resources {
		c.bus.Publish(wire.ResourcesChanged{Source: name})
	}
	if change.Prompts {
		c.bus.Publish(wire.PromptsChanged{Source: name})
	}
}

// dropFeatures removes name's resources and prompts from the registry.
func (c *Controller) dropFeatures(name string) {
	change := c.reg.RemoveFeatures(name)
	c.refresh(name)
	c.announceFeatures(name, change)
}

// refresh swaps in a snapshot with what name has in the registry now.
// Whatever changes that calls it before announcing the change.
func (c *Controller) refresh(name string) {
	c.mu.Lock()
	c.relistLocked(name)
	c.unlock()
}

// holdFeatures keeps name's registered resources and prompts through an
// outage, as holdTools keeps its tools: same lists, but a read or get
// answers with the outage.
func (c *Controller) holdFeatures(name string) {
	f, ok := c.reg.SourceFeatures(name)
	if !ok {
		return
	}
	if f.Read != nil {
		f.Read = func(context.Context, string) ([]wire.ResourceContent, error) { return nil, c.outageError(name) }
	}
	if f.GetPrompt != nil {
		f.GetPrompt = func(context.Context, string, map[string]string) (wire.PromptResult, error) {
			return wire.PromptResult{}, c.outageError(name)
		}
	}
	if _, err := c.reg.ReplaceFeatures(name, f); err != nil {
		c.log.Error(err, "keeping resources and prompts through an outage", "server", name)
		c.dropFeatures(name)
		return
	}
	c.refresh(name)
}

// resubscribe asks a new session of name for the subscriptions serve
// holds for the server; one the session cannot take (the server no longer
// offers subscriptions, or refuses the URI) is dropped and logged. Only
// the owner goroutine calls it, bounded by the server's timeout.
func (c *Controller) resubscribe(ctx context.Context, name string, gen int64, conn Conn, timeout time.Duration) {
	fc, ok := conn.(featureConn)
	c.mu.Lock()
	st := c.servers[name]
	var uris []string
	if st != nil && st.gen == gen {
		uris = slices.Sorted(maps.Keys(st.subs))
	}
	c.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, uri := range uris {
		var err error
		if ok {
			err = fc.Subscribe(ctx, uri)
		} else {
			err = fmt.Errorf("server %q: %w", name, mcp.ErrNotOffered)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return // stopping, or out of time: the next session tries again
		}
		c.log.Error(err, "subscribing again after a restart failed; the subscription is dropped", "server", name, "uri", uri)
		c.mu.Lock()
		if st := c.servers[name]; st != nil {
			delete(st.subs, uri)
		}
		c.unlock()
	}
}

// publishUpdates announces the updates conn reported of subscribed
// resources (wire.ResourceUpdated).
func (c *Controller) publishUpdates(name string, conn Conn) {
	fc, ok := conn.(featureConn)
	if !ok {
		return
	}
	for _, uri := range fc.TakeResourceUpdates() {
		c.bus.Publish(wire.ResourceUpdated{Server: name, URI: uri})
	}
}

// serverFeatures returns name's phase and the connected session (nil if
// none), or an error wrapping ErrUnknownServer.
func (c *Controller) serverFeatures(name string) (wire.Phase, Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	_, desired := c.desiredLocked(name)
	switch {
	case st != nil:
		return st.phase, st.conn, nil
	case desired:
		return wire.PhasePending, nil, nil
	}
	return "", nil, fmt.Errorf("server %q: %w", name, ErrUnknownServer)
}

// problems are the session's warnings about its lists.
func problems(conn Conn) []string {
	if fc, ok := conn.(featureConn); ok {
		return fc.Features().Problems
	}
	return nil
}

// notServing is the error of request, one for name's resources or prompts
// (what), that the registry cannot route: the server is unknown, not
// ready, or its session does not offer them (said as the session says it).
func (c *Controller) notServing(name, what, request string, err error) error {
	if !errors.Is(err, registry.ErrUnknownSource) {
		return err
	}
	phase, conn, uerr := c.serverFeatures(name)
	switch {
	case uerr != nil:
		return uerr
	case conn == nil:
		return fmt.Errorf("server %q: %w (phase %s), so its %s cannot be reached; see `freecode mcp status`", name, ErrNotReady, phase, what)
	}
	return notOfferedError(fmt.Sprintf("server %q offers no %s (its initialize result does not declare them), so %s is not sent", name, what, request))
}

// notOfferedError is a request for what a server does not offer, worded
// as the session words it; it wraps mcp.ErrNotOffered.
type notOfferedError string

func (e notOfferedError) Error() string { return string(e) }
func (e notOfferedError) Unwrap() error { return mcp.ErrNotOffered }

// ReadResource reads uri of server name through the registry (its
// session, or the outage or end that keeps it from one). Errors wrap
// ErrUnknownServer, ErrNotReady, mcp.ErrNotOffered, or are the read's own.
func (c *Controller) ReadResource(ctx context.Context, name, uri string) (wire.ResourceRead, error) {
	got, err := c.reg.ReadResource(ctx, name, uri)
	if err != nil {
		return wire.ResourceRead{}, c.notServing(name, "resources", fmt.Sprintf("resources/read %q", uri), err)
	}
	return wire.ResourceRead{Server: name, URI: uri, Contents: nonNil(got)}, nil
}

// GetPrompt gets prompt of server name with args through the registry,
// as ReadResource reads.
func (c *Controller) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (wire.PromptResult, error) {
	res, err := c.reg.GetPrompt(ctx, name, prompt, args)
	if err != nil {
		return wire.PromptResult{}, c.notServing(name, "prompts", fmt.Sprintf("prompts/get %q", prompt), err)
	}
	res.Server, res.Prompt, res.Messages = name, prompt, nonNil(res.Messages)
	return res, nil
}

// nonNil is s, or an empty slice for nil: the answers' lists are [] in
// JSON, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Subscribe subscribes serve to updates of uri of server name (on=true) or
// ends that (on=false). A subscription is serve's, for every client: it
// lasts until unsubscribed, across restarts of the server (each new
// session is asked again), and ends with the server's removal or
// disabling; updates are published as wire.ResourceUpdated. The server
// must be ready and offer subscriptions (else ErrNotReady,
// mcp.ErrNotOffered); at most mcp.MaxSubscriptions per server.
func (c *Controller) Subscribe(ctx context.Context, name, uri string, on bool) error {
	phase, conn, err := c.serverFeatures(name)
	if err != nil {
		return err
	}
	if conn == nil && on && c.onDemand(name) {
		// The subscription keeps it running: it wakes for it.
		var release func()
		if conn, release, err = c.acquire(ctx, name, "subscribe "+uri); err != nil {
			return err
		}
		defer release()
	}
	if conn == nil {
		return fmt.Errorf("server %q: %w (phase %s); subscribe once it is ready", name, ErrNotReady, phase)
	}
	fc, ok := conn.(featureConn)
	if !ok {
		return fmt.Errorf("server %q offers no resource subscriptions: %w", name, mcp.ErrNotOffered)
	}
	if on {
		err = fc.Subscribe(ctx, uri)
	} else {
		err = fc.Unsubscribe(ctx, uri)
	}
	if err != nil && on {
		return err
	}
	c.mu.Lock()
	var now Conn // the session since, if a new one came up meanwhile
	if st := c.servers[name]; st != nil {
		if on {
			if st.subs == nil {
				st.subs = map[string]bool{}
			}
			st.subs[uri] = true
		} else {
			delete(st.subs, uri)
		}
		if st.conn != conn {
			now = st.conn
		}
	}
	c.unlock()
	if fc, ok := now.(featureConn); ok && on {
		// Its owner may have asked for the subscriptions before this one
		// was recorded.
		return fc.Subscribe(ctx, uri)
	}
	return err
}

// Complete asks server name's session for the values of an argument
// (mcp.Session.Complete). The server must be ready (else ErrNotReady) and
// declare completions (else mcp.ErrNotOffered); errors wrap
// ErrUnknownServer, or are the session's own.
func (c *Controller) Complete(ctx context.Context, name string, req wire.CompletionRequest) (wire.Completion, error) {
	if c.onDemand(name) {
		if c.idleWithoutCompletions(name) {
			// Its manifest says it offers none: waking it to be told
			// so would start a process for nothing.
			return wire.Completion{}, notOfferedError(fmt.Sprintf("server %q offers no completions (its stored manifest declares none; it was not started to ask)", name))
		}
		// A use like a call: an idle server is woken for it, and kept
		// awake until it is answered.
		conn, release, err := c.acquire(ctx, name, "complete an argument")
		if err != nil {
			return wire.Completion{}, err
		}
		defer release()
		return complete(ctx, name, conn, req)
	}
	phase, conn, err := c.serverFeatures(name)
	if err != nil {
		return wire.Completion{}, err
	}
	if conn == nil {
		return wire.Completion{}, fmt.Errorf("server %q: %w (phase %s), so it cannot complete arguments; see `freecode mcp status`", name, ErrNotReady, phase)
	}
	return complete(ctx, name, conn, req)
}

// idleWithoutCompletions reports whether on-demand server name is not
// running and its manifest, which its lists are advertised from, declares
// no completions.
func (c *Controller) idleWithoutCompletions(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	return st != nil && st.conn == nil && st.onDemandTools && st.manifest != nil && !st.manifest.Offers.Completions
}

// complete asks conn, name's session, for req's completion.
func complete(ctx context.Context, name string, conn Conn, req wire.CompletionRequest) (wire.Completion, error) {
	cc, ok := conn.(completionConn)
	if !ok {
		return wire.Completion{}, notOfferedError(fmt.Sprintf("server %q offers no completions", name))
	}
	res, err := cc.Complete(ctx, req.Ref, req.Argument, req.Context)
	if err != nil {
		return wire.Completion{}, err
	}
	res.Server = name
	return res, nil
}
