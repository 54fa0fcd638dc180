package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
)

// approvalArgsWidth bounds the ARGS cell of `mcp approvals`; --json has
// them whole.
const approvalArgsWidth = 60

func (a *app) approvalsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "approvals",
		Short: "List the calls waiting for approval in freecode serve",
		Long: `List the tool calls that wait for approval in the running freecode serve:
calls of ` + "`freecode mcp call`" + ` and of every other client of serve. Answer
one with ` + "`freecode mcp approve <id>` or `freecode mcp deny <id>`" + `.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			pending, err := client.Approvals(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if pending == nil {
					pending = []api.Approval{}
				}
				return a.printJSON(pending)
			}
			if len(pending) == 0 {
				fmt.Fprintln(a.stdout, "No calls are waiting for approval.")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTOOL\tWAITING\tARGS\tREASON")
			for _, p := range pending {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(p.ID), cell(p.Tool), ago(p.Created, now),
					firstLine(string(p.Args), approvalArgsWidth), cell(p.Reason))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\nAnswer with `freecode mcp approve <id>` or `freecode mcp deny <id>`; unanswered calls are refused after %s.\n", api.DefaultApprovalTimeout)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// answerCmd is `mcp approve` (approve true) or `mcp deny`.
func (a *app) answerCmd(approve bool) *cobra.Command {
	use, short, done := "deny <id>", "Refuse a call waiting for approval in freecode serve", "Denied"
	if approve {
		use, short, done = "approve <id>", "Approve a call waiting for approval in freecode serve", "Approved"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "<id> (see `freecode mcp approvals`)"),
		RunE: func(c *cobra.Command, args []string) error {
			id := args[0]
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			// Read first, for the tool's name: the answer itself names
			// only the id.
			tool := ""
			if pending, err := client.Approvals(c.Context()); err == nil {
				for _, p := range pending {
					if p.ID == id {
						tool = p.Tool
					}
				}
			}
			if err := client.Answer(c.Context(), id, approve); err != nil {
				if errors.Is(err, api.ErrNotFound) {
					return fmt.Errorf("no call is waiting for approval %q (it may have been answered or timed out); see `freecode mcp approvals`", id)
				}
				return err
			}
			if tool != "" {
				fmt.Fprintf(a.stdout, "%s %s (%s).\n", done, termtext.Neutralize(id), termtext.Neutralize(tool))
			} else {
				fmt.Fprintf(a.stdout, "%s %s.\n", done, termtext.Neutralize(id))
			}
			return nil
		},
	}
}
