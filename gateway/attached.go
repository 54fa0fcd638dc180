package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// attached is the backend of a gateway that goes through a running serve:
// its definitions (GET /v1/tools) joined with each server's tools for
// titles and annotations, its calls, its approvals — each call's own is
// put to the host — and its events.
type attached struct {
	c    *api.Client
	opts Options
	// subscribed is closed once watch's event stream is in place; calls
	// wait for it, so that none misses its approval.
	subscribed chan struct{}
	subOnce    sync.Once

	mu    sync.Mutex // guards calls and callSeq
	calls map[string]*attachedCall
	// callSeq numbers the calls in the order they began.
	callSeq uint64

	// meta is the last known metadata of each listed tool, by tool id:
	// a tool still defined while its server's list cannot be read keeps
	// its title and annotations, so that the answered list does not
	// change (and the host hears no list_changed) when nothing did. Only
	// list reads and writes it, and list has one caller at a time (the
	// gateway's relist).
	meta map[string]toolMeta
}

// attachedCall is a call in flight, by its call id.
type attachedCall struct {
	ctx      context.Context // the host's call: AskHost reaches its host
	seq      uint64          // the order it began in (attached.callSeq)
	server   string          // the MCP server called ("" for a built-in)
	progress func(registry.Progress)
	// noHost is set when the call's approval was refused because the host
	// cannot be asked; guarded by attached.mu.
	noHost *needsRuleError
}

func newAttached(c *api.Client, opts Options) *attached {
	return &attached{c: c, opts: opts, subscribed: make(chan struct{}), calls: map[string]*attachedCall{}, meta: map[string]toolMeta{}}
}

func (b *attached) list(ctx context.Context) ([]defs.Def, map[string]toolMeta, error) {
	tl, err := b.c.Tools(ctx, string(defs.DialectJSONSchema))
	if err != nil {
		return nil, nil, fmt.Errorf("freecode serve: %w", err)
	}
	st, err := b.c.Status(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("freecode serve: %w", err)
	}
	// Every server's registered tools are read, whatever its phase: a
	// server that crashed keeps its tools registered (its status counts
	// none) until it is back, and they must keep their metadata
	// meanwhile.
	fresh := map[string]toolMeta{}
	for _, s := range st.Servers {
		ts, err := b.c.ServerTools(ctx, s.Name)
		if err != nil {
			// A server that went away meanwhile lists no tools; its
			// tools still defined keep their last known metadata.
			continue
		}
		for _, t := range ts.Tools {
			fresh[t.ID] = toolMeta{Title: t.Title, Annotations: t.Annotations, Raw: t.Raw}
		}
	}
	meta := make(map[string]toolMeta, len(tl.Tools))
	for _, d := range tl.Tools {
		m, ok := fresh[d.Name]
		if !ok {
			m, ok = b.meta[d.Name]
		}
		if ok {
			meta[d.Name] = m
		}
	}
	b.meta = meta
	return tl.Tools, meta, nil
}

func (b *attached) call(ctx context.Context, id string, args json.RawMessage, progress func(registry.Progress)) (registry.Result, error) {
	select {
	case <-b.subscribed:
	case <-ctx.Done():
		return registry.Result{}, fmt.Errorf("call %s: %w", id, ctx.Err())
	}
	callID, err := newCallID()
	if err != nil {
		return registry.Result{}, err
	}
	ac := &attachedCall{ctx: ctx, progress: progress}
	ac.server, _, _ = splitID(id)
	b.mu.Lock()
	b.callSeq++
	ac.seq = b.callSeq
	b.calls[callID] = ac
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.calls, callID)
		b.mu.Unlock()
	}()
	resp, err := b.c.CallWith(ctx, id, args, api.CallOptions{ID: callID})
	var ae *api.Error
	if err != nil && (!errors.As(err, &ae) || ae.Call == nil) {
		return registry.Result{}, fmt.Errorf("call %s through freecode serve: %w", id, err)
	}
	b.mu.Lock()
	noHost := ac.noHost
	b.mu.Unlock()
	if noHost != nil && resp.Kind == api.KindNotApproved {
		return registry.ErrorResult(noHost.Error()), nil
	}
	return resp.Result, nil
}

func (b *attached) features(ctx context.Context) (features, error) {
	rs, err := b.c.Resources(ctx, "")
	if err != nil {
		return features{}, fmt.Errorf("freecode serve: %w", err)
	}
	ps, err := b.c.Prompts(ctx, "")
	if err != nil {
		return features{}, fmt.Errorf("freecode serve: %w", err)
	}
	st, err := b.c.Status(ctx)
	if err != nil {
		return features{}, fmt.Errorf("freecode serve: %w", err)
	}
	f := features{resources: rs, prompts: ps, instructions: map[string]string{}}
	for _, s := range st.Servers {
		if s.Instructions != "" {
			f.instructions[s.Name] = s.Instructions
		}
	}
	return f, nil
}

func (b *attached) read(ctx context.Context, server, uri string) (wire.ResourceRead, error) {
	return b.c.ReadResource(ctx, server, uri)
}

func (b *attached) getPrompt(ctx context.Context, server, name string, args map[string]string) (wire.PromptResult, error) {
	return b.c.GetPrompt(ctx, server, name, args)
}

// settle waits for nothing: serve's servers run already.
func (b *attached) settle(context.Context) {}

// watch follows serve's events until ctx ends: tools_changed,
// tools_loaded, defs_policy_changed (and a phase change, or missed events)
// poke, a call's approval is put to its
// host, a call's progress is passed on. serve going away ends it with an
// error, which ends the gateway.
func (b *attached) watch(ctx context.Context, changed func()) error {
	s, err := b.c.Events(ctx)
	if err != nil {
		return fmt.Errorf("freecode serve: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	b.subOnce.Do(func() { close(b.subscribed) })
	// A change between the first list and the subscription is not missed.
	changed()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		ev, err := s.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("freecode serve stopped: %w", err)
		}
		switch ev.Kind {
		case wire.KindToolsChanged, wire.KindToolsLoaded, wire.KindDefsPolicyChanged,
			wire.KindPhaseChanged, wire.KindResourcesChanged, wire.KindPromptsChanged, wire.KindMissed:
			changed()
		case wire.KindApprovalRequested:
			var a api.ApprovalRequested
			if ev.Decode(&a) != nil {
				continue
			}
			b.mu.Lock()
			ac := b.calls[a.CallID]
			b.mu.Unlock()
			if ac != nil {
				wg.Go(func() { b.approve(ctx, ac, a.Approval) })
			}
		case wire.KindElicitationRequested:
			var e wire.ElicitationRequested
			if ev.Decode(&e) != nil || e.Mode != mcp.ElicitForm {
				continue
			}
			if acs := b.callsTo(e.Server); len(acs) > 0 {
				wg.Go(func() { b.elicit(ctx, acs, e.Elicitation) })
			}
		case wire.KindCallProgress:
			var p wire.CallProgress
			if ev.Decode(&p) != nil {
				continue
			}
			b.mu.Lock()
			ac := b.calls[p.CallID]
			b.mu.Unlock()
			if ac != nil && ac.progress != nil {
				ac.progress(registry.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
	}
}

// callsTo are the calls in flight to server, the latest first.
func (b *attached) callsTo(server string) []*attachedCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*attachedCall
	for _, ac := range b.calls {
		if ac.server == server {
			out = append(out, ac)
		}
	}
	slices.SortFunc(out, func(x, y *attachedCall) int { return cmp.Compare(y.seq, x.seq) })
	return out
}

// elicit puts e, an elicitation of a server this gateway's calls acs
// (the latest first) are waiting for, to the host of the latest of them
// that can show it, and answers serve. When none can, it leaves e to
// serve's other clients (the command line, another host's gateway): serve
// cannot tell whose call the question belongs to, so declining here could
// take the answer from a user who can give it; serve's timeout ends it
// otherwise.
func (b *attached) elicit(ctx context.Context, acs []*attachedCall, e wire.Elicitation) {
	a := wire.ElicitationAnswer{Action: string(mcp.ElicitDecline)}
	asked := false
	for _, ac := range acs {
		res, err := mcp.AskHost(ac.ctx, mcp.HostQuestion{Message: e.Server + " asks: " + e.Message, Schema: e.RequestedSchema})
		if errors.Is(err, mcp.ErrHostCannotElicit) {
			continue
		}
		if err != nil {
			b.opts.Logger.Info("could not forward an elicitation to the host", "server", e.Server, "error", err.Error())
			return
		}
		asked = true
		a.Action = string(res.Action)
		if res.Action == mcp.ElicitAccept {
			a.Content = res.Content
		}
		break
	}
	if !asked {
		b.opts.Logger.Info("left an elicitation to serve's other clients: the host declared no form elicitation capability", "server", e.Server)
		return
	}
	if _, err := b.c.AnswerElicitation(ctx, e.ID, a); err != nil {
		b.opts.Logger.Info("could not answer an elicitation", "server", e.Server, "error", err.Error())
	}
}

// approve puts a, the approval of ac, to ac's host and answers serve.
func (b *attached) approve(ctx context.Context, ac *attachedCall, a api.Approval) {
	req := orchestrator.ApprovalRequest{CallID: a.CallID, ToolID: a.Tool, Args: a.Args, ReadOnly: a.ReadOnly, Reason: a.Reason, Rule: a.Rule, Sensitive: a.Sensitive}
	ok, err := hostApprover{configPath: b.opts.ConfigPath}.Approve(ac.ctx, req)
	var nr *needsRuleError
	if errors.As(err, &nr) {
		b.mu.Lock()
		ac.noHost = nr
		b.mu.Unlock()
	} else if err != nil {
		b.opts.Logger.Info("could not ask the host; the call is refused", "tool", a.Tool, "error", err.Error())
	}
	if err := b.c.Answer(ctx, a.ID, ok); err != nil && !errors.Is(err, api.ErrNotFound) {
		b.opts.Logger.Info("could not answer an approval", "tool", a.Tool, "error", err.Error())
	}
}

// newCallID is a random id for a call of the host, made through serve or
// in this process.
func newCallID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("call id: %w", err)
	}
	return "gw-" + hex.EncodeToString(b), nil
}
