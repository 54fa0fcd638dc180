package orchestrator

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
)

// TestReportTellsEveryCallsDecisionApprovalAndOutcome: Options.Report is
// told of each call, in order, with the rule that decided it and who
// answered its approval.
func TestReportTellsEveryCallsDecisionApprovalAndOutcome(t *testing.T) {
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("s", []registry.Tool{fakeTool("mcp__s__read", true, nil, nil), fakeTool("mcp__s__write", false, nil, nil), fakeTool("mcp__s__rm", false, nil, nil)})
	require.NoError(t, err)
	type hostKey struct{}
	var got []Report
	var hosts []any
	o := newOrch(t, r, func(o *Options) {
		o.Rules = func() Rules { return Rules{Deny: []string{"mcp__s__rm"}, Ask: []string{"mcp__s__write"}} }
		o.Approver = ApproverFunc(func(ctx context.Context, req ApprovalRequest) (bool, error) {
			AnsweredBy(ctx, "terminal")
			return true, nil
		})
		o.Report = func(ctx context.Context, rep Report) {
			got = append(got, rep)
			hosts = append(hosts, ctx.Value(hostKey{}))
		}
	})
	ctx := context.WithValue(testCtx(t), hostKey{}, "cli")
	o.Run(ctx, []Call{
		{ID: "1", Tool: "mcp__s__read"},
		{ID: "2", Tool: "mcp__s__write", Args: json.RawMessage(`{"a":1}`)},
		{ID: "3", Tool: "mcp__s__rm"},
		{ID: "4", Tool: "nope"},
	})
	require.Len(t, got, 4)
	require.Equal(t, []any{"cli", "cli", "cli", "cli"}, hosts)
	require.True(t, got[0].Decided)
	require.Equal(t, Allow, got[0].Decision.Action)
	require.False(t, got[0].Asked)
	require.Equal(t, "s", got[0].Server)
	require.Equal(t, 1, got[0].Outcome.Attempts)

	require.Equal(t, Decision{Action: Ask, Rule: "mcp__s__write"}, got[1].Decision)
	require.True(t, got[1].Asked && got[1].Approved)
	require.Equal(t, "terminal", got[1].AnsweredBy)
	require.NoError(t, got[1].Outcome.Err)
	require.JSONEq(t, `{"a":1}`, string(got[1].Call.Args))

	require.Equal(t, Decision{Action: Deny, Rule: "mcp__s__rm"}, got[2].Decision)
	require.ErrorIs(t, got[2].Outcome.Err, ErrDenied)
	require.Zero(t, got[2].Outcome.Attempts)

	require.False(t, got[3].Decided)
	require.ErrorIs(t, got[3].Outcome.Err, ErrUnknownTool)
}
