package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/freecode/freecode/registry"
)

// Rules are the allow / ask / deny lists of the config's "permission"
// section. Each entry is a rule (see RuleMatches); NewPolicy parses them.
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

// RuleMatches reports whether rule covers tool. Rules name what they cover
// by the tool's (server, tool) pair, never by a prefix of its id:
//
//   - "*" covers every tool;
//   - "mcp" covers every MCP tool;
//   - "mcp__<s>" covers exactly the tools of MCP server <s>;
//   - "mcp__<s>__<t>" covers the tool with that id of server <s> only;
//   - any other rule covers the built-in tool with that id ("write").
//
// A tool is an MCP tool when its id starts with "mcp__" (every id
// mcp.ToolID makes does, no built-in's does); its server is its Source, as
// ReplaceSource sets it, or for a tool not in a registry the part of its id
// between "mcp__" and the next "__". So "mcp__fs" covers no tool of a
// server "fs_", whatever its ids look like, and "mcp__git" none of
// "github". Surrounding spaces and one trailing "__" are ignored
// ("mcp__github__" is "mcp__github"); an empty rule, or one naming an empty
// server, matches nothing. A rule naming a server that is not configured
// is still a rule: rules are written before servers start.
func RuleMatches(rule string, tool registry.Tool) bool {
	return parseRule(rule).matches(tool)
}

// ruleKind says what a parsed rule covers.
type ruleKind int

const (
	ruleNone    ruleKind = iota // matches nothing
	ruleAll                     // "*"
	ruleAllMCP                  // "mcp"
	ruleServer                  // "mcp__<s>"
	ruleMCPTool                 // "mcp__<s>__<t>"
	ruleBuiltin                 // a built-in tool's id
)

// rule is a parsed permission rule.
type rule struct {
	text   string // as written, for Decision.Rule
	kind   ruleKind
	server string // ruleServer, ruleMCPTool
	id     string // ruleMCPTool, ruleBuiltin
}

const mcpPrefix = "mcp__"

func parseRule(text string) rule {
	r := rule{text: text}
	s := strings.TrimSpace(text)
	if s == "*" {
		r.kind = ruleAll
		return r
	}
	s = strings.TrimSuffix(s, "__")
	rest, isMCP := strings.CutPrefix(s, mcpPrefix)
	switch {
	case s == "":
	case s == "mcp":
		r.kind = ruleAllMCP
	case !isMCP:
		r.kind, r.id = ruleBuiltin, s
	default:
		server, _, hasTool := strings.Cut(rest, "__")
		switch {
		case server == "":
		case hasTool:
			r.kind, r.server, r.id = ruleMCPTool, server, s
		default:
			r.kind, r.server = ruleServer, server
		}
	}
	return r
}

// toolServer returns the MCP server of t, or ok false for a built-in.
func toolServer(t registry.Tool) (server string, ok bool) {
	rest, isMCP := strings.CutPrefix(t.ID, mcpPrefix)
	if !isMCP {
		return "", false
	}
	if t.Source != "" {
		return t.Source, true
	}
	server, _, _ = strings.Cut(rest, "__")
	return server, true
}

func (r rule) matches(t registry.Tool) bool {
	server, isMCP := toolServer(t)
	switch r.kind {
	case ruleAll:
		return true
	case ruleAllMCP:
		return isMCP
	case ruleServer:
		return isMCP && server == r.server
	case ruleMCPTool:
		return isMCP && server == r.server && t.ID == r.id
	case ruleBuiltin:
		return !isMCP && t.ID == r.id
	}
	return false
}

// Policy is a set of Rules parsed once, for deciding many calls.
type Policy struct {
	deny, ask, allow []rule
}

// NewPolicy parses rules.
func NewPolicy(rules Rules) Policy {
	parse := func(texts []string) []rule {
		out := make([]rule, len(texts))
		for i, t := range texts {
			out[i] = parseRule(t)
		}
		return out
	}
	return Policy{deny: parse(rules.Deny), ask: parse(rules.Ask), allow: parse(rules.Allow)}
}

// Decide applies rules to a tool: deny beats ask beats allow, whatever the
// rules' specificity; with no matching rule a read-only tool is allowed and
// any other tool asks. Within the winning list the first matching rule is
// reported. Rules match as RuleMatches says.
func Decide(rules Rules, tool registry.Tool) Decision {
	return NewPolicy(rules).Decide(tool)
}

// Decide is the package's Decide with the policy's rules.
func (p Policy) Decide(tool registry.Tool) Decision {
	for _, l := range []struct {
		action Action
		rules  []rule
	}{{Deny, p.deny}, {Ask, p.ask}, {Allow, p.allow}} {
		for _, r := range l.rules {
			if r.matches(tool) {
				return Decision{Action: l.action, Rule: r.text}
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
	// Rule is the permission.ask rule that asks ("": the default asks, or
	// Sensitive says the call must be seen whatever the rules say).
	Rule string
	// Sensitive says the tool's Sensitive check asks: no allow rule lets
	// the call through without approval.
	Sensitive bool
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
