package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
	"github.com/freecode/freecode/wire"
)

// serverOfTool returns the server part of an MCP tool id, or "" for a
// built-in. Server names never contain "__", so the first "__" after the
// prefix ends the name.
func serverOfTool(id string) string {
	rest, ok := strings.CutPrefix(id, "mcp__")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "__")
	return name
}

func (a *app) callCmd() *cobra.Command {
	var (
		yes     bool
		asJSON  bool
		verbose bool
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "call <tool-id> [JSON-args | key=value ...]",
		Short: "Call one tool through the permission checks and the orchestrator",
		Long: `Call one tool exactly as the model's calls go: permission rules, argument
validation against the tool's schema, then the call.

When freecode serve runs for this home with the same definition of the
tool's server, the call goes through it: the same session, the same rules
and approvals, no second copy of the server. Otherwise the server is
connected for the duration of the command.

A call that needs approval prompts on a terminal; without one it is refused
unless --yes, or, through serve, waits for an answer from another terminal
(` + "`freecode mcp approve <id>`" + `).

The arguments are one JSON object, or key=value words: each value is
taken as the type the tool's input schema gives its key (a string, an
integer, a number, true or false; an array or object written as JSON),
and as a string when the schema does not say.`,
		Example: `  freecode mcp call mcp__everything__echo '{"message": "hi"}'
  freecode mcp call mcp__everything__echo message=hi
  freecode mcp call read path=README.md limit=5`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError{errors.New("call needs <tool-id> [JSON-args | key=value ...]")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			id := args[0]
			in, err := parseCallInput(args[1:])
			if err != nil {
				return err
			}
			o := callOpts{yes: yes, asJSON: asJSON}
			if c.Flags().Changed("timeout") {
				o.timeout = timeout
			}
			cfg, err := a.load(true)
			if err != nil {
				return a.callLastValid(c.Context(), id, in, o, err)
			}
			if id == defs.SearchToolID {
				callArgs, err := in.resolve(defs.SearchSchema())
				if err != nil {
					return err
				}
				return a.callSearch(c.Context(), cfg, callArgs, o, verbose, timeout)
			}
			var srv *schema.Server
			var r route
			if name := serverOfTool(id); name != "" {
				s, err := a.serverIn(cfg, name)
				if err != nil {
					return a.unknownServer(cfg, id, err)
				}
				if !s.Enabled {
					return a.disabledCall(id, s)
				}
				srv = &s
				r = a.serveRoute(c.Context(), cfg, s)
				defer r.close()
				if verbose {
					fmt.Fprintf(a.stderr, "Calling %s %s.\n", termtext.Neutralize(id), r.describe())
				}
				if r.client != nil {
					if starting(r.server.Phase) {
						st, err := a.waitStarted(c.Context(), r.client, s.Name)
						if err != nil {
							return err
						}
						r.server = st
					}
					switch {
					case r.server.Phase == wire.PhaseIdle:
						// An on-demand server: serve starts it for the call.
						if verbose {
							fmt.Fprintf(a.stderr, "Server %s is idle (lifecycle on-demand); this call starts it.\n", termtext.Neutralize(s.Name))
						}
					case r.server.Phase != wire.PhaseReady:
						return a.notRunningCall(id, s, r.server, time.Now())
					}
				}
			} else if verbose {
				fmt.Fprintf(a.stderr, "Calling %s in this process (built-in tools work on the working directory).\n", termtext.Neutralize(id))
			}
			// The call's progress on stderr, paused while a question is asked.
			progress := a.progressLine()
			eng := callEngine{Engine: r.client, via: viaServe, server: r.server.Name}
			if r.client == nil {
				if !o.timeoutSet() {
					o.timeout = timeout
				}
				// Built-ins run on the working directory, an MCP tool's
				// server is started for the call.
				var servers []schema.Server
				opts := oneShotOpts{approver: a.approver(o.yes)}
				if srv != nil {
					servers = []schema.Server{*srv}
					// On a terminal the server's questions are asked there;
					// else the session declares no elicitation, as nobody
					// could answer.
					if term := a.stdinTerminal(); term != nil {
						opts.elicit = a.terminalElicit(term, progress)
					}
				}
				one, err := a.oneShot(c.Context(), cfg, servers, opts)
				if err != nil {
					if _, ok := errors.AsType[*serve.StartError](err); ok && srv != nil {
						return a.oneShotStartFailed(id, *srv, startErr(err))
					}
					return err
				}
				defer one.Close()
				eng = callEngine{Engine: one, via: viaOneShot, server: serverOfTool(id)}
			}
			callArgs, err := in.resolve(inputSchema(c.Context(), eng, id))
			if err != nil {
				return err
			}
			return a.callThrough(c.Context(), eng, id, callArgs, o, progress)
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, `approve calls that a rule says to "ask" about`)
	c.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say how the call reaches the tool: through freecode serve or in a one-shot session")
	durationVar(c.Flags(), &timeout, "timeout", 60*time.Second, "per-call timeout: a duration (60s, 2m) or milliseconds")
	return c
}

// inputSchema is the input schema of tool id as eng lists it — a
// server's tool among its server's tools, a built-in among the
// definitions — or nil when it is not listed there (the call then says
// why).
func inputSchema(ctx context.Context, eng api.Engine, id string) json.RawMessage {
	if name := serverOfTool(id); name != "" {
		st, err := eng.ServerTools(ctx, name)
		if err != nil {
			return nil
		}
		for _, t := range st.Tools {
			if t.ID == id {
				return t.InputSchema
			}
		}
		return nil
	}
	tools, err := eng.Tools(ctx, "")
	if err != nil {
		return nil
	}
	for _, t := range tools.Tools {
		if t.Name == id {
			return t.InputSchema
		}
	}
	return nil
}

// callOpts are what `mcp call` was asked for.
type callOpts struct {
	yes, asJSON bool
	// timeout bounds the call; through serve it is 0 unless --timeout was
	// given (serve's callTimeout applies then).
	timeout time.Duration
}

func (o callOpts) timeoutSet() bool { return o.timeout > 0 }

// callLastValid makes a call through the serve that keeps the last valid
// config applied while the file has errors (loadErr): a tool of a server
// serve runs, or tool_search. A built-in tool runs in this process, under
// the rules of the file, so it waits for the file to be fixed.
func (a *app) callLastValid(ctx context.Context, id string, in callInput, o callOpts, loadErr error) error {
	name := serverOfTool(id)
	if name == "" && id != defs.SearchToolID {
		return fmt.Errorf("%w\n%s is a built-in tool: it runs in this process, under the rules of the file, so fix the file first (`freecode mcp validate` shows every error)", loadErr, id)
	}
	r, err := a.lastValidRoute(ctx, name, loadErr)
	if err != nil {
		return err
	}
	defer r.close()
	eng := callEngine{Engine: r.client, via: viaServe, server: r.server.Name}
	schema := defs.SearchSchema()
	if name != "" {
		if _, err := a.serveReady(ctx, r); err != nil {
			return err
		}
		schema = inputSchema(ctx, eng, id)
	}
	args, err := in.resolve(schema)
	if err != nil {
		return err
	}
	return a.callThrough(ctx, eng, id, args, o, a.progressLine())
}

// printOutcome shows a call's outcome, whose result's text is text (err:
// the call did not complete), and returns the command's error.
func (a *app) printOutcome(v outcomeView, text string, err error, asJSON bool) error {
	if asJSON {
		if perr := a.printJSON(v); perr != nil {
			return perr
		}
		if err != nil || v.IsError {
			return silentError{exitError}
		}
		return nil
	}
	if err != nil {
		return err
	}
	if text != "" {
		// The server's text; --json keeps it exact.
		fmt.Fprintln(a.stdout, termtext.Neutralize(text))
	}
	// Resource links are not text, but where to read more: say how.
	if server := serverOfTool(v.Tool); server != "" {
		for _, c := range v.Content {
			if c.Type == wire.ContentResourceLink && c.URI != "" {
				fmt.Fprintf(a.stdout, "[resource link %s: read it with `%s`]\n", termtext.Quote(c.URI),
					termtext.Neutralize(termtext.ShellCommand("freecode", "mcp", "read", server, c.URI)))
			}
		}
	}
	if v.IsError {
		return silentError{exitError}
	}
	return nil
}

// unknownTool adds to err, the orchestrator's "not available", the ids
// nearest to id among ids and where to see a server's tools; or, when id
// is a tool of its server that the server's tools filter hides (one of
// hidden), that it is.
func unknownTool(err error, id string, ids []string, hidden []wire.HiddenTool) error {
	name := serverOfTool(id)
	for _, h := range hidden {
		if id == "mcp__"+name+"__"+h.Name {
			return fmt.Errorf("%w: it is hidden by the tools filter of %q (%s); see the hidden tools with `freecode mcp tools %s --all`", err, name, h.Reason, name)
		}
	}
	hint := didYouMean(closest(id, ids))
	if name != "" {
		hint += fmt.Sprintf(" See the tools of %q with `freecode mcp tools %s`.", name, name)
	} else {
		hint += " MCP tools are named mcp__<server>__<tool>: see them with `freecode mcp tools <server>`."
	}
	return fmt.Errorf("%w.%s", err, hint)
}

// unknownServer adds, to the error of a tool id whose server is not
// configured, the ids made of the nearest configured names.
func (a *app) unknownServer(cfg *schema.Config, id string, err error) error {
	if !errors.Is(err, schema.ErrNoServer) {
		return err
	}
	name := serverOfTool(id)
	tool := strings.TrimPrefix(strings.TrimPrefix(id, "mcp__"+name), "__")
	var ids []string
	for _, n := range closest(name, serverNames(cfg)) {
		ids = append(ids, "mcp__"+n+"__"+tool)
	}
	// The ids, not the bare server names, are what to type instead.
	base := &noServerError{name: name, file: cfg.Path}
	if len(ids) == 0 {
		return base
	}
	return fmt.Errorf("%w.%s", base, didYouMean(ids))
}

type outcomeView struct {
	Tool string `json:"tool"`
	// Via says how the call reached the tool: "serve" or "one-shot".
	Via        string          `json:"via"`
	IsError    bool            `json:"isError"`
	Error      string          `json:"error,omitempty"`
	Content    []wire.Content  `json:"content"`
	Structured json.RawMessage `json:"structuredContent,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	Attempts   int             `json:"attempts"`
	DurationMS float64         `json:"durationMs"`
}

// approver answers "ask" decisions: --yes approves, a terminal prompts, and
// anything else refuses with what to do instead.
func (a *app) approver(yes bool) orchestrator.Approver {
	return orchestrator.ApproverFunc(func(ctx context.Context, req orchestrator.ApprovalRequest) (bool, error) {
		who := api.ClientOf(ctx)
		if yes {
			orchestrator.AnsweredBy(ctx, who+" --yes")
			return true, nil
		}
		if a.stdinTerminal() == nil {
			switch {
			case req.Sensitive:
				return false, fmt.Errorf("%s needs approval (%s) and there is no terminal to ask on: rerun with --yes (no rule lets such a call run unasked)", req.ToolID, req.Reason)
			case req.Rule != "":
				return false, fmt.Errorf("%s needs approval and there is no terminal to ask on: rerun with --yes, or remove or narrow the rule %q in permission.ask (ask wins over allow)", req.ToolID, req.Rule)
			}
			return false, fmt.Errorf("%s needs approval and there is no terminal to ask on: rerun with --yes, or add it to permission.allow", req.ToolID)
		}
		answer := a.ask(approvalQuestion(req.ToolID, req.Args, req.Reason))
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ok := <-answer:
			orchestrator.AnsweredBy(ctx, who+" on its terminal")
			return ok, nil
		}
	})
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
