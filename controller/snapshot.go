package controller

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// Snapshot is the controller's read side: the status of every server and
// what each lists (tools, resources, templates, prompts, instructions),
// as of one moment. It is immutable: the controller builds a new one
// under its lock after every change of its state or of what its servers
// have in the registry, and swaps it in (Controller.Snapshot) before it
// publishes the events of that change, so a reader woken by an event
// reads the state after it. Reading one takes no lock of the controller.
//
// What a snapshot answers shares its slices with the snapshot: callers
// must not modify them.
type Snapshot struct {
	configErr string
	// servers are every desired server and every known one, sorted by
	// name; index is their position by name.
	servers []serverView
	index   map[string]int
}

// serverView is one server in a Snapshot.
type serverView struct {
	// status is the server's status but for what is read when asked:
	// SignIn (Controller.Status) and, while a session is connected, its
	// stderr tail (from live).
	status wire.ServerStatus
	spec   schema.Server // the desired spec; the zero Server if not desired
	live   Conn          // the connected session, nil if none
	lists  *lists
}

// lists is what one server has in the registry, as its session lists
// it, read under the controller's lock after each change of it
// (relistLocked). It is never modified once made.
type lists struct {
	tools        []wire.Tool
	toolWarnings []string
	hidden       []wire.HiddenTool
	resources    []wire.Resource
	templates    []wire.ResourceTemplate
	readable     bool // the server's session reads resources
	prompts      []wire.Prompt
	hasPrompts   bool // the server's session gets prompts
	subs         []string
	problems     []string // the session's warnings about its lists
}

// Snapshot returns the current snapshot; it never blocks.
func (c *Controller) Snapshot() *Snapshot { return c.snap.Load() }

// relistLocked reads what name has in the registry and its session's
// warnings about it into a new lists. c.mu is held: the registry's and
// the session's locks are taken under it.
func (c *Controller) relistLocked(name string) {
	st := c.servers[name]
	if st == nil {
		return
	}
	l := &lists{tools: []wire.Tool{}}
	for _, t := range c.reg.SourceTools(name) {
		n := t.Name
		if n == "" {
			n = t.ID
		}
		l.tools = append(l.tools, wire.Tool{ID: t.ID, Name: n, Title: t.Title, Description: t.Description,
			ReadOnly: t.ReadOnly, Annotations: t.Annotations, InputSchema: t.InputSchema, Raw: t.Raw})
	}
	if ce, ok := st.conn.(convertErrors); ok {
		for _, err := range ce.ConvertErrors() {
			l.toolWarnings = append(l.toolWarnings, err.Error())
		}
	}
	if st.conn != nil {
		d, _ := c.desiredLocked(name)
		kept, hidden := FilterTools(d.Tools, st.conn.Tools())
		for _, w := range mcp.ToolWarnings(kept) {
			l.toolWarnings = append(l.toolWarnings, w.String())
		}
		l.hidden = hidden
	}
	f, _ := c.reg.SourceFeatures(name)
	l.resources, l.templates, l.prompts = nonNil(f.Resources), nonNil(f.Templates), nonNil(f.Prompts)
	l.readable, l.hasPrompts = f.Read != nil, f.GetPrompt != nil
	l.problems = problems(st.conn)
	st.lists = l
}

// publishLocked builds the snapshot of the state now and swaps it in.
// c.mu is held, so snapshots are swapped in the order of the changes.
func (c *Controller) publishLocked() {
	s := &Snapshot{configErr: c.configErr, index: make(map[string]int, len(c.servers))}
	want := make(map[string]schema.Server, len(c.desired))
	names := make([]string, 0, len(c.servers))
	for _, d := range c.desired {
		if _, dup := want[d.Name]; !dup {
			want[d.Name] = d
			names = append(names, d.Name)
		}
	}
	for name := range c.servers {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	s.servers = make([]serverView, 0, len(names))
	for i, name := range names {
		s.index[name] = i
		s.servers = append(s.servers, c.viewLocked(name, want))
	}
	c.snap.Store(s)
}

// viewLocked is name's serverView; want are the desired servers by name.
// c.mu is held.
func (c *Controller) viewLocked(name string, want map[string]schema.Server) serverView {
	v := serverView{status: wire.ServerStatus{Name: name}, lists: &lists{}}
	ss := &v.status
	if d, ok := want[name]; ok {
		v.spec = d
		ss.Source = d.Source
		ss.Desired = wire.Desired{Enabled: d.Enabled, SpecHash: c.desiredHash[name], Type: string(d.Type), Target: target(d),
			ToolsFilter: d.Tools.Key()}
		if d.OnDemand() {
			ss.Desired.Lifecycle, ss.Desired.IdleTimeoutMS = string(d.Lifecycle), d.IdleTimeout.Milliseconds()
		}
		if d.Hold != nil {
			ss.Reason = c.holdReason(d.Hold)
		}
	}
	if st := c.servers[name]; st != nil {
		ss.Phase, ss.Since = st.phase, st.since
		ss.LastRunAt, ss.ManifestStoredAt = st.lastRan, st.manifestAt
		ss.Generation, ss.ObservedGeneration = st.gen, st.observedGen
		ss.PID, ss.Tools, ss.LastError, ss.NextRetry = st.pid, st.tools, st.lastErr, st.nextRetry
		if st.toolsTotal > st.tools {
			ss.ToolsTotal = st.toolsTotal
		}
		ss.Resources, ss.ResourceTemplates, ss.Prompts = st.resources, st.templates, st.prompts
		if cc, ok := st.conn.(completionConn); ok {
			ss.Completions = cc.Offers().Completions
		}
		if fc, ok := st.conn.(featureConn); ok {
			in := fc.Instructions()
			ss.Instructions, ss.InstructionsCut = in.Text, in.Cut
			if in.Cut {
				ss.InstructionsBytes = in.Bytes
			}
		} else if st.conn == nil && st.onDemandTools && st.manifest != nil {
			// An on-demand server not running says what its manifest
			// does, so sleep and wake change nothing a host is given.
			ss.Completions, ss.Instructions = st.manifest.Offers.Completions, st.manifest.Instructions
		}
		// st.warnings and st.stderrTail are replaced, never modified:
		// shared.
		ss.Warnings, ss.MoreWarnings = st.warnings, st.moreWarnings
		ss.LastFailure, ss.LastFailureAt = st.lastFailure, st.lastFailureAt
		ss.Restarts, ss.Crashes, ss.Reconnects = max(st.starts-1-st.reconnects, 0), st.crashes, st.reconnects
		if st.outage != nil && st.phase == wire.PhaseBackoff {
			ss.UnreachableSince = st.outage.since
		}
		if st.inst != nil {
			ss.SpecHash = st.inst.hash
		}
		switch {
		case st.inst != nil && st.conn == nil && st.inst.timeout > st.inst.spec.Timeout:
			ss.StartTimeoutMS = st.inst.timeout.Milliseconds() // starting
		case st.inst == nil && st.budget > 0:
			ss.StartTimeoutMS = st.budget.Milliseconds() // the next start's
		}
		if st.conn != nil {
			v.live = st.conn
		} else {
			ss.StderrTail = st.stderrTail
		}
		if st.lists != nil {
			v.lists = st.lists
		}
		if len(st.subs) > 0 {
			// Subscriptions change apart from the registry: a lists of
			// its own, sharing the rest.
			l := *v.lists
			l.subs = slices.Sorted(maps.Keys(st.subs))
			v.lists = &l
		}
	} else {
		ss.Phase = wire.PhasePending
	}
	if ss.Phase == wire.PhaseNeedsLogin && ss.Reason == "" {
		ss.Reason = c.loginReason(name)
	}
	return v
}

// server is the view of name, or an error wrapping ErrUnknownServer.
func (s *Snapshot) server(name string) (*serverView, error) {
	i, ok := s.index[name]
	if !ok {
		return nil, fmt.Errorf("server %q: %w", name, ErrUnknownServer)
	}
	return &s.servers[i], nil
}

// Status returns the status of every server, sorted by name, without
// the stored sign-ins (see Controller.Status); a connected session's
// stderr tail is read from it now.
func (s *Snapshot) Status() wire.Status {
	out := wire.Status{ConfigError: s.configErr, ObservedAt: time.Now(), Servers: make([]wire.ServerStatus, 0, len(s.servers))}
	for _, v := range s.servers {
		ss := v.status
		if v.live != nil {
			ss.StderrTail = v.live.StderrTail()
		}
		out.Servers = append(out.Servers, ss)
	}
	return out
}

// Tools returns the tools server name has in the registry, sorted by id,
// with its phase and, while a session is connected, why tools of its list
// were left out and which of them its tools filter hides (Hidden). It
// returns an error wrapping ErrUnknownServer for a name that is neither
// configured nor known.
func (s *Snapshot) Tools(name string) (wire.ServerTools, error) {
	v, err := s.server(name)
	if err != nil {
		return wire.ServerTools{}, err
	}
	return v.tools(), nil
}

func (v *serverView) tools() wire.ServerTools {
	l := v.lists
	return wire.ServerTools{Server: v.status.Name, Phase: v.status.Phase, Tools: nonNil(l.tools), Warnings: l.toolWarnings,
		Hidden: l.hidden}
}

// Resources returns the resources and templates server name has in the
// registry, with its phase and subscriptions; an error wrapping
// ErrUnknownServer for a name that is neither configured nor known.
func (s *Snapshot) Resources(name string) (wire.ServerResources, error) {
	v, err := s.server(name)
	if err != nil {
		return wire.ServerResources{}, err
	}
	return v.resources(), nil
}

func (v *serverView) resources() wire.ServerResources {
	l := v.lists
	return wire.ServerResources{Server: v.status.Name, Phase: v.status.Phase, Resources: nonNil(l.resources),
		Templates: nonNil(l.templates), Subscriptions: l.subs, Warnings: l.problems}
}

// AllResources returns the resources of every server that can be read
// (its session declared resources), sorted by name.
func (s *Snapshot) AllResources() wire.Resources {
	out := wire.Resources{Servers: []wire.ServerResources{}}
	for i := range s.servers {
		if v := &s.servers[i]; v.lists.readable {
			out.Servers = append(out.Servers, v.resources())
		}
	}
	return out
}

// Prompts returns the prompts server name has in the registry, with its
// phase; an error wrapping ErrUnknownServer for an unknown name.
func (s *Snapshot) Prompts(name string) (wire.ServerPrompts, error) {
	v, err := s.server(name)
	if err != nil {
		return wire.ServerPrompts{}, err
	}
	return v.prompts(), nil
}

func (v *serverView) prompts() wire.ServerPrompts {
	l := v.lists
	return wire.ServerPrompts{Server: v.status.Name, Phase: v.status.Phase, Prompts: nonNil(l.prompts), Warnings: l.problems}
}

// AllPrompts returns the prompts of every server that offers them, sorted
// by name.
func (s *Snapshot) AllPrompts() wire.Prompts {
	out := wire.Prompts{Servers: []wire.ServerPrompts{}}
	for i := range s.servers {
		if v := &s.servers[i]; v.lists.hasPrompts {
			out.Servers = append(out.Servers, v.prompts())
		}
	}
	return out
}

// Lists returns everything the servers list: every server's tools (as
// Tools, Hidden included), AllResources, AllPrompts and the instructions.
func (s *Snapshot) Lists() wire.Lists {
	out := wire.Lists{Tools: make([]wire.ServerTools, 0, len(s.servers)), Resources: s.AllResources(), Prompts: s.AllPrompts()}
	for i := range s.servers {
		v := &s.servers[i]
		out.Tools = append(out.Tools, v.tools())
		if in := v.status.Instructions; in != "" {
			if out.Instructions == nil {
				out.Instructions = map[string]string{}
			}
			out.Instructions[v.status.Name] = in
		}
		if v.status.Completions {
			out.Completions = append(out.Completions, v.status.Name)
		}
	}
	return out
}
