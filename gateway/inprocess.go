package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/serve"
	"github.com/freecode/freecode/wire"
)

// inProcess is the backend of a gateway that runs the servers itself.
type inProcess struct {
	core *serve.Core
}

func (b inProcess) list(context.Context) ([]defs.Def, map[string]toolMeta, error) {
	ds := b.core.Defs.Defs(defs.DialectJSONSchema)
	meta := make(map[string]toolMeta, len(ds.Tools))
	for _, d := range ds.Tools {
		if t, ok := b.core.Registry.Get(d.Name); ok {
			meta[d.Name] = toolMeta{Title: t.Title, Annotations: t.Annotations, Raw: t.Raw}
		}
	}
	return ds.Tools, meta, nil
}

func (b inProcess) call(ctx context.Context, id string, args json.RawMessage, progress func(registry.Progress)) (registry.Result, error) {
	if progress != nil {
		ctx = registry.WithProgress(ctx, progress)
	}
	// Each call has an id of its own, as the orchestrator's approvals and
	// logs name it.
	callID, err := newCallID()
	if err != nil {
		return registry.Result{}, err
	}
	out := b.core.Orchestrator.Run(ctx, []orchestrator.Call{{ID: callID, Tool: id, Args: args}})[0]
	if out.Err != nil && ctx.Err() != nil {
		// The host cancelled the call; mcp-go answers nothing then.
		return registry.Result{}, fmt.Errorf("call %s: %w", id, ctx.Err())
	}
	return out.Result, nil
}

func (b inProcess) features(context.Context) (features, error) {
	f := features{resources: b.core.Controller.AllResources(), prompts: b.core.Controller.AllPrompts(), instructions: map[string]string{}}
	for _, s := range b.core.Controller.Status().Servers {
		if s.Instructions != "" {
			f.instructions[s.Name] = s.Instructions
		}
	}
	return f, nil
}

func (b inProcess) read(ctx context.Context, server, uri string) (wire.ResourceRead, error) {
	return b.core.Controller.ReadResource(ctx, server, uri)
}

func (b inProcess) getPrompt(ctx context.Context, server, name string, args map[string]string) (wire.PromptResult, error) {
	return b.core.Controller.GetPrompt(ctx, server, name, args)
}

func (b inProcess) settle(ctx context.Context) { b.core.Settled(ctx) }

// watch pokes on every change of the tools the bus announces (the
// registry's, the loaded set's, the deferral policy's); a
// subscriber that missed messages pokes too, and sync re-lists either way.
func (b inProcess) watch(ctx context.Context, changed func()) error {
	ch, cancel := b.core.Bus.Subscribe(64)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			switch m.Event.(type) {
			case registry.ToolsChanged, defs.ToolsLoaded, defs.PolicyChanged, wire.PhaseChanged, wire.ResourcesChanged, wire.PromptsChanged:
				changed()
			default:
				if m.Missed > 0 {
					changed()
				}
			}
		}
	}
}

// hostApprover answers the orchestrator's asks by asking the host of the
// call (an elicitation), or, when it cannot be asked, refuses the call
// with the rule that would let it through.
type hostApprover struct {
	configPath string
}

func (a hostApprover) Approve(ctx context.Context, req orchestrator.ApprovalRequest) (bool, error) {
	res, err := mcp.AskHost(ctx, mcp.HostQuestion{Message: approvalQuestion(req)})
	if errors.Is(err, mcp.ErrHostCannotElicit) {
		return false, &needsRuleError{req: req, configPath: a.configPath}
	}
	if err != nil {
		return false, err
	}
	return res.Action == mcp.ElicitAccept, nil
}

// maxQuestionArgs bounds the arguments shown in an approval question.
// Longer ones are shown as their head and tail around the size of what is
// left out (termtext.Elide): a payload after padding is at the tail, and
// the host is told that it does not see everything.
const maxQuestionArgs = 1000

// approvalQuestion is what the host is asked: "server X wants to run Y
// with …: allow?".
func approvalQuestion(req orchestrator.ApprovalRequest) string {
	args := termtext.Elide(string(req.Args), maxQuestionArgs)
	// Elide's marker can make a short cut longer than what it cut.
	if args != string(req.Args) {
		args += " (not all shown: decline unless what is shown is enough to decide)"
	}
	if server, tool, ok := splitID(req.ToolID); ok {
		return fmt.Sprintf("MCP server %q wants to run %s with %s (%s): allow?", server, tool, args, req.Reason)
	}
	return fmt.Sprintf("FreeCode wants to run its %s tool with %s (%s): allow?", req.ToolID, args, req.Reason)
}

// splitID splits an MCP tool id mcp__<server>__<tool>.
func splitID(id string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(id, mcpPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}

// needsRuleError refuses a call that needs approval when the host cannot
// be asked, saying what would let it through: an allow rule when the
// default asks, the ask rule's removal when one matched (ask wins over
// allow), nothing but a host that can be asked when the call is
// sensitive.
type needsRuleError struct {
	req        orchestrator.ApprovalRequest
	configPath string
}

func (e *needsRuleError) Error() string {
	where := "the config"
	if e.configPath != "" {
		where = e.configPath
	}
	head := fmt.Sprintf("%s needs approval (%s) and this host cannot be asked (it declared no elicitation capability)", e.req.ToolID, e.req.Reason)
	switch {
	case e.req.Sensitive:
		return head + "; no rule lets such a call run unasked: run it from a host that can ask you, or with `freecode mcp call`"
	case e.req.Rule != "":
		return fmt.Sprintf("%s; the rule %q in permission.ask asks about it (ask wins over allow): remove or narrow that rule "+
			"in the file that has it (%s, or the project's .freecode/settings.json)", head, e.req.Rule, where)
	}
	return fmt.Sprintf("%s; to let it run without asking, add %q to permission.allow in %s", head, e.req.ToolID, where)
}
