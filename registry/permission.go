package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Rules are the allow / ask / deny lists of the config's "permission"
// section. Each entry is a rule (see RuleMatches).
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Action is what a Decision says to do with a call.
type Action int

// Actions, in increasing precedence.
const (
	Allow Action = iota
	Ask
	Deny
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Rule is the matching rule, "" when the default applied.
	Rule string
}

// Reason explains the decision in words the model and the user can read,
// e.g. `denied by rule "mcp__github" in permission.deny`.
func (d Decision) Reason() string {
	verb := map[Action]string{Allow: "allowed", Ask: "approval required", Deny: "denied"}[d.Action]
	if d.Rule == "" {
		switch d.Action {
		case Allow:
			return "allowed by default (read-only tool)"
		case Ask:
			return "approval required by default (tool may change things)"
		}
		return verb
	}
	return fmt.Sprintf("%s by rule %q in permission.%s", verb, d.Rule, d.Action)
}

// RuleMatches reports whether rule covers the tool id. A rule matches when it
// equals the id, or when it is a prefix of the id that ends at a "__"
// boundary: "mcp__github" covers "mcp__github__create_issue" but
// "mcp__git" does not cover "mcp__github__x". Consequently "mcp" covers
// every MCP tool. A trailing "__" on the rule is ignored ("mcp__github__"
// is "mcp__github"), "*" matches every tool, and an empty rule matches
// nothing.
func RuleMatches(rule, id string) bool {
	rule = strings.TrimSpace(rule)
	if rule == "*" {
		return true
	}
	rule = strings.TrimSuffix(rule, "__")
	if rule == "" {
		return false
	}
	return id == rule || strings.HasPrefix(id, rule+"__")
}

// Decide applies rules to a tool: deny beats ask beats allow, whatever the
// rules' specificity; with no matching rule a read-only tool is allowed and
// any other tool asks. Within the winning list the first matching rule is
// reported.
func Decide(rules Rules, tool Tool) Decision {
	for _, l := range []struct {
		action Action
		rules  []string
	}{{Deny, rules.Deny}, {Ask, rules.Ask}, {Allow, rules.Allow}} {
		for _, r := range l.rules {
			if RuleMatches(r, tool.ID) {
				return Decision{Action: l.action, Rule: r}
			}
		}
	}
	if tool.ReadOnly {
		return Decision{Action: Allow}
	}
	return Decision{Action: Ask}
}

// ApprovalRequest asks the host whether one call may run.
type ApprovalRequest struct {
	CallID string
	ToolID string
	Args   json.RawMessage
	// ReadOnly is the tool's read-only flag, for display.
	ReadOnly bool
	// Reason says why approval is needed (Decision.Reason).
	Reason string
}

// Approver is provided by the host (a terminal prompt, an API client, a
// policy). Approve blocks until the user answers or ctx ends; false means
// refused. An error is treated as a refusal and reported.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (bool, error)

// Approve implements Approver.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (bool, error) {
	return f(ctx, req)
}
