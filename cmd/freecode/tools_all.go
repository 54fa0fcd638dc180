package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// toolRow is one tool of `mcp tools` without a server name: the tool as
// the per-server listing has it, with its server, what the permission
// rules do with a call of it, and whether serve defers its definition.
type toolRow struct {
	wire.Tool
	Server string `json:"server"`
	// Permission is "allow", "ask" or "deny" (the config's rules, then the
	// tool's read-only flag).
	Permission string `json:"permission"`
	// Deferred: serve leaves the definition out of what it advertises
	// (mcp.toolBudget) until tool_search loads it. Only serve defers.
	Deferred bool `json:"deferred"`
}

// plainTool is wire.Tool without its methods, for toolRow's JSON.
type plainTool wire.Tool

// MarshalJSON writes the row as wire.Tool writes a tool — the server's
// object under FreeCode's fields, the row's own among them — since the
// embedded Tool's MarshalJSON, promoted to the row, would leave the row's
// fields out.
func (r toolRow) MarshalJSON() ([]byte, error) {
	return wire.MarshalOver(r.Tool.Raw, struct {
		plainTool
		Server     string `json:"server"`
		Permission string `json:"permission"`
		Deferred   bool   `json:"deferred"`
	}{plainTool(r.Tool), r.Server, r.Permission, r.Deferred})
}

// flags are the row's flags for the text listing.
func (r toolRow) flags() string {
	f := []string{pick(r.ReadOnly, "read-only", "mutating")}
	switch r.Permission {
	case orchestrator.Ask.String():
		f = append(f, "ask")
	case orchestrator.Deny.String():
		f = append(f, "denied")
	}
	if r.Deferred {
		f = append(f, "deferred")
	}
	return strings.Join(f, ", ")
}

// allTools lists the tools of every server: through the serve of this
// config when it runs (its ready servers, and what it defers), else by
// connecting each enabled server for the command; a server that fails to
// start is a warning.
func (a *app) allTools(ctx context.Context, asJSON, verbose bool) error {
	cfg, err := a.configuredAll()
	if err != nil {
		return err
	}
	eng, oneShot, closeAll, err := a.allEngine(ctx, cfg, verbose)
	if err != nil {
		return err
	}
	defer closeAll()
	st, err := eng.Status(ctx)
	if err != nil {
		return err
	}
	// Only serve defers definitions (mcp.toolBudget).
	deferred := map[string]bool{}
	if sum, err := eng.ToolsSummary(ctx, ""); err == nil && sum.Deferral != nil {
		for _, id := range sum.Deferral.Deferred {
			deferred[id] = true
		}
	}
	var servers []wire.ServerTools
	for _, s := range st.Servers {
		if s.Phase != wire.PhaseReady && s.Phase != wire.PhaseIdle { // an idle server's tools are advertised
			// A one-shot start that failed was a warning already.
			if oneShot == nil {
				fmt.Fprintf(a.stderr, "warning: server %q is %s under freecode serve; its tools are not listed (see `freecode mcp status`)\n", s.Name, s.Phase)
			}
			continue
		}
		tools, err := eng.ServerTools(ctx, s.Name)
		if err != nil {
			return fmt.Errorf("tools of %q: %w", s.Name, err)
		}
		servers = append(servers, tools)
	}
	rules := orchestrator.NewPolicy(orchestrator.Rules(cfg.Permission))
	rows := []toolRow{}
	for _, st := range servers {
		for _, t := range st.Tools {
			d := rules.Decide(registry.Tool{ID: t.ID, Source: st.Server, ReadOnly: t.ReadOnly})
			rows = append(rows, toolRow{Tool: t, Server: st.Server, Permission: d.Action.String(), Deferred: deferred[t.ID]})
		}
	}
	slices.SortFunc(rows, func(x, y toolRow) int { return strings.Compare(x.ID, y.ID) })
	if asJSON {
		return a.printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, "No tools: no enabled server offers any (see `freecode mcp list`).")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tFLAGS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(r.ID), cell(r.Server), r.flags())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\nA server's tools with their schemas: `freecode mcp tools <server>`.")
	return nil
}
