package orchestrator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
)

func TestRuleMatches(t *testing.T) {
	cases := []struct {
		rule, id string
		want     bool
	}{
		{"mcp__github", "mcp__github__create_issue", true},
		{"mcp__github__create_issue", "mcp__github__create_issue", true},
		{"mcp__git", "mcp__github__x", false},
		{"mcp__git", "mcp__git__log", true},
		{"mcp__github__create", "mcp__github__create_issue", false},
		{"mcp", "mcp__github__x", true},
		{"mcp", "mcpx__a", false},
		{"mcp__github__", "mcp__github__x", true},
		{"read", "read", true},
		{"read", "readme", false},
		{"*", "write", true},
		{"", "read", false},
		{"__", "read", false},
		{"mcp__github__create_issue", "mcp__github", false},
	}
	for _, c := range cases {
		t.Run(c.rule+"→"+c.id, func(t *testing.T) {
			require.Equal(t, c.want, RuleMatches(c.rule, registry.Tool{ID: c.id}))
		})
	}
}

func TestDecide(t *testing.T) {
	ro := registry.Tool{ID: "mcp__github__list_issues", ReadOnly: true}
	mut := registry.Tool{ID: "mcp__github__create_issue"}
	cases := []struct {
		name     string
		rules    Rules
		tool     registry.Tool
		want     Action
		wantRule string
	}{
		{"default read-only allows", Rules{}, ro, Allow, ""},
		{"default mutating asks", Rules{}, mut, Ask, ""},
		{"allow rule on mutating", Rules{Allow: []string{"mcp__github"}}, mut, Allow, "mcp__github"},
		{"ask rule on read-only", Rules{Ask: []string{"mcp__github__list_issues"}}, ro, Ask, "mcp__github__list_issues"},
		{"deny beats allow", Rules{Allow: []string{"mcp__github__create_issue"}, Deny: []string{"mcp__github"}}, mut, Deny, "mcp__github"},
		{"deny beats ask", Rules{Ask: []string{"mcp"}, Deny: []string{"mcp__github__create_issue"}}, mut, Deny, "mcp__github__create_issue"},
		{"ask beats allow even when allow is more specific", Rules{Allow: []string{"mcp__github__list_issues"}, Ask: []string{"mcp__github"}}, ro, Ask, "mcp__github"},
		{"boundary: mcp__git does not deny github", Rules{Deny: []string{"mcp__git"}}, ro, Allow, ""},
		{"boundary: mcp__git does not allow github", Rules{Allow: []string{"mcp__git"}}, mut, Ask, ""},
		{"first matching rule reported", Rules{Deny: []string{"mcp__gitlab", "mcp", "mcp__github"}}, ro, Deny, "mcp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.rules, c.tool)
			require.Equal(t, c.want, d.Action)
			require.Equal(t, c.wantRule, d.Rule)
		})
	}
}

func TestDecisionReason(t *testing.T) {
	require.Equal(t, `denied by rule "mcp__github" in permission.deny`, Decision{Action: Deny, Rule: "mcp__github"}.Reason())
	require.Equal(t, `approval required by rule "mcp" in permission.ask`, Decision{Action: Ask, Rule: "mcp"}.Reason())
	require.Contains(t, Decision{Action: Ask}.Reason(), "by default")
}
