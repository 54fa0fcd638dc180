package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// The verbs of what servers offer beside tools: `mcp resources`, `mcp
// read`, `mcp prompts`, `mcp prompt`. Each reaches a server as `mcp tools`
// does (serveRoute): through the running serve when it runs the same
// definition, else in a one-shot session of its own.

// errBinaryToTerminal is wrapped by the error of `mcp read` for a binary
// resource whose bytes would go to a terminal.
var errBinaryToTerminal = errors.New("binary resource not written to a terminal")

// serveReady waits for the server r reaches in serve to start, and
// returns its status once ready; it fails unless it is ready.
func (a *app) serveReady(ctx context.Context, r route) (wire.ServerStatus, error) {
	s := r.server
	if starting(s.Phase) {
		var err error
		if s, err = a.waitStarted(ctx, r.client, s.Name); err != nil {
			return s, err
		}
	}
	if s.Phase != wire.PhaseReady && s.Phase != wire.PhaseIdle { // serve starts an idle one for the request
		return s, notReady(s)
	}
	return s, nil
}

// listFeature lists what `resources` and `prompts` show: of the server
// args names (withServer; what says what it does), or of every enabled
// server (allEngine, args empty). list asks an engine, for server ("":
// every server that offers some). The result is never nil.
func listFeature[T any](a *app, ctx context.Context, args []string, verbose bool, what string,
	list func(eng api.Engine, server string) ([]T, error)) ([]T, error) {
	var out []T
	var err error
	if len(args) == 1 {
		err = a.withServer(ctx, args[0], verbose, what, func(eng api.Engine) error {
			out, err = list(eng, args[0])
			return err
		})
	} else {
		cfg, cerr := a.configuredAll()
		if cerr != nil {
			return nil, cerr
		}
		eng, _, closeAll, eerr := a.allEngine(ctx, cfg, verbose)
		if eerr != nil {
			return nil, eerr
		}
		defer closeAll()
		out, err = list(eng, "")
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// configuredAll loads the config with ${VAR} expanded.
func (a *app) configuredAll() (*schema.Config, error) {
	return a.load(true)
}

func (a *app) resourcesCmd() *cobra.Command {
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "resources [server]",
		Short: "List the resources and resource templates of one server, or of all",
		Long: `List the resources and resource templates (URI patterns) a server offers,
or those of every enabled server that has some. Read one with
` + "`freecode mcp read <server> <uri>`" + `.
When freecode serve runs, the lists are those of its sessions; otherwise each
server is connected for the command.`,
		Args: rangeArgs(0, 1, "[server]"),
		RunE: func(c *cobra.Command, args []string) error {
			out, err := listFeature(a, c.Context(), args, verbose, "Listing the resources of",
				func(eng api.Engine, server string) ([]wire.ServerResources, error) {
					res, err := eng.Resources(c.Context(), server)
					return res.Servers, err
				})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(wire.Resources{Servers: out})
			}
			a.writeResources(out, len(args) == 1)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the lists come from: freecode serve or a one-shot session")
	return c
}

// writeResources prints servers' resources as a table per server. All of
// it but the counts is the servers' text, neutralised. one says a server
// was named: one without resources says so rather than printing nothing.
func (a *app) writeResources(servers []wire.ServerResources, one bool) {
	if len(servers) == 0 {
		fmt.Fprintln(a.stdout, "No server offers resources.")
		return
	}
	for i, s := range servers {
		for _, w := range s.Warnings {
			fmt.Fprintf(a.stderr, "warning: server %q: %s\n", s.Server, termtext.Neutralize(w))
		}
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		fmt.Fprintf(a.stdout, "%s: %s, %s\n", cell(s.Server), countOf(len(s.Resources), "resource"), countOf(len(s.Templates), "resource template"))
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		for _, r := range s.Resources {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", cell(r.URI), cell(dash(r.Name)), cell(resourceKind(r.MimeType, r.Size)))
		}
		for _, t := range s.Templates {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", cell(t.URITemplate), cell(dash(t.Name)), cell(strings.TrimSpace("template "+t.MimeType)))
		}
		_ = tw.Flush()
	}
	if one && len(servers) == 1 && len(servers[0].Resources)+len(servers[0].Templates) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "\nRead one with `freecode mcp read <server> <uri>`.\n")
}

// resourceKind is a resource's MIME type and size for a listing.
func resourceKind(mime string, size *int64) string {
	parts := []string{dash(mime)}
	if size != nil {
		parts = append(parts, formatSize(*size))
	}
	return strings.Join(parts, ", ")
}

// formatSize is n bytes for people.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// countOf is "1 prompt", "2 prompts".
func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (a *app) readCmd() *cobra.Command {
	var asJSON, verbose bool
	var outFile string
	c := &cobra.Command{
		Use:   "read <server> <uri>",
		Short: "Read one resource of a server (a listed one, a template's, or a tool result's link)",
		Long: `Read one resource of a server by its URI: one of ` + "`freecode mcp resources`" + `, a URI
a resource template describes, or the URI of a resource_link a tool returned.
Text is printed; binary content is written only to a file (-o FILE) or a pipe,
never to a terminal. --json prints the contents with binary parts in base64.`,
		Args: exactArgs(2, "<server> <uri>"),
		RunE: func(c *cobra.Command, args []string) error {
			name, uri := args[0], args[1]
			var res wire.ResourceRead
			err := a.withServer(c.Context(), name, verbose, "Reading a resource of",
				func(eng api.Engine) error {
					var err error
					res, err = eng.ReadResource(c.Context(), name, uri)
					return err
				})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			return a.writeRead(res, outFile)
		},
	}
	c.Flags().StringVarP(&outFile, "output", "o", "", "write the contents to `FILE` (- for standard output)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (binary parts in base64)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the resource comes from: freecode serve or a one-shot session")
	return c
}

// writeRead writes what a read returned: to outFile when set (its bytes
// exactly, text or binary), else to standard output, where text is
// neutralised on a terminal and binary is refused there.
func (a *app) writeRead(res wire.ResourceRead, outFile string) error {
	if len(res.Contents) == 0 {
		return fmt.Errorf("server %q returned no contents for %q", res.Server, res.URI)
	}
	if len(res.Contents) > 1 && outFile != "" {
		return fmt.Errorf("resource %q of %q has %d parts, and -o writes one; see them all with --json", res.URI, res.Server, len(res.Contents))
	}
	if outFile != "" && outFile != "-" {
		c := res.Contents[0]
		b := c.Blob
		if !c.Binary() {
			b = []byte(*c.Text)
		}
		if err := os.WriteFile(outFile, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", outFile, err)
		}
		fmt.Fprintf(a.stderr, "Wrote %s (%s, %s) to %s.\n", termtext.Quote(c.URI), dash(termtext.Neutralize(c.MimeType)), formatSize(int64(len(b))), outFile)
		return nil
	}
	terminal := writerIsTerminal(a.stdout)
	for _, c := range res.Contents {
		if c.Binary() && terminal {
			return fmt.Errorf("%w: %s of %q is binary (%s, %s); save it with -o FILE",
				errBinaryToTerminal, termtext.Quote(c.URI), res.Server, dash(termtext.Neutralize(c.MimeType)), formatSize(int64(len(c.Blob))))
		}
	}
	for _, c := range res.Contents {
		if c.Binary() {
			if _, err := a.stdout.Write(c.Blob); err != nil {
				return err
			}
			continue
		}
		text := *c.Text
		if terminal {
			text = termtext.Neutralize(text)
		}
		if _, err := io.WriteString(a.stdout, text); err != nil {
			return err
		}
		if terminal && !strings.HasSuffix(text, "\n") {
			fmt.Fprintln(a.stdout)
		}
	}
	return nil
}

func (a *app) promptsCmd() *cobra.Command {
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "prompts [server]",
		Short: "List the prompts of one server, or of all, with their arguments",
		Long: `List the prompts a server offers (what hosts show as slash commands), with
their arguments, or those of every enabled server that has some. Get one with
` + "`freecode mcp prompt <server> <name> [key=value ...]`" + `.`,
		Args: rangeArgs(0, 1, "[server]"),
		RunE: func(c *cobra.Command, args []string) error {
			out, err := listFeature(a, c.Context(), args, verbose, "Listing the prompts of",
				func(eng api.Engine, server string) ([]wire.ServerPrompts, error) {
					res, err := eng.Prompts(c.Context(), server)
					return res.Servers, err
				})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(wire.Prompts{Servers: out})
			}
			a.writePrompts(out)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the lists come from: freecode serve or a one-shot session")
	return c
}

// writePrompts prints servers' prompts: name, arguments and description,
// the servers' text neutralised.
func (a *app) writePrompts(servers []wire.ServerPrompts) {
	if len(servers) == 0 {
		fmt.Fprintln(a.stdout, "No server offers prompts.")
		return
	}
	for i, s := range servers {
		for _, w := range s.Warnings {
			fmt.Fprintf(a.stderr, "warning: server %q: %s\n", s.Server, termtext.Neutralize(w))
		}
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", cell(s.Server), countOf(len(s.Prompts), "prompt"))
		for _, p := range s.Prompts {
			var args []string
			for _, arg := range p.Arguments {
				if arg.Required {
					args = append(args, arg.Name+"=… (required)")
				} else {
					args = append(args, "["+arg.Name+"=…]")
				}
			}
			fmt.Fprintf(a.stdout, "  %s", cell(p.Name))
			if len(args) > 0 {
				fmt.Fprintf(a.stdout, "  %s", termtext.Neutralize(strings.Join(args, " ")))
			}
			fmt.Fprintln(a.stdout)
			about := strings.TrimSpace(p.Title)
			if d := strings.TrimSpace(p.Description); d != "" && about != "" {
				about += ": " + d
			} else if d != "" {
				about = d
			}
			if about != "" {
				fmt.Fprintf(a.stdout, "      %s\n", strings.ReplaceAll(termtext.Neutralize(about), "\n", "\n      "))
			}
		}
	}
	fmt.Fprintf(a.stdout, "\nGet one with `freecode mcp prompt <server> <name> [key=value ...]`.\n")
}

func (a *app) promptCmd() *cobra.Command {
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "prompt <server> <name> [key=value ...]",
		Short: "Get one prompt of a server with its arguments, and print its messages",
		Long: `Get one prompt of a server, its arguments given as key=value (prompt
arguments are strings), and print its messages. The arguments are checked
against what the prompt declares before anything is sent: a required one
missing, or one the prompt does not have, is an error naming it.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError{fmt.Errorf("%s needs <server> <name> (got %d argument(s))\nUsage: %s", c.CommandPath(), len(args), c.UseLine())}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			name, prompt := args[0], args[1]
			promptArgs, err := parsePromptArgs(args[2:])
			if err != nil {
				return err
			}
			var res wire.PromptResult
			err = a.withServer(c.Context(), name, verbose, "Getting a prompt of",
				func(eng api.Engine) error {
					var err error
					res, err = eng.GetPrompt(c.Context(), name, prompt, promptArgs)
					return err
				})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			writePromptResult(a.stdout, res)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (the messages' content blocks as the server sent them)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the prompt comes from: freecode serve or a one-shot session")
	return c
}

// parsePromptArgs reads key=value arguments; a key given twice or an
// argument without "=" is a usage error.
func parsePromptArgs(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		switch {
		case !ok || k == "":
			return nil, usageError{fmt.Errorf("prompt argument %q is not key=value (for example city=Paris)", arg)}
		case given(out, k):
			return nil, usageError{fmt.Errorf("prompt argument %q is given twice", k)}
		}
		out[k] = v
	}
	return out, nil
}

func given(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// writePromptResult prints a prompt's messages: the role, then a text
// block's text, or a line saying what another block holds. Everything of
// the server's is neutralised; --json keeps it exact.
func writePromptResult(w io.Writer, res wire.PromptResult) {
	if d := strings.TrimSpace(res.Description); d != "" {
		fmt.Fprintf(w, "# %s\n\n", termtext.Neutralize(d))
	}
	for i, m := range res.Messages {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s:\n", cell(dash(m.Role)))
		fmt.Fprintln(w, indentBlock(termtext.Neutralize(blockText(res.Server, m.Content))))
	}
}

// indentBlock indents every line of s by two spaces.
func indentBlock(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// blockText is what a content block shows: a text block's text, an
// embedded resource's text, and for the rest a line saying what it is.
func blockText(server string, raw json.RawMessage) string {
	var b struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
		URI      string `json:"uri"`
		Resource struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     string  `json:"blob"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Sprintf("[a content block that is not a JSON object: %s]", raw)
	}
	switch b.Type {
	case wire.ContentText:
		return b.Text
	case wire.ContentImage, wire.ContentAudio:
		return fmt.Sprintf("[%s, %s, %s; see it with --json]", b.Type, dash(b.MimeType), formatSize(int64(base64.StdEncoding.DecodedLen(len(b.Data)))))
	case wire.ContentResource:
		if b.Resource.Text != nil {
			return fmt.Sprintf("[resource %s]\n%s", b.Resource.URI, *b.Resource.Text)
		}
		return fmt.Sprintf("[binary resource %s, %s; see it with --json]", b.Resource.URI, dash(b.Resource.MimeType))
	case wire.ContentResourceLink:
		return fmt.Sprintf("[resource link %s: read it with `%s`]", b.URI, termtext.ShellCommand("freecode", "mcp", "read", server, b.URI))
	}
	return fmt.Sprintf("[a %q block; see it with --json]", b.Type)
}

// rangeArgs is cobra.RangeArgs with a usage error.
func rangeArgs(minN, maxN int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < minN || len(args) > maxN {
			return usageError{fmt.Errorf("%s takes %s (got %d argument(s))\nUsage: %s", c.CommandPath(), names, len(args), c.UseLine())}
		}
		return nil
	}
}
