package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
)

// askHost puts a, the approval of a call of the host of ctx (the call's
// own context), to that host as an elicitation and reports whether it
// approved. When the host cannot be asked it refuses with a
// *needsRuleError naming the rule that would let the call through.
func askHost(ctx context.Context, a api.Approval, configPath string) (bool, error) {
	res, err := mcp.AskHost(ctx, mcp.HostQuestion{Message: approvalQuestion(a)})
	if errors.Is(err, mcp.ErrHostCannotElicit) {
		return false, &needsRuleError{a: a, configPath: configPath}
	}
	if err != nil {
		return false, fmt.Errorf("ask the host about %s: %w", a.Tool, err)
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
func approvalQuestion(a api.Approval) string {
	args := termtext.Elide(string(a.Args), maxQuestionArgs)
	// Elide's marker can make a short cut longer than what it cut.
	if args != string(a.Args) {
		args += " (not all shown: decline unless what is shown is enough to decide)"
	}
	if server, tool, ok := splitID(a.Tool); ok {
		return fmt.Sprintf("MCP server %q wants to run %s with %s (%s): allow?", server, tool, args, a.Reason)
	}
	return fmt.Sprintf("FreeCode wants to run its %s tool with %s (%s): allow?", a.Tool, args, a.Reason)
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
	a          api.Approval
	configPath string
}

func (e *needsRuleError) Error() string {
	where := "the config"
	if e.configPath != "" {
		where = e.configPath
	}
	head := fmt.Sprintf("%s needs approval (%s) and this host cannot be asked (it declared no elicitation capability)", e.a.Tool, e.a.Reason)
	switch {
	case e.a.Sensitive:
		return head + "; no rule lets such a call run unasked: run it from a host that can ask you, or with `freecode mcp call`"
	case e.a.Rule != "":
		return fmt.Sprintf("%s; the rule %q in permission.ask asks about it (ask wins over allow): remove or narrow that rule "+
			"in the file that has it (%s, or the project's .freecode/settings.json)", head, e.a.Rule, where)
	}
	return fmt.Sprintf("%s; to let it run without asking, add %q to permission.allow in %s", head, e.a.Tool, where)
}
