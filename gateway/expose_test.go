package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

// TestExpose: MCP tools lose "mcp__" and gain their title and
// annotations; built-ins are listed only when asked for, tool_search
// always.
func TestExpose(t *testing.T) {
	ds := []defs.Def{
		{Name: "mcp__github__create_issue", Description: "Creates an issue.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "read", Description: "Reads a file."},
		{Name: ToolSearch, Description: "Finds tools."},
		{Name: "write", Description: "Writes a file."},
	}
	tools := map[string]wire.Tool{"mcp__github__create_issue": {ID: "mcp__github__create_issue", Name: "create_issue", Title: "Create issue",
		Description: "The server's own description.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
		Raw: json.RawMessage(`{"name":"create_issue","icons":[{"src":"https://x/i.png"}]}`)}}
	for _, c := range []struct {
		name     string
		builtins bool
		want     []string
	}{
		{"without built-ins", false, []string{"github__create_issue", ToolSearch}},
		{"with built-ins", true, []string{"github__create_issue", "read", ToolSearch, "write"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := expose(ds, tools, c.builtins, "")
			var names []string
			for _, tl := range e.tools {
				names = append(names, tl.Name)
				assert.Equal(t, tl.Name, stripped(e.ids[tl.Name]))
			}
			assert.Equal(t, c.want, names)
			assert.Equal(t, "mcp__github__create_issue", e.ids["github__create_issue"])
			assert.Equal(t, "Create issue", e.tools[0].Title)
			assert.JSONEq(t, `{"readOnlyHint":false}`, string(e.tools[0].Annotations))
			assert.JSONEq(t, `{"type":"object"}`, string(e.tools[0].InputSchema))
			assert.Equal(t, "Creates an issue.", e.tools[0].Description, "the definition's description, as the budget shaped it")
			assert.JSONEq(t, `{"name":"create_issue","icons":[{"src":"https://x/i.png"}]}`, string(e.tools[0].Raw), "the server's object")
		})
	}
}

func stripped(id string) string {
	if len(id) > len(mcpPrefix) && id[:len(mcpPrefix)] == mcpPrefix {
		return id[len(mcpPrefix):]
	}
	return id
}

// TestSearchForHostKeepsOtherFields: tool_search's structured result gets
// the host's names, and keeps every other field — its own and each
// tool's — as it was.
func TestSearchForHostKeepsOtherFields(t *testing.T) {
	r := wire.CallResult{
		Content:    []wire.Content{{Type: "text", Text: "1. mcp__gh__create_issue: Creates an issue."}},
		Structured: json.RawMessage(`{"query":"issue","total":7,"loaded":["mcp__gh__create_issue"],"tools":[{"name":"mcp__gh__create_issue","score":0.9,"deferred":true},{"name":"read"}]}`),
	}
	got := searchForHost(r)
	assert.JSONEq(t, `{"query":"issue","total":7,"loaded":["mcp__gh__create_issue"],"tools":[{"name":"gh__create_issue","score":0.9,"deferred":true},{"name":"read"}]}`,
		string(got.Structured))
	assert.Equal(t, "1. gh__create_issue: Creates an issue.", got.Content[0].Text)
}
