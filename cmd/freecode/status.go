package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// dialServe connects to the serve of the current home. Its error wraps
// api.ErrNotRunning when there is none.
func (a *app) dialServe() (*api.Client, string, error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return nil, "", err
	}
	c, err := api.Dial(api.SocketPath(home))
	return c, home, err
}

// needServe is the error of a verb that only works through serve.
func needServe(home string, err error) error {
	if errors.Is(err, api.ErrNotRunning) {
		return fmt.Errorf("freecode serve is not running for %s; start it with `freecode serve`", home)
	}
	return err
}

// statusOutput is `mcp status --json`.
type statusOutput struct {
	// ServeRunning says whether the actual side comes from a live serve.
	ServeRunning bool `json:"serveRunning"`
	// Probed says the actual side comes from connecting each server just now.
	Probed bool   `json:"probed,omitempty"`
	Home   string `json:"home"`
	// Definitions is what serve advertises to the model (jsonschema
	// dialect); nil without serve.
	Definitions *definitions `json:"definitions,omitempty"`
	wire.Status
}

// definitions summarizes serve's provider-facing tool list.
type definitions struct {
	Tools           int            `json:"tools"`
	EstimatedTokens int            `json:"estimatedTokens"`
	Deferral        *defs.Deferral `json:"deferral,omitempty"`
}

// serveDefinitions reads the summary of serve's definitions; nil when it
// cannot (the status says enough without it).
func serveDefinitions(ctx context.Context, client *api.Client) *definitions {
	t, err := client.ToolsSummary(ctx, "")
	if err != nil {
		return nil
	}
	return &definitions{Tools: t.Count, EstimatedTokens: t.EstimatedTokens, Deferral: t.Deferral}
}

// writeDefinitions says what the definitions cost the model's context and,
// over the budget, how many tools wait for tool_search.
func writeDefinitions(w io.Writer, d *definitions) {
	if d == nil {
		return
	}
	if d.Deferral == nil {
		fmt.Fprintf(w, "\nDefinitions: %d tools, about %d tokens of the model's context.\n", d.Tools, d.EstimatedTokens)
		return
	}
	fmt.Fprintf(w, "\nDefinitions: %d tools, about %d tokens of the model's context; all of them would take %d, over mcp.toolBudget %d: %d tools wait for tool_search (%d loaded).\n",
		d.Tools, d.EstimatedTokens, d.Deferral.FullTokens, d.Deferral.Budget, len(d.Deferral.Deferred), len(d.Deferral.Loaded))
}

func (a *app) statusCmd() *cobra.Command {
	var asJSON, watch, probe, verbose bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show every server: configured (desired) next to running (actual)",
		Long: `Show every configured server, desired next to actual, from the running
freecode serve. Without a serve it shows the configured side only; --probe then
connects every enabled server now (in parallel, each within its timeout, or
longer while it is still working, as under serve) to report whether it would
start and how many tools it has. With serve running, --probe connects nothing
more: serve's sessions are the actual state, and it waits until every server
serve is starting is ready or has failed.

Exit status 1 when the config file has errors, and with --probe when an
enabled server failed to start.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			client, home, err := a.dialServe()
			if errors.Is(err, api.ErrNotRunning) {
				if watch {
					return fmt.Errorf("freecode serve is not running for %s; --watch needs it (start it with `freecode serve`)", home)
				}
				return a.offlineStatus(ctx, fmt.Sprintf("freecode serve is not running for %s", home), home, asJSON, probe)
			}
			if err != nil {
				return err
			}
			defer client.Close()
			st, err := client.Status(ctx)
			if err != nil {
				return err
			}
			path, err := a.userConfig()
			if err != nil {
				return err
			}
			if why := otherConfig(st, path); why != "" {
				// Serve's servers are another file's: show this one's.
				if watch {
					return fmt.Errorf("%s; --watch needs a serve of this config (%s)", why, a.otherConfigRemedy(st))
				}
				return a.offlineStatus(ctx, why, home, asJSON, probe)
			}
			if src, err := a.sources(); err == nil {
				// Serve's status stands, its user config being this
				// command's; its project servers may not be this
				// directory's.
				if why := unlikeGateway(st, src, false, nil); why != "" {
					a.notice(asJSON, why+"; the status is serve's")
				}
			}
			if !watch {
				if probe {
					// Serve's sessions are the servers' actual state; a
					// second connection would only start second copies.
					if st, err = settledStatus(ctx, client); err != nil {
						return err
					}
					a.notice(asJSON, fmt.Sprintf("Probed through freecode serve (pid %d): the state of the sessions it runs, once every server still starting is ready or failed.", st.ServePID))
				}
				out := statusOutput{ServeRunning: true, Probed: probe, Home: home, Status: st, Definitions: serveDefinitions(ctx, client)}
				if err := a.renderStatus(out, asJSON); err != nil {
					return err
				}
				if verbose && !asJSON {
					a.printCallNumbers(st)
				}
				return statusExit(out)
			}
			return a.watchStatus(ctx, client, home, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "add each server's calls through serve (count, errors, p50/p95 duration) and the audit log's state")
	c.Flags().BoolVar(&watch, "watch", false, "print the status again on every change until interrupted")
	c.Flags().BoolVar(&probe, "probe", false, "connect every enabled server now to report its actual state; with serve running, wait for the servers it is starting instead")
	return c
}

// notice prints a line about where the status comes from: above the
// table, or on stderr when stdout is JSON.
func (a *app) notice(asJSON bool, line string) {
	if asJSON {
		fmt.Fprintln(a.stderr, line)
	} else {
		fmt.Fprintln(a.stdout, line)
	}
}

// settledStatus is serve's status once none of its servers is pending or
// starting: each is ready, has failed, or waits for something else (a
// retry, a sign-in). It waits on serve's events, not on a clock.
func settledStatus(ctx context.Context, client *api.Client) (wire.Status, error) {
	events, err := client.Events(ctx)
	if err != nil {
		return wire.Status{}, fmt.Errorf("freecode serve: %w", err)
	}
	defer events.Close()
	for {
		st, err := client.Status(ctx)
		if err != nil {
			return wire.Status{}, fmt.Errorf("freecode serve: %w", err)
		}
		if !slices.ContainsFunc(st.Servers, func(s wire.ServerStatus) bool { return starting(s.Phase) }) {
			return st, nil
		}
		if _, err := events.Next(); err != nil {
			if ctx.Err() != nil {
				return wire.Status{}, ctx.Err()
			}
			return wire.Status{}, fmt.Errorf("freecode serve stopped: %w", err)
		}
	}
}

// watchStatus renders the status, then again after every event, until ctx
// ends. Events that arrive while rendering are coalesced into one render.
func (a *app) watchStatus(ctx context.Context, client *api.Client, home string, asJSON bool) error {
	events, err := client.Events(ctx)
	if err != nil {
		return err
	}
	defer events.Close()
	clear := !asJSON && writerIsTerminal(a.stdout)
	var last string
	for {
		st, err := client.Status(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Several events often report one change; print a change once.
		var buf strings.Builder
		summary := serveDefinitions(ctx, client)
		if err := renderStatus(&buf, statusOutput{ServeRunning: true, Home: home, Status: st, Definitions: summary}, asJSON); err != nil {
			return err
		}
		// The definitions change without the status (tools_loaded).
		dk, _ := json.Marshal(summary)
		if key := sansTimes(st) + string(dk); key != last {
			last = key
			if clear {
				fmt.Fprint(a.stdout, "\033[H\033[2J")
			} else if !asJSON {
				fmt.Fprintf(a.stdout, "--- %s\n", st.ObservedAt.Local().Format(time.TimeOnly))
			}
			fmt.Fprint(a.stdout, buf.String())
		}
		if _, err := events.Next(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errors.New("freecode serve stopped")
			}
			return err
		}
	}
}

// sansTimes is the status without its clock-dependent fields, to tell a
// real change from the passing of time.
func sansTimes(st wire.Status) string {
	st.ObservedAt = time.Time{}
	for i := range st.Servers {
		st.Servers[i].Since, st.Servers[i].NextRetry = time.Time{}, time.Time{}
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// writerIsTerminal reports whether w is a terminal.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// offlineStatus shows the configured servers, and with probe connects each
// enabled one.
// why says why serve's status is not shown (it does not run, or reads
// another config file).
func (a *app) offlineStatus(ctx context.Context, why, home string, asJSON, probe bool) error {
	notice := why + "; showing the configured servers"
	if a.configFlag != "" {
		if path, err := a.userConfig(); err == nil {
			notice += " of " + path
		}
	}
	if asJSON {
		fmt.Fprintln(a.stderr, notice)
	} else {
		fmt.Fprintln(a.stdout, notice)
	}
	out := statusOutput{Home: home, Probed: probe}
	cfg, err := a.load(true)
	var errs schema.Errors
	if errors.As(err, &errs) {
		// Show what can be shown: the file without ${VAR} expansion.
		out.ConfigError = err.Error()
		cfg, err = a.load(false)
		probe = false
	}
	if err != nil {
		if out.ConfigError == "" {
			out.ConfigError = err.Error()
		}
		out.Servers = []wire.ServerStatus{}
		if err := a.renderStatus(out, asJSON); err != nil {
			return err
		}
		return statusExit(out)
	}
	out.ConfigPath = cfg.Path
	out.ProjectError = projectError(cfg)
	out.Servers = make([]wire.ServerStatus, len(cfg.MCP.Servers))
	for i, s := range cfg.MCP.Servers {
		v := view(s, false)
		out.Servers[i] = wire.ServerStatus{
			Name: s.Name, Source: s.Source,
			Desired: wire.Desired{Enabled: s.Enabled, SpecHash: s.SpecHash(), Type: string(s.Type), Target: v.target()},
		}
		switch {
		case s.Hold != nil:
			out.Servers[i].Phase, out.Servers[i].Reason = wire.Phase(s.Hold.Kind), holdReason(s.Hold)
		case !s.Enabled:
			out.Servers[i].Phase = "disabled"
		}
	}
	if probe {
		if err := a.probeServers(ctx, cfg, out.Servers); err != nil {
			return err
		}
	}
	// Read after probing: a probe may have renewed a token.
	for i, s := range cfg.MCP.Servers {
		out.Servers[i].SignIn = controller.ShownSignIn(s, out.Servers[i].Phase, a.signInOf(s))
	}
	out.ObservedAt = time.Now()
	if err := a.renderStatus(out, asJSON); err != nil {
		return err
	}
	return statusExit(out)
}

// statusExit is the exit status of a status that was printed: 1 when the
// config file has errors (a running serve keeps the last good one applied)
// or a server failed — or, probed through serve, waits to retry after
// failing.
func statusExit(out statusOutput) error {
	if out.ConfigError != "" {
		return silentError{exitError}
	}
	for _, s := range out.Servers {
		if s.Phase == wire.PhaseFailed || (out.Probed && out.ServeRunning && s.Phase == wire.PhaseBackoff) {
			return silentError{exitError}
		}
	}
	return nil
}

// probeServers starts every enabled server of cfg that is not held, at
// once, on a one-shot engine (each within its timeout, or longer while it
// is still working, as under serve), and records in its row of rows (one
// per server of cfg, in its order) what the engine's status says of it — or
// why it failed to start, with what to do. A server that needs a sign-in
// is in that phase, not failed. The engine is stopped before it returns.
func (a *app) probeServers(ctx context.Context, cfg *schema.Config, rows []wire.ServerStatus) error {
	var servers []schema.Server
	for _, s := range cfg.MCP.Servers {
		if s.Enabled && s.Hold == nil {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		return nil
	}
	eng, err := a.oneShot(ctx, cfg, servers, oneShotOpts{partial: true})
	if err != nil {
		return err
	}
	defer eng.Close()
	st, err := eng.Status(ctx)
	if err != nil {
		return err
	}
	failed := map[string]error{}
	for _, f := range eng.Failed() {
		failed[f.Server] = f.Err
	}
	for i, s := range cfg.MCP.Servers {
		if !s.Enabled || s.Hold != nil {
			continue
		}
		row := &rows[i]
		if err, ok := failed[s.Name]; ok {
			row.Phase, row.LastError = wire.PhaseFailed, a.withRemedy(s, err).Error()
			if errors.Is(err, mcp.ErrNeedsLogin) {
				row.Phase, row.LastError, row.Reason = wire.PhaseNeedsLogin, err.Error(), loginRemedy(s.Name)
			}
			continue
		}
		j := slices.IndexFunc(st.Servers, func(r wire.ServerStatus) bool { return r.Name == s.Name })
		if j < 0 {
			continue
		}
		// The counts and warnings of the session, not what ends with it
		// (its pid, its time in the phase): the probe stops it again.
		got := st.Servers[j]
		row.Phase, row.SpecHash, row.LastError = got.Phase, s.SpecHash(), got.LastError
		row.Tools, row.ToolsTotal = got.Tools, got.ToolsTotal
		row.Resources, row.ResourceTemplates, row.Prompts = got.Resources, got.ResourceTemplates, got.Prompts
		row.Warnings, row.MoreWarnings = got.Warnings, got.MoreWarnings
	}
	return nil
}

func (a *app) renderStatus(out statusOutput, asJSON bool) error {
	return renderStatus(a.stdout, out, asJSON)
}

// renderStatus prints out as a table (or JSON) to w.
func renderStatus(w io.Writer, out statusOutput, asJSON bool) error {
	if out.Servers == nil {
		out.Servers = []wire.ServerStatus{}
	}
	if asJSON {
		return writeJSON(w, out)
	}
	if len(out.Servers) == 0 {
		fmt.Fprintln(w, "No MCP servers configured.")
	} else {
		now := out.ObservedAt
		if now.IsZero() {
			now = time.Now()
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSOURCE\tENABLED\tPHASE\tPID\tTOOLS\tRESTARTS\tSINCE\tLAST-ERROR")
		for _, s := range out.Servers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				cell(s.Name), cell(dash(s.Source)), yesNo(s.Desired.Enabled), cell(phaseText(s, now)),
				num(s.PID), toolsText(s), restartsText(s), ago(s.Since, now), firstLine(errorCell(s), lastErrorWidth))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// The whole error of each server that has one: the table only has
	// room for the start of its first line.
	for _, s := range out.Servers {
		if s.LastError != "" {
			fmt.Fprintf(w, "\n%s: %s\n", cell(s.Name), indentLines(termtext.Neutralize(s.LastError)))
		}
	}
	seen := map[string]bool{}
	for _, s := range out.Servers {
		if s.Reason != "" && !seen[s.Reason] {
			seen[s.Reason] = true
			fmt.Fprintf(w, "\n%s: %s\n", termtext.Neutralize(string(s.Phase)), termtext.Neutralize(s.Reason))
		}
	}
	writeSignIns(w, out.Servers)
	writeDefinitions(w, out.Definitions)
	if out.ProjectError != "" && !seen[out.ProjectError] {
		fmt.Fprintf(w, "\n%s\n", termtext.Neutralize(out.ProjectError))
	}
	if out.ConfigError != "" {
		if out.ServeRunning {
			fmt.Fprintf(w, "\nThe config file has errors; the last valid config stays applied until they are fixed:\n%s\n", termtext.Neutralize(out.ConfigError))
		} else {
			fmt.Fprintf(w, "\nThe config file has errors:\n%s\n", termtext.Neutralize(out.ConfigError))
		}
	}
	return nil
}

// writeSignIns lists the sign-in of every enabled server that signs in
// with OAuth, under the table: who, until when, or what to do. A disabled
// server's is left out: nothing needs it (`mcp get` still shows it).
func writeSignIns(w io.Writer, servers []wire.ServerStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	n := 0
	for _, s := range servers {
		if s.SignIn == nil || !s.Desired.Enabled {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nSign-in:")
		}
		n++
		fmt.Fprintf(tw, "  %s\t%s\n", cell(s.Name), signInText(s.Name, s.SignIn))
	}
	_ = tw.Flush()
}

// lastErrorWidth is how much of a server's error the table shows; the
// whole error follows the table.
const lastErrorWidth = 70

// errorCell is a server's last error without the `server "name"` it starts
// with: the row names the server.
func errorCell(s wire.ServerStatus) string {
	e := s.LastError
	for _, prefix := range []string{fmt.Sprintf("server %q: ", s.Name), fmt.Sprintf("server %q ", s.Name)} {
		if rest, ok := strings.CutPrefix(e, prefix); ok {
			return rest
		}
	}
	return e
}

// indentLines indents every line of s but the first by two spaces.
func indentLines(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// restartsText is the RESTARTS cell: how many restarts, and how many of
// them followed a crash or failed start.
func restartsText(s wire.ServerStatus) string {
	switch {
	case s.Restarts == 0:
		return "-"
	case s.Crashes == 1:
		return fmt.Sprintf("%d (1 crash)", s.Restarts)
	case s.Crashes > 1:
		return fmt.Sprintf("%d (%d crashes)", s.Restarts, s.Crashes)
	}
	return fmt.Sprint(s.Restarts)
}

func phaseText(s wire.ServerStatus, now time.Time) string {
	if s.Phase == "" {
		return "-"
	}
	p := string(s.Phase)
	if s.Phase == wire.PhaseBackoff && !s.UnreachableSince.IsZero() {
		p = "unreachable" // waiting for its endpoint, not crashing
	}
	var notes []string
	if !s.NextRetry.IsZero() && s.Phase == "backoff" {
		notes = append(notes, "retry in "+roundDur(s.NextRetry.Sub(now)))
	}
	if s.Phase == wire.PhaseIdle && !s.LastRunAt.IsZero() {
		notes = append(notes, "ran "+roundDur(now.Sub(s.LastRunAt))+" ago")
	}
	if s.StartTimeoutMS > 0 && (s.Phase == wire.PhaseBackoff || starting(s.Phase)) {
		notes = append(notes, "timeout "+roundDur(time.Duration(s.StartTimeoutMS)*time.Millisecond))
	}
	if len(notes) > 0 {
		p += " (" + strings.Join(notes, ", ") + ")"
	}
	if s.SpecHash != "" && s.Desired.SpecHash != "" && s.SpecHash != s.Desired.SpecHash {
		p += " (old spec)"
	}
	return p
}

func toolsText(s wire.ServerStatus) string {
	if s.Phase == "" || s.Phase == "disabled" || (s.Tools == 0 && s.Phase != "ready") {
		return "-"
	}
	if s.ToolsTotal > s.Tools {
		return fmt.Sprintf("%d of %d", s.Tools, s.ToolsTotal)
	}
	return fmt.Sprint(s.Tools)
}

func num(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return roundDur(now.Sub(t))
}

func roundDur(d time.Duration) string {
	if d < time.Second {
		if d < 0 {
			d = 0
		}
		return d.Round(time.Millisecond * 100).String()
	}
	return d.Round(time.Second).String()
}

// firstLine is the first line of s (an error, which may quote a server's
// stderr) as a table cell of at most max characters.
func firstLine(s string, max int) string {
	if s == "" {
		return "-"
	}
	s, _, _ = strings.Cut(s, "\n")
	s = cell(strings.TrimSuffix(strings.TrimSpace(s), ";"))
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

// cell renders text for one table cell: terminal controls neutralised
// (termtext.Neutralize), and tabs, which would move the columns, shown as
// spaces.
func cell(s string) string {
	return strings.ReplaceAll(termtext.Neutralize(s), "\t", " ")
}

// serveNameError adds to err, serve's answer to a verb about server name,
// the names serve knows closest to name when the answer is that it knows
// no such server.
func (a *app) serveNameError(ctx context.Context, client *api.Client, name string, err error) error {
	if !errors.Is(err, api.ErrNotFound) {
		return err
	}
	st, serr := client.Status(ctx)
	if serr != nil {
		return err
	}
	names := make([]string, 0, len(st.Servers))
	for _, s := range st.Servers {
		names = append(names, s.Name)
	}
	hint := didYouMean(closest(name, names))
	if hint == "" {
		hint = " See the servers with `freecode mcp status`."
	}
	return fmt.Errorf("%w.%s", err, hint)
}

func (a *app) restartCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "restart <name>",
		Short: "Restart a server now (through freecode serve), skipping any backoff",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			if err := client.Restart(c.Context(), args[0]); err != nil {
				return a.serveNameError(c.Context(), client, args[0], err)
			}
			fmt.Fprintf(a.stdout, "Restarting server %q; see `freecode mcp status`.\n", args[0])
			return nil
		},
	}
}

func (a *app) logsCmd() *cobra.Command {
	var follow bool
	c := &cobra.Command{
		Use:   "logs <name>",
		Short: "Print a server's recent stderr and log messages (through freecode serve)",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			if !follow {
				lines, err := client.Logs(ctx, args[0])
				if err != nil {
					return a.serveNameError(ctx, client, args[0], err)
				}
				for _, l := range lines.Lines {
					fmt.Fprintln(a.stdout, termtext.Neutralize(l))
				}
				return nil
			}
			s, err := client.FollowLogs(ctx, args[0])
			if err != nil {
				return a.serveNameError(ctx, client, args[0], err)
			}
			defer s.Close()
			started := false
			for {
				ev, err := s.Next()
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
						return errors.New("freecode serve stopped")
					}
					return err
				}
				switch ev.Kind {
				case wire.KindLogLine:
					fmt.Fprintln(a.stdout, termtext.Neutralize(ev.Data))
				case wire.KindLogSession:
					if started {
						fmt.Fprintf(a.stderr, "--- %s restarted\n", args[0])
					}
					started = true
				case wire.KindLogError:
					return errors.New(ev.Data)
				}
			}
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	return c
}
