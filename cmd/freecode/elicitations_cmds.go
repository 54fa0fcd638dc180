package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// answerElicitationUse is how to answer, as the listing and the errors
// say it.
const answerElicitationUse = "freecode mcp elicitations answer <id> accept [field=value ...]` (or `decline`, `cancel`)"

func (a *app) elicitationsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "elicitations",
		Short: "List the servers' questions waiting for an answer in freecode serve",
		Long: `List the elicitations that wait for an answer in the running freecode serve:
questions a server asks while it runs a tool, either a form (its fields,
their types, choices and defaults are shown) or a page to open (its URL
and host are shown; FreeCode opens nothing itself). Answer one with
` + "`" + answerElicitationUse + `.

An elicitation nobody answers is cancelled after serve's elicitation
timeout; while no client listens to serve's events (` + "`freecode mcp call`" + `
does, and so does a host) nobody can learn of one, and serve declines it
at once.`,
		Args: exactArgs(0, "no arguments (answer one with `freecode mcp elicitations answer <id> ...`)"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			pending, err := client.Elicitations(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if pending == nil {
					pending = []wire.Elicitation{}
				}
				return a.printJSON(pending)
			}
			if len(pending) == 0 {
				fmt.Fprintln(a.stdout, "No elicitations are waiting for an answer.")
				return nil
			}
			now := time.Now()
			for _, e := range pending {
				printElicitation(a.stdout, e, now)
			}
			fmt.Fprintf(a.stdout, "Answer with `%s; fields left out take their defaults.\n", answerElicitationUse)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(a.answerElicitationCmd())
	return c
}

// printElicitation shows one pending elicitation: who asks, what, and how
// to answer it. Everything but its id, server name and times is the
// server's text, neutralised.
func printElicitation(w io.Writer, e wire.Elicitation, now time.Time) {
	fmt.Fprintf(w, "%s  server %s asks (%s, waiting %s, cancelled in %s without an answer):\n",
		cell(e.ID), cell(e.Server), cell(e.Mode), ago(e.Created, now), roundDur(e.Expires.Sub(now)))
	printQuestionBody(w, e)
}

// printQuestion shows a question of a one-shot session's server, which
// waits nowhere but on this terminal.
func printQuestion(w io.Writer, e wire.Elicitation) {
	fmt.Fprintf(w, "Server %s asks (%s):\n", cell(e.Server), cell(e.Mode))
	printQuestionBody(w, e)
}

// printQuestionBody is the message and the fields (or page) of e.
func printQuestionBody(w io.Writer, e wire.Elicitation) {
	for line := range strings.SplitSeq(termtext.Neutralize(e.Message), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
	switch e.Mode {
	case mcp.ElicitURL:
		fmt.Fprintf(w, "    page  %s\n    host  %s\n", cell(e.URL), cell(e.Host))
		fmt.Fprintln(w, "    Accepting tells the server you will open the page yourself; FreeCode opens nothing.")
	default:
		form, err := mcp.ParseForm(e.RequestedSchema)
		if err != nil { // serve checked it: only an older or newer serve gets here
			fmt.Fprintf(w, "    (its form cannot be shown: %s)\n", cell(err.Error()))
			break
		}
		width := 0
		for _, fd := range form.Fields {
			width = max(width, len(cell(fd.Name)))
		}
		for _, fd := range form.Fields {
			about := fd.Title
			if fd.Description != "" {
				about = strings.TrimSpace(about + ": " + fd.Description)
				about = strings.TrimPrefix(about, ": ")
			}
			line := fmt.Sprintf("    %-*s  %s", width, cell(fd.Name), cell(fd.Hint()))
			if about != "" {
				line += " — " + firstLine(about, 80)
			}
			fmt.Fprintln(w, line)
		}
		if len(form.Fields) == 0 {
			fmt.Fprintln(w, "    (no fields: accept or decline)")
		}
	}
	fmt.Fprintln(w)
}

func (a *app) answerElicitationCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "answer <id> accept|decline|cancel [field=value ...]",
		Short: "Answer an elicitation waiting in freecode serve",
		Long: `Answer a server's elicitation waiting in the running freecode serve (see
` + "`freecode mcp elicitations`" + `): accept, with the form's fields as field=value
(a number; yes or no; a choice by its value, title or number; several
choices separated by commas), decline, or cancel. Fields left out take the
form's defaults; an answer that does not fit the form is refused, and the
elicitation goes on waiting. Accepting a page to open (URL mode) sends no
fields: it tells the server that you will open the page yourself.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError{fmt.Errorf("%s needs <id> and accept, decline or cancel (got %d argument(s))\nUsage: %s", c.CommandPath(), len(args), c.UseLine())}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			id, fields := args[0], args[2:]
			action, err := mcp.ParseElicitAction(args[1])
			if err != nil {
				return usageError{fmt.Errorf("elicitation %s: %w", termtext.Quote(id), err)}
			}
			if action != mcp.ElicitAccept && len(fields) > 0 {
				return usageError{fmt.Errorf("fields go only with accept, not %s", action)}
			}
			client, err := a.dialServeOf(c)
			if err != nil {
				return err
			}
			defer client.Close()
			pending, err := client.Elicitations(c.Context())
			if err != nil {
				return err
			}
			i := slices.IndexFunc(pending, func(e wire.Elicitation) bool { return e.ID == id })
			if i < 0 {
				return notPending(id)
			}
			e := pending[i]
			content, err := elicitationContent(e, fields)
			if err != nil {
				return err
			}
			sent, err := client.AnswerElicitation(c.Context(), id, wire.ElicitationAnswer{Action: string(action), Content: content})
			switch {
			case errors.Is(err, api.ErrNotFound):
				return notPending(id)
			case errors.Is(err, api.ErrInvalidAnswer):
				return fmt.Errorf("%w\nthe elicitation goes on waiting; see its fields with `freecode mcp elicitations`", err)
			case err != nil:
				return err
			}
			printAnswered(a.stdout, e, sent, content)
			return nil
		},
	}
}

func notPending(id string) error {
	return fmt.Errorf("no elicitation %s is waiting (it may have been answered, cancelled or timed out); see `freecode mcp elicitations`", termtext.Quote(id))
}

// elicitationContent reads field=value arguments as the values of e's form
// (mcp.Form.Parse): nil without any. serve checks the whole answer again
// and fills in the defaults.
func elicitationContent(e wire.Elicitation, fields []string) (map[string]any, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	if e.Mode == mcp.ElicitURL {
		return nil, usageError{fmt.Errorf("elicitation %s asks to open a page: accept it without fields", e.ID)}
	}
	form, err := mcp.ParseForm(e.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("elicitation %s: %w", e.ID, err)
	}
	content := map[string]any{}
	for _, f := range fields {
		name, text, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, usageError{fmt.Errorf("%s is not field=value", termtext.Quote(f))}
		}
		if _, dup := content[name]; dup {
			return nil, usageError{fmt.Errorf("field %s is given twice", termtext.Quote(name))}
		}
		v, err := form.Parse(name, text)
		if err != nil {
			return nil, fmt.Errorf("elicitation %s: %w; see its fields with `freecode mcp elicitations`", e.ID, err)
		}
		content[name] = v
	}
	return content, nil
}

// printAnswered says what went to the server: the names of the fields
// sent, never their values (a form may ask for a password).
func printAnswered(w io.Writer, e wire.Elicitation, sent wire.ElicitationAnswered, given map[string]any) {
	who := fmt.Sprintf("%s of server %s", cell(e.ID), cell(e.Server))
	switch sent.Action {
	case string(mcp.ElicitDecline):
		fmt.Fprintf(w, "Declined %s.\n", who)
		return
	case string(mcp.ElicitCancel):
		fmt.Fprintf(w, "Cancelled %s.\n", who)
		return
	}
	if e.Mode == mcp.ElicitURL {
		fmt.Fprintf(w, "Accepted %s: open the page on %s yourself (FreeCode opens nothing):\n  %s\n", who, cell(e.Host), cell(e.URL))
		return
	}
	var answered, defaults []string
	for name := range sent.Content {
		if _, ok := given[name]; ok {
			answered = append(answered, cell(name))
		} else {
			defaults = append(defaults, cell(name))
		}
	}
	slices.Sort(answered)
	slices.Sort(defaults)
	var parts []string
	if len(answered) > 0 {
		parts = append(parts, "sent "+strings.Join(answered, ", "))
	}
	switch len(defaults) {
	case 0:
	case 1:
		parts = append(parts, "the default of "+defaults[0])
	default:
		parts = append(parts, "the defaults of "+strings.Join(defaults, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "sent no fields")
	}
	fmt.Fprintf(w, "Accepted %s: %s.\n", who, strings.Join(parts, "; "))
}
