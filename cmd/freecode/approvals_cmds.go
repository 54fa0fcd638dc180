package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
)

// approvalArgsWidth bounds the bytes of the arguments shown in the ARGS
// cell of `mcp approvals`; longer ones are shown as head and tail around
// their size (approvalArgs), and --json has them whole.
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
			cut := false
			for _, p := range pending {
				cut = cut || len(compactArgs(p.Args)) > approvalArgsWidth
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(p.ID), cell(p.Tool), ago(p.Created, now),
					approvalArgs(p.Args), cell(p.Reason))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\nAnswer with `freecode mcp approve <id>` or `freecode mcp deny <id>`; unanswered calls are refused after %s.\n", api.DefaultApprovalTimeout)
			if cut {
				fmt.Fprintln(a.stdout, "Arguments marked \"not shown\" are longer than shown: `freecode mcp approvals --json` has them whole.")
			}
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

// approvalArgs renders a call's arguments for the ARGS cell: compact JSON
// on one line, at most approvalArgsWidth bytes of it shown, the rest
// announced with its size between head and tail (termtext.Elide), never
// cut silently.
func approvalArgs(args json.RawMessage) string {
	if len(args) == 0 {
		return "-"
	}
	return cell(termtext.Elide(compactArgs(args), approvalArgsWidth))
}

// compactArgs is args as compact JSON, or as sent with its line breaks
// shown as spaces when it is not JSON.
func compactArgs(args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) == nil {
		return b.String()
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(string(args))
}
