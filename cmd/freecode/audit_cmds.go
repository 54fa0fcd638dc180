package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
)

// openAudit opens the home's audit log.
func (a *app) openAudit(ctx context.Context) (*audit.Store, error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return nil, err
	}
	return audit.Open(ctx, home, audit.Options{})
}

// audit appends rec (a sign-in, a trust decision) to the audit log, named
// as this command's (api.ClientOf ctx). A log that cannot be written is a
// warning: what the command did is done and stays done.
func (a *app) audit(ctx context.Context, rec audit.Record) {
	rec.Host = api.ClientOf(ctx)
	s, err := a.openAudit(ctx)
	if err == nil {
		err = s.Append(ctx, rec)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: not recorded in the audit log: %s\n", termtext.Neutralize(err.Error()))
	}
}

func (a *app) auditCmd() *cobra.Command {
	var (
		since, server  string
		asJSON, verify bool
	)
	c := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: tool calls, approvals, sign-ins and trust decisions",
		Long: `Show the audit log kept in $FREECODE_HOME/audit: every tool call (who asked,
the tool, a keyed digest of its arguments, the permission decision and its rule,
the approval and who answered it, the outcome and its duration), sign-ins and
sign-outs, and trust decisions. Argument values, results, tokens and secrets are
never recorded.

--verify checks the chain of hashes that links each record to the one before:
a removed, edited or reordered line, or records cut from the end, are reported
and the command fails.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			s, err := a.openAudit(ctx)
			if err != nil {
				return err
			}
			if verify {
				return a.verifyAudit(ctx, s, asJSON)
			}
			var from time.Time
			if since != "" {
				if from, err = parseSince(since, time.Now()); err != nil {
					return usageError{err}
				}
			}
			entries, err := s.Read(ctx)
			if err != nil {
				return err
			}
			var recs []audit.Record
			for _, e := range entries {
				if e.Err != nil || e.Time.Before(from) || (server != "" && e.Server != server) {
					continue
				}
				recs = append(recs, e.Record)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			if len(recs) == 0 {
				fmt.Fprintf(a.stdout, "No records (%s).\n", s.Path())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tWHAT\tDECISION\tAPPROVAL\tSTATUS\tHOST")
			for _, r := range recs {
				fmt.Fprintln(tw, strings.Join(auditRow(r), "\t"))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&since, "since", "", "only records from this long ago (`DURATION`, e.g. 2h) or since a date or time (2026-05-01, 2026-05-01T10:00:00Z)")
	c.Flags().StringVar(&server, "server", "", "only the records of this server")
	c.Flags().BoolVar(&asJSON, "json", false, "write the records as JSON lines, as they are kept")
	c.Flags().BoolVar(&verify, "verify", false, "check the chain of hashes of the whole log")
	return c
}

// auditRow is a record's row: time, what, decision, approval, status,
// host; every field neutralized (names come from clients and servers).
func auditRow(r audit.Record) []string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return termtext.Neutralize(s)
	}
	what, decision, approval, status := r.Kind, "", "", r.Status
	switch r.Kind {
	case audit.KindCall:
		what = r.Tool + " " + r.Args
		decision = r.Decision
		if r.Rule != "" {
			decision += " (rule " + r.Rule + ")"
		} else if r.Decision != "" {
			decision += " (default)"
		}
		if r.Sensitive {
			decision += ", sensitive"
		}
		approval = r.Approval
		if r.By != "" {
			approval += " by " + r.By
		}
		if r.Attempts > 0 {
			status += fmt.Sprintf(" %dms", r.DurationMS)
		}
	case audit.KindSignIn, audit.KindSignOut:
		what = r.Kind + " " + r.Server
		if r.Issuer != "" {
			what += " (" + r.Issuer + ")"
		}
	case audit.KindTrust, audit.KindUntrust:
		what = r.Kind + " " + r.Project
		if r.Definition != "" {
			what += " (definition " + r.Definition[:min(12, len(r.Definition))] + ")"
		}
	case audit.KindElicitation:
		what = "elicitation from " + r.Server
		if r.Mode != "" {
			what += " (" + r.Mode + ")"
		}
		approval = r.Action
		if r.By != "" {
			approval += " by " + r.By
		}
		status = r.Reason
	case audit.KindLost:
		what = fmt.Sprintf("lost %d records", r.Count)
		status = r.Reason
	}
	return []string{r.Time.Local().Format(time.DateTime), dash(what), dash(decision), dash(approval), dash(status), dash(r.Host)}
}

// parseSince reads --since: a duration back from now, a date or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (2h, 30m) or a date or time (2026-05-01, 2026-05-01 10:00:00, 2026-05-01T10:00:00Z)", s)
}

// verifyAudit checks the chain and says what it found; a break fails.
func (a *app) verifyAudit(ctx context.Context, s *audit.Store, asJSON bool) error {
	v, err := s.Verify(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		out := struct {
			OK       bool            `json:"ok"`
			Records  int             `json:"records"`
			First    uint64          `json:"first,omitempty"`
			Last     uint64          `json:"last,omitempty"`
			Rotated  bool            `json:"rotated,omitempty"`
			Problems []audit.Problem `json:"problems"`
		}{v.OK(), v.Records, v.First, v.Last, v.Rotated, v.Problems}
		if out.Problems == nil {
			out.Problems = []audit.Problem{}
		}
		if err := json.NewEncoder(a.stdout).Encode(out); err != nil {
			return err
		}
	} else {
		switch {
		case v.Records == 0 && v.OK():
			fmt.Fprintf(a.stdout, "The audit log is empty (%s).\n", s.Path())
		case v.OK():
			fmt.Fprintf(a.stdout, "The audit log is whole: records %d to %d, each chained to the one before.\n", v.First, v.Last)
		default:
			fmt.Fprintf(a.stdout, "The audit log was changed (%s):\n", s.Path())
			for _, p := range v.Problems {
				fmt.Fprintf(a.stdout, "  %s\n", termtext.Neutralize(p.String()))
			}
		}
		if v.Rotated {
			fmt.Fprintf(a.stdout, "It starts at record %d: the records before were rotated away.\n", v.First)
		}
	}
	if !v.OK() {
		return silentError{exitError}
	}
	return nil
}
