package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/wire"
)

// `freecode mcp complete`: the values a server suggests for an argument of
// one of its prompts or resource templates (completion/complete), reached
// as `mcp prompt` reaches a server.

func (a *app) completeCmd() *cobra.Command {
	var prompt, template string
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "complete <server> (--prompt NAME | --template URI) <argument>[=typed] [key=value ...]",
		Short: "Ask a server which values an argument of a prompt or resource template may take",
		Long: `Ask a server which values an argument of one of its prompts (--prompt) or
resource templates (--template, the URI template as ` + "`mcp resources`" + ` lists it)
may take, given what is typed so far (<argument>=typed; <argument> alone is
nothing typed yet), and print them one a line. The other arguments already
chosen, as key=value, let the server narrow its values. A server that does
not declare completions is not asked.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError{fmt.Errorf("%s needs <server> and the <argument> to complete (got %d argument(s))\nUsage: %s", c.CommandPath(), len(args), c.UseLine())}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			req, err := completionRequest(prompt, template, args[1], args[2:])
			if err != nil {
				return err
			}
			name := args[0]
			var res wire.Completion
			err = a.withServer(c.Context(), name, verbose, "Completing an argument with", func(eng api.Engine) error {
				var err error
				res, err = eng.Complete(c.Context(), name, req)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			a.writeCompletion(req, res)
			return nil
		},
	}
	c.Flags().StringVar(&prompt, "prompt", "", "complete an argument of the prompt `NAME`")
	c.Flags().StringVar(&template, "template", "", "complete an argument of the resource template `URI` (as the server lists it)")
	c.Flags().BoolVar(&asJSON, "json", false, `print JSON: {"server", "values", "total", "hasMore", "dropped", "_meta"}`)
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the values come from: freecode serve or a one-shot session")
	c.MarkFlagsMutuallyExclusive("prompt", "template")
	return c
}

// completionRequest is the request of `mcp complete`: the argument to
// complete (arg, name[=typed]) of the prompt or template, with the other
// arguments (key=value) as context. Wrong usage is a usageError.
func completionRequest(prompt, template, arg string, others []string) (wire.CompletionRequest, error) {
	var req wire.CompletionRequest
	switch {
	case prompt != "":
		req.Ref = wire.CompletionRef{Type: wire.RefPrompt, Name: prompt}
	case template != "":
		req.Ref = wire.CompletionRef{Type: wire.RefResource, URI: template}
	default:
		return req, usageError{fmt.Errorf("say what the argument belongs to: --prompt NAME or --template URI")}
	}
	name, typed, _ := strings.Cut(arg, "=")
	if name == "" {
		return req, usageError{fmt.Errorf("the argument to complete %q has no name (for example name=Al)", arg)}
	}
	req.Argument = wire.CompletionArgument{Name: name, Value: typed}
	chosen, err := parsePromptArgs(others)
	if err != nil {
		return req, err
	}
	if given(chosen, name) {
		return req, usageError{fmt.Errorf("argument %q is the one to complete: give it once, first", name)}
	}
	if len(chosen) > 0 {
		req.Context = chosen
	}
	return req, nil
}

// writeCompletion prints the values one a line, each neutralised (a
// server's line breaks and tabs shown as \n and \t, so a value stays one
// line), then to stderr what was not shown.
func (a *app) writeCompletion(req wire.CompletionRequest, res wire.Completion) {
	for _, v := range res.Values {
		fmt.Fprintln(a.stdout, completionLine(v))
	}
	of := fmt.Sprintf("%q", req.Argument.Name)
	switch {
	case len(res.Values) == 0 && req.Argument.Value == "":
		fmt.Fprintf(a.stderr, "%s suggests no values for %s.\n", cell(res.Server), cell(of))
	case len(res.Values) == 0:
		fmt.Fprintf(a.stderr, "%s suggests no values for %s starting with %s.\n", cell(res.Server), cell(of), cell(fmt.Sprintf("%q", req.Argument.Value)))
	case res.Total > len(res.Values):
		fmt.Fprintf(a.stderr, "%d of %s values; type more of %s to narrow them.\n", len(res.Values), termtext.GroupDigits(res.Total), cell(of))
	case res.HasMore:
		fmt.Fprintf(a.stderr, "%d values, and more; type more of %s to narrow them.\n", len(res.Values), cell(of))
	}
	if res.Dropped > 0 {
		fmt.Fprintf(a.stderr, "%d of the server's values left out (over FreeCode's bounds: too many, too long, or empty).\n", res.Dropped)
	}
}

// completionLine is a value as one line of a terminal.
func completionLine(v string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(termtext.Neutralize(v))
}
