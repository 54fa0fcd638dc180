package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
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
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "call <tool-id> [JSON-args]",
		Short: "Call one tool through the permission checks and the orchestrator",
		Long: `Call one tool exactly as the model's calls go: permission rules, argument
validation against the tool's schema, then the call. An MCP tool's server is
connected for the duration of the command. A rule that says "ask" prompts on
a terminal; without one the call is refused unless --yes.`,
		Example: `  freecode mcp call mcp__everything__echo '{"message": "hi"}'
  freecode mcp call read '{"path": "README.md", "limit": 5}'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("call needs <tool-id> [JSON-args] (got %d argument(s))", len(args))}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			id := args[0]
			callArgs := json.RawMessage("{}")
			if len(args) == 2 {
				if !json.Valid([]byte(args[1])) {
					return usageError{fmt.Errorf("arguments are not valid JSON: %s", args[1])}
				}
				callArgs = json.RawMessage(args[1])
			}
			cfg, err := a.load(true)
			if err != nil {
				return err
			}
			reg := registry.NewRegistry(nil)
			wd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("working directory: %w", err)
			}
			home, err := schema.Home(a.getenv)
			if err != nil {
				return err
			}
			if err := registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: wd, Protected: []string{home, cfg.Path}}); err != nil {
				return err
			}
			if name := serverOfTool(id); name != "" {
				_, srv, err := a.configuredServer(name)
				if err != nil {
					return err
				}
				sess, err := a.connect(c.Context(), srv)
				if err != nil {
					return err
				}
				defer sess.Close()
				if _, err := reg.ReplaceSource(srv.Name, bridge.Tools(sess, sess.Tools())); err != nil {
					return err
				}
			}
			orch := orchestrator.New(orchestrator.Options{
				Registry:    reg,
				Rules:       func() orchestrator.Rules { return orchestrator.Rules(cfg.Permission) },
				Approver:    a.approver(yes),
				MaxParallel: 1,
				Limits: func() orchestrator.Limits {
					return orchestrator.Limits{MaxArgumentBytes: cfg.MCP.MaxArgumentBytes, CallTimeout: timeout}
				},
			})
			out := orch.Run(c.Context(), []orchestrator.Call{{ID: "cli", Tool: id, Args: callArgs}})[0]
			if asJSON {
				if err := a.printJSON(callView(out)); err != nil {
					return err
				}
			} else if text := out.Result.Text(); text != "" && out.Err == nil {
				// The server's text; --json keeps it exact.
				fmt.Fprintln(a.stdout, termtext.Neutralize(text))
			}
			if out.Err != nil {
				if asJSON {
					return silentError{exitError}
				}
				return out.Err
			}
			if out.Result.IsError {
				return silentError{exitError}
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, `approve calls that a rule says to "ask" about`)
	c.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	durationVar(c.Flags(), &timeout, "timeout", 60*time.Second, "per-call timeout: a duration (60s, 2m) or milliseconds")
	return c
}

type outcomeView struct {
	Tool       string             `json:"tool"`
	IsError    bool               `json:"isError"`
	Error      string             `json:"error,omitempty"`
	Content    []registry.Content `json:"content"`
	Structured json.RawMessage    `json:"structuredContent,omitempty"`
	Attempts   int                `json:"attempts"`
	DurationMS float64            `json:"durationMs"`
}

func callView(o orchestrator.Outcome) outcomeView {
	v := outcomeView{Tool: o.Tool, IsError: o.Result.IsError, Content: o.Result.Content, Structured: o.Result.Structured,
		Attempts: o.Attempts, DurationMS: float64(o.Duration.Microseconds()) / 1000}
	if o.Err != nil {
		v.Error = o.Err.Error()
	}
	if v.Content == nil {
		v.Content = []registry.Content{}
	}
	return v
}

// approver answers "ask" decisions: --yes approves, a terminal prompts, and
// anything else refuses with what to do instead.
func (a *app) approver(yes bool) orchestrator.Approver {
	return orchestrator.ApproverFunc(func(ctx context.Context, req orchestrator.ApprovalRequest) (bool, error) {
		if yes {
			return true, nil
		}
		f, ok := a.stdin.(*os.File)
		if !ok || !isTerminal(f) {
			return false, fmt.Errorf("%s needs approval and there is no terminal to ask on: rerun with --yes, or add it to permission.allow", req.ToolID)
		}
		fmt.Fprint(a.stderr, termtext.Neutralize(fmt.Sprintf("Allow %s %s? (%s) [y/N] ", req.ToolID, req.Args, req.Reason)))
		answer := make(chan string, 1)
		go func() { // ends when the user answers or stdin closes
			line, _ := bufio.NewReader(f).ReadString('\n')
			answer <- strings.TrimSpace(strings.ToLower(line))
		}()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case s := <-answer:
			return s == "y" || s == "yes", nil
		}
	})
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
