package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

// engine is the part of api.Engine the gateway goes through: serve.Core
// in this process, api.Client for a running serve, or switching from the
// one to the other. Whichever it is, the gateway lists its definitions
// joined with each server's tools, calls through it with a call id of its
// own, and follows its events: a call's progress is passed to its host,
// a call's approval and the elicitation of a server its calls wait on are
// put to the host and answered through it.
type engine interface {
	api.StatusReader
	api.ListReader
	api.ToolReader
	api.Caller
	api.FeatureReader
	api.Approver
	api.ElicitationAnswerer
	api.EventSource
}

// settler is implemented by an engine that starts servers of its own
// (serve.Core): Settled waits, until ctx ends at the latest, for their
// first starts, so that the host's first list holds their tools. An
// engine without it has its servers running already.
type settler interface {
	Settled(ctx context.Context) bool
}

// settle waits for e's first starts, if it has any (see settler).
func settle(ctx context.Context, e any) {
	if s, ok := e.(settler); ok {
		s.Settled(ctx)
	}
}

// hostCall is a call of a host in flight, by its call id.
type hostCall struct {
	ctx      context.Context // the host's call: AskHost reaches its host
	server   string          // the MCP server called ("" for a built-in)
	progress func(wire.Progress)
	// relayed counts the progress events passed to progress; lossy says
	// events may have been missed (so some may never come); answered that
	// the call's answer is on its way (no progress is passed on after
	// it). wake is signalled after each change. Guarded by mu, which is
	// held while progress runs (progress must not block).
	mu       sync.Mutex
	relayed  int
	lossy    bool
	answered bool
	wake     chan struct{}
	// noHost is set when the call's approval was refused because the host
	// cannot be asked; guarded by gateway.mu.
	noHost *needsRuleError
}

// list returns the definitions and, by tool id, the tools they join,
// and the resources, templates, prompts and instructions: the
// definitions (in the JSON Schema dialect) from the engine's Tools, the
// rest of each tool (title, annotations, ...) and the features from its
// Lists. Two requests, whatever the number of servers. Only relist calls
// it, one at a time, as meta requires.
func (g *gateway) list(ctx context.Context) ([]defs.Def, map[string]wire.Tool, features, error) {
	tl, err := g.eng.Tools(ctx, string(defs.DialectJSONSchema))
	if err != nil {
		return nil, nil, features{}, fmt.Errorf("list the tools: %w", err)
	}
	ls, err := g.eng.Lists(ctx)
	if err != nil {
		return nil, nil, features{}, fmt.Errorf("list the tools: %w", err)
	}
	// Every server's registered tools are listed, whatever its phase: a
	// server that crashed keeps its tools registered (its status counts
	// none) until it is back, and they must keep their metadata
	// meanwhile.
	fresh := map[string]wire.Tool{}
	var own []wire.Tool // the fronted server's, with --server
	for _, ts := range ls.Tools {
		for _, t := range ts.Tools {
			fresh[t.ID] = t
			if g.opts.Server != "" && ts.Server == g.opts.Server {
				own = append(own, t)
			}
		}
	}
	tools := make(map[string]wire.Tool, len(tl.Tools))
	listed := make([]defs.Def, 0, len(tl.Tools))
	for _, d := range tl.Tools {
		// A definition whose tool the lists do not have keeps its last
		// known metadata (its server went away between the two reads).
		// An MCP tool with none is one the registry has and the lists
		// do not have yet: the controller announces it (tools_changed)
		// once they do, and it is listed then, whole, rather than now
		// without its title and annotations and again with them.
		t, ok := fresh[d.Name]
		if !ok {
			t, ok = g.meta[d.Name]
		}
		if ok {
			tools[d.Name] = t
		} else if strings.HasPrefix(d.Name, mcpPrefix) {
			continue
		}
		listed = append(listed, d)
	}
	// A gateway fronting one server lists all its tools: deferral over the
	// tool budget, whose tool_search this gateway does not offer, would
	// hide them from its host for good. A deferred tool's definition is
	// its converted schema and description as the server's list has them.
	for _, t := range own {
		if _, ok := tools[t.ID]; !ok {
			listed = append(listed, defs.Def{Name: t.ID, Description: t.Description, InputSchema: t.InputSchema})
			tools[t.ID] = t
		}
	}
	g.meta = tools
	f := features{resources: ls.Resources, prompts: ls.Prompts, instructions: ls.Instructions, completions: ls.Completions}
	if f.instructions == nil {
		f.instructions = map[string]string{}
	}
	return listed, tools, f, nil
}

// run runs one call of a host through the engine under a call id of its
// own; progress gets the call's progress. A refusal is a result with
// IsError, not an error.
func (g *gateway) run(ctx context.Context, id string, args json.RawMessage, progress func(wire.Progress)) (wire.CallResult, error) {
	select {
	case <-g.subscribed:
	case <-ctx.Done():
		return wire.CallResult{}, fmt.Errorf("call %s: %w", id, ctx.Err())
	}
	callID := g.ids.next()
	// The audit log names the host of the call, and of the answer to its
	// approval, which is asked with this ctx.
	ctx = api.WithClient(ctx, "gateway "+cmp.Or(mcp.GatewayHost(ctx), "(host unnamed)"))
	hc := &hostCall{ctx: ctx, progress: progress}
	if progress != nil {
		hc.wake = make(chan struct{}, 1) // awaitProgress waits on it
	}
	hc.server, _, _ = splitID(id)
	g.mu.Lock()
	g.calls[callID] = hc
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.calls, callID)
		g.mu.Unlock()
	}()
	// A host that asked for no progress has the server asked for none.
	resp, err := g.eng.CallWith(ctx, id, args, api.CallOptions{ID: callID, NoProgress: progress == nil})
	if err != nil && ctx.Err() != nil {
		// The host cancelled the call; mcp-go answers nothing then.
		return wire.CallResult{}, fmt.Errorf("call %s: %w", id, ctx.Err())
	}
	var ae *api.Error
	if err != nil && (!errors.As(err, &ae) || ae.Call == nil) {
		return wire.CallResult{}, fmt.Errorf("call %s: %w", id, err)
	}
	if progress != nil {
		g.awaitProgress(ctx, hc, resp.Progress)
	}
	hc.mu.Lock()
	hc.answered = true
	hc.mu.Unlock()
	g.mu.Lock()
	noHost := hc.noHost
	g.mu.Unlock()
	if noHost != nil && resp.Kind == api.KindNotApproved {
		return wire.ErrorResult(noHost.Error()), nil
	}
	return resp.Result, nil
}

// progressWait bounds how long an answer waits for the progress events
// published before it: the event stream may have dropped some (it never
// blocks a publisher), and then they never come.
const progressWait = 5 * time.Second

// awaitProgress waits until the n progress events hc's call published
// before its answer were passed to the host, so that the host gets them
// before the answer (the events and the answer travel apart), or until
// events were missed (those may never come), progressWait or ctx ends.
func (g *gateway) awaitProgress(ctx context.Context, hc *hostCall, n int) {
	var timeout <-chan time.Time
	for {
		hc.mu.Lock()
		relayed, lossy := hc.relayed, hc.lossy
		hc.mu.Unlock()
		if relayed >= n || lossy {
			return
		}
		if timeout == nil {
			t := time.NewTimer(progressWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-hc.wake:
		case <-timeout:
			g.opts.Logger.V(1).Info("answered before every progress notice was relayed", "relayed", relayed, "published", n)
			return
		case <-ctx.Done():
			return
		}
	}
}

// watch follows the engine's events until ctx ends: tools_changed,
// tools_loaded, defs_policy_changed (and a phase change, a change of
// resources or prompts, or missed events) call changed; a call's
// approval and the elicitations of a server a call waits on are put to
// the host; a call's progress is passed on. The stream ending otherwise
// is an error, which ends the gateway. Every question it puts to a host
// runs on a goroutine of its own that watch waits for; ctx ends them.
func (g *gateway) watch(ctx context.Context, changed func()) error {
	s, err := g.eng.Events(ctx)
	if err != nil {
		return fmt.Errorf("subscribe to the events: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	g.subOnce.Do(func() { close(g.subscribed) })
	// A change between the first list and the subscription is not missed.
	changed()
	var wg sync.WaitGroup
	defer wg.Wait()
	// askApproval puts a call's approval to its host, and askElicitation
	// an elicitation of a server a call waits on; each at most once at a
	// time (an event and a re-read after missed events may both name it).
	askApproval := func(a api.Approval) {
		g.mu.Lock()
		hc := g.calls[a.CallID]
		g.mu.Unlock()
		if hc == nil {
			return
		}
		actx, done, ok := g.asking(hc.ctx, "approval "+a.ID, time.Time{})
		if !ok {
			return
		}
		wg.Go(func() {
			defer done()
			g.approve(ctx, actx, hc, a)
		})
	}
	askElicitation := func(e wire.Elicitation) {
		if !g.alone() && !g.waitsOn(e.Server) {
			return
		}
		ectx, done, ok := g.asking(ctx, "elicitation "+e.ID, e.Expires)
		if !ok {
			return
		}
		wg.Go(func() {
			defer done()
			g.elicit(ctx, ectx, e)
		})
	}
	for {
		ev, err := s.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the event stream ended: %w", err)
		}
		switch ev.Kind {
		case wire.KindMissed:
			// What was missed is read again: the lists, the questions
			// waiting for this gateway's calls; a call's progress may
			// never come.
			changed()
			g.missedProgress()
			g.recoverQuestions(ctx, &wg, askApproval, askElicitation)
		case wire.KindToolsChanged, wire.KindToolsLoaded, wire.KindDefsPolicyChanged,
			wire.KindPhaseChanged, wire.KindResourcesChanged, wire.KindPromptsChanged:
			changed()
		case wire.KindApprovalRequested:
			var a api.ApprovalRequested
			if ev.Decode(&a) == nil {
				askApproval(a.Approval)
			}
		case wire.KindApprovalAnswered:
			var a api.ApprovalAnswered
			if ev.Decode(&a) == nil {
				g.answered("approval " + a.ID)
			}
		case wire.KindElicitationRequested:
			var e wire.ElicitationRequested
			if ev.Decode(&e) == nil {
				askElicitation(e.Elicitation)
			}
		case wire.KindElicitationAnswered:
			var e wire.ElicitationAnswered
			if ev.Decode(&e) == nil {
				g.answered("elicitation " + e.ID)
			}
		case wire.KindCallProgress:
			var p wire.CallProgress
			if ev.Decode(&p) != nil {
				continue
			}
			g.mu.Lock()
			hc := g.calls[p.CallID]
			g.mu.Unlock()
			if hc != nil && hc.progress != nil {
				hc.mu.Lock()
				if !hc.answered {
					hc.progress(p.Progress)
					hc.relayed++
				}
				hc.mu.Unlock()
				hc.signal()
			}
		}
	}
}

// signal wakes the call's awaitProgress.
func (hc *hostCall) signal() {
	select {
	case hc.wake <- struct{}{}:
	default:
	}
}

// missedProgress marks every call in flight as one whose progress events
// may have been missed, so that its answer does not wait for them.
func (g *gateway) missedProgress() {
	g.mu.Lock()
	calls := make([]*hostCall, 0, len(g.calls))
	for _, hc := range g.calls {
		calls = append(calls, hc)
	}
	g.mu.Unlock()
	for _, hc := range calls {
		hc.mu.Lock()
		hc.lossy = true
		hc.mu.Unlock()
		hc.signal()
	}
}

// recoverQuestions reads the approvals and elicitations waiting in the
// engine and asks those of this gateway's calls that no event brought
// (they were missed), through askApproval and askElicitation. It runs
// on a goroutine of wg, so that the reads do not hold up the events.
func (g *gateway) recoverQuestions(ctx context.Context, wg *sync.WaitGroup, askApproval func(api.Approval), askElicitation func(wire.Elicitation)) {
	wg.Go(func() {
		if as, err := g.eng.Approvals(ctx); err == nil {
			for _, a := range as {
				askApproval(a)
			}
		} else if ctx.Err() == nil {
			g.opts.Logger.Info("could not read the approvals after missed events", "error", err.Error())
		}
		if es, err := g.eng.Elicitations(ctx); err == nil {
			for _, e := range es {
				askElicitation(e)
			}
		} else if ctx.Err() == nil {
			g.opts.Logger.Info("could not read the elicitations after missed events", "error", err.Error())
		}
	})
}

// errAnsweredElsewhere ends a question to a host whose approval or
// elicitation ended otherwise: another client answered it, it timed out,
// or its server or call went away.
var errAnsweredElsewhere = errors.New("answered elsewhere, or ended")

// asking is the context of a question to a host about key (an approval's
// or an elicitation's id): parent's, until expires (if set) or until an
// event says key ended (answered). done releases it once the question
// is over. ok is false, and nothing is started, when a question about
// key is being asked already.
func (g *gateway) asking(parent context.Context, key string, expires time.Time) (_ context.Context, done func(), ok bool) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() {}
	if !expires.IsZero() {
		var c context.CancelFunc
		ctx, c = context.WithDeadline(ctx, expires)
		stop = c
	}
	g.mu.Lock()
	if _, dup := g.asked[key]; dup {
		g.mu.Unlock()
		stop()
		cancel(nil)
		return nil, nil, false
	}
	g.asked[key] = cancel
	g.mu.Unlock()
	return ctx, func() {
		g.mu.Lock()
		delete(g.asked, key)
		g.mu.Unlock()
		stop()
		cancel(nil)
	}, true
}

// answered ends the question about key, if one is being asked.
func (g *gateway) answered(key string) {
	g.mu.Lock()
	cancel := g.asked[key]
	g.mu.Unlock()
	if cancel != nil {
		cancel(errAnsweredElsewhere)
	}
}

// waitsOn reports whether a call of this gateway's hosts waits on server.
func (g *gateway) waitsOn(server string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, hc := range g.calls {
		if hc.server == server {
			return true
		}
	}
	return false
}

// elicit puts e to a host (mcp.Gateway.Elicit: the host of the latest
// call waiting on e's server that can show it or, when none waits, the
// latest host that can) within ctx, and answers the engine within
// watchCtx. When no host can show it: the gateway alone could answer it
// (its engine is its own) and declines it; otherwise it leaves e to the
// engine's other clients (the command line, another host's gateway):
// serve cannot tell whose call the question belongs to, so declining here
// could take the answer from a user who can give it, and serve's timeout
// ends it otherwise.
func (g *gateway) elicit(watchCtx, ctx context.Context, e wire.Elicitation) {
	// A URL-mode question names the elicitation by the engine's id: the
	// server's own does not reach its clients.
	me := &mcp.Elicitation{Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL, ElicitationID: e.ID, InputKey: e.InputKey}
	if len(e.RequestedSchema) > 0 {
		me.Form = &mcp.Form{Schema: e.RequestedSchema}
	}
	res, host, err := g.srv.ElicitBy(ctx, me)
	switch {
	case errors.Is(err, mcp.ErrHostCannotElicit) && g.alone():
		g.opts.Logger.Info("declined an elicitation: the host declared no elicitation capability", "server", e.Server)
		res = mcp.ElicitResult{Action: mcp.ElicitDecline}
	case errors.Is(err, mcp.ErrHostCannotElicit):
		g.opts.Logger.Info("left an elicitation to serve's other clients: the host declared no elicitation capability", "server", e.Server)
		return
	case errors.Is(context.Cause(ctx), errAnsweredElsewhere):
		return
	case err != nil:
		g.opts.Logger.Info("could not forward an elicitation to the host", "server", e.Server, "error", err.Error())
		return
	}
	a := wire.ElicitationAnswer{Action: string(res.Action)}
	if res.Action == mcp.ElicitAccept {
		a.Content = res.Content
	}
	// The answer is the host's (its user's), named as its calls are; the
	// gateway's own decline when no host could be asked.
	by := "gateway " + cmp.Or(host, "(host unnamed)")
	if err != nil {
		by = "gateway (no host could be asked: declined)"
	}
	if _, err := g.eng.AnswerElicitation(api.WithClient(watchCtx, by), e.ID, a); err != nil && !errors.Is(err, api.ErrNotFound) {
		g.opts.Logger.Info("could not answer an elicitation", "server", e.Server, "error", err.Error())
	}
}

// approve puts a, the approval of hc, to hc's host within ctx and
// answers the engine within watchCtx. A host that cannot be asked
// refuses it, and hc's answer says what would let it through.
func (g *gateway) approve(watchCtx, ctx context.Context, hc *hostCall, a api.Approval) {
	ok, err := askHost(ctx, a, g.opts.ConfigPath)
	var nr *needsRuleError
	switch {
	case errors.As(err, &nr):
		g.mu.Lock()
		hc.noHost = nr
		g.mu.Unlock()
	case errors.Is(context.Cause(ctx), errAnsweredElsewhere):
		return
	case err != nil:
		g.opts.Logger.Info("could not ask the host; the call is refused", "tool", a.Tool, "error", err.Error())
	}
	// The answer is the host's (its user's, through elicitation), or the
	// gateway's refusal when the host could not be asked.
	by := api.ClientOf(ctx)
	if err != nil {
		by += " (not asked: refused)"
	}
	if err := g.eng.Answer(api.WithClient(watchCtx, by), a.ID, ok); err != nil && !errors.Is(err, api.ErrNotFound) {
		g.opts.Logger.Info("could not answer an approval", "tool", a.Tool, "error", err.Error())
	}
}

// callIDs numbers a gateway's calls under a random prefix of its own, so
// that the calls of two gateways attached to one serve never share an id
// (their approvals are told apart by it) without a random read per call.
type callIDs struct {
	prefix string
	seq    atomic.Uint64
}

func newCallIDs() *callIDs {
	return &callIDs{prefix: "gw-" + rand.Text()[:16] + "-"} // 80 random bits
}

// next is a new call id: 1 to 64 of the characters a call id may hold.
func (c *callIDs) next() string {
	return c.prefix + strconv.FormatUint(c.seq.Add(1), 10)
}
