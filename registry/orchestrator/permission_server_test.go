package orchestrator

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
)

// Rules match on the tool's (server, tool) pair: a rule for one server
// never covers another's tools, however their ids look.
func TestRuleNeverCrossesServers(t *testing.T) {
	fs := registry.Tool{ID: "mcp__fs__write_file", Source: "fs"}
	// The ids a server "fs_" had before such names were refused.
	fsUnderscore := registry.Tool{ID: "mcp__fs___write_file", Source: "fs_"}
	xUnderscoreY := registry.Tool{ID: "mcp__x___y", Source: "x_"}
	builtinRead := registry.Tool{ID: "read", Source: registry.SourceBuiltin}
	// A server that happens to be called "builtin" is an MCP server.
	namedBuiltin := registry.Tool{ID: "mcp__builtin__read", Source: "builtin"}
	for _, c := range []struct {
		rule string
		tool registry.Tool
		want bool
	}{
		{"mcp__fs", fs, true},
		{"mcp__fs", fsUnderscore, false},
		{"mcp__fs__", fsUnderscore, false},
		{"mcp__fs_", fsUnderscore, true},
		{"mcp__fs__write_file", fs, true},
		{"mcp__fs__write_file", fsUnderscore, false},
		{"mcp__fs___write_file", fsUnderscore, false},
		{"mcp__x", xUnderscoreY, false},
		{"mcp__x___y", xUnderscoreY, false},
		{"mcp", fsUnderscore, true},
		{"mcp", builtinRead, false},
		{"*", builtinRead, true},
		{"read", builtinRead, true},
		{"read", namedBuiltin, false},
		{"mcp__builtin", namedBuiltin, true},
		{"mcp__builtin", builtinRead, false},
		{"read", registry.Tool{ID: "read__x"}, false},
		{"mcp____x", fs, false},
		{"mcp__not_configured", fs, false},
		// The Source decides, not the id's spelling.
		{"mcp__fs", registry.Tool{ID: "mcp__fs__x", Source: "evil"}, false},
		{"mcp__evil", registry.Tool{ID: "mcp__fs__x", Source: "evil"}, true},
		// A tool outside a registry: its server is read from the id.
		{"mcp__fs", registry.Tool{ID: "mcp__fs__write_file"}, true},
		{"mcp__f", registry.Tool{ID: "mcp__fs__write_file"}, false},
	} {
		t.Run(c.rule+"→"+c.tool.Source+"/"+c.tool.ID, func(t *testing.T) {
			require.Equal(t, c.want, RuleMatches(c.rule, c.tool))
		})
	}

	d := Decide(Rules{Allow: []string{"mcp__fs"}}, fsUnderscore)
	require.Equal(t, Decision{Action: Ask}, d, "fs_'s mutating tool asks, as with no rule")
}

// With allow ["mcp__fs"], a mutating tool of a server "fs_" must be put to
// the approver; fs's own tool runs without asking.
func TestOrchestratorAsksAcrossServerBoundary(t *testing.T) {
	var n atomic.Int32
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("fs", []registry.Tool{fakeTool("mcp__fs__write_file", false, &n, nil)})
	require.NoError(t, err)
	_, err = r.ReplaceSource("fs_", []registry.Tool{fakeTool("mcp__fs___write_file", false, &n, nil)})
	require.NoError(t, err)

	var mu sync.Mutex
	var asked []ApprovalRequest
	o := newOrch(t, r, func(o *Options) {
		o.Rules = func() Rules { return Rules{Allow: []string{"mcp__fs"}} }
		o.Approver = ApproverFunc(func(_ context.Context, req ApprovalRequest) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return false, nil
		})
	})
	out := o.Run(testCtx(t), []Call{
		{ID: "1", Tool: "mcp__fs__write_file", Args: json.RawMessage(`{}`)},
		{ID: "2", Tool: "mcp__fs___write_file", Args: json.RawMessage(`{}`)},
	})
	require.NoError(t, out[0].Err, "fs's tool is allowed")
	require.ErrorIs(t, out[1].Err, ErrNotApproved)
	require.Equal(t, int32(1), n.Load(), "only fs's tool ran")
	require.Len(t, asked, 1)
	require.Equal(t, "mcp__fs___write_file", asked[0].ToolID)
	require.Equal(t, "approval required by default (tool may change things)", asked[0].Reason)
}

func BenchmarkPolicyDecide(b *testing.B) {
	rules := Rules{Deny: []string{"mcp__github__delete_repository", "write"}, Ask: []string{"mcp__filesystem__write_file"}, Allow: []string{"read", "mcp__memory", "mcp__fs"}}
	tool := registry.Tool{ID: "mcp__other__tool", Source: "other"}
	p := NewPolicy(rules)
	for b.Loop() {
		_ = p.Decide(tool)
	}
}
