package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// formPrompt asks a person, one line at a time, for the answer to an
// elicitation: accept, decline or cancel, then, to accept a form, each
// field in turn with its type, choices and default shown. It only decides:
// question says what to show next, feed takes the line typed, and the
// caller does the reading and writing. An empty line takes a field's
// default (serve fills it in) or leaves an optional field out; a value
// that does not fit is asked again, with the reason.
type formPrompt struct {
	e    wire.Elicitation
	form *mcp.Form // nil in URL mode

	accepting bool // past the first question, asking the fields
	field     int  // the next field to ask, while accepting
	content   map[string]any
	action    mcp.ElicitAction // set when done
}

// newFormPrompt returns the prompt of e; an error if its form cannot be
// read (only a serve of another version would send one).
func newFormPrompt(e wire.Elicitation) (*formPrompt, error) {
	p := &formPrompt{e: e, content: map[string]any{}}
	if e.Mode != mcp.ElicitURL {
		form, err := mcp.ParseForm(e.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("elicitation %s: %w", e.ID, err)
		}
		p.form = form
	}
	return p, nil
}

// question is what to ask next; the server's text in it is neutralised.
func (p *formPrompt) question() string {
	if !p.accepting {
		if p.form == nil {
			return fmt.Sprintf("Will you open the page on %s yourself (FreeCode opens nothing)? [a]ccept, [d]ecline, [c]ancel: ", cell(p.e.Host))
		}
		return "Answer the form? [a]ccept, [d]ecline, [c]ancel: "
	}
	fd := p.form.Fields[p.field]
	about := fd.Title
	if about == "" {
		about = fd.Description
	}
	if about != "" {
		about = " — " + firstLine(about, 80)
	}
	return fmt.Sprintf("  %s (%s)%s: ", cell(fd.Name), cell(fd.Hint()), about)
}

// feed takes the line typed for the current question. It returns a
// problem to show before the question is asked again, or done once the
// answer is complete (answer).
func (p *formPrompt) feed(line string) (problem string, done bool) {
	line = strings.TrimRight(line, "\r\n")
	if !p.accepting {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "accept", "y", "yes":
			if p.form == nil || len(p.form.Fields) == 0 {
				p.action = mcp.ElicitAccept
				return "", true
			}
			p.accepting = true
			return "", false
		case "d", "decline", "n", "no":
			p.action = mcp.ElicitDecline
			return "", true
		case "c", "cancel":
			p.action = mcp.ElicitCancel
			return "", true
		}
		return "type a (accept), d (decline) or c (cancel)", false
	}
	fd := p.form.Fields[p.field]
	if strings.TrimSpace(line) == "" {
		if fd.Required && fd.Default == nil {
			return fd.Name + " is required", false
		}
		// Left out: serve fills in the default, if there is one.
	} else {
		v, err := p.form.Parse(fd.Name, line)
		if err != nil {
			return cell(err.Error()), false
		}
		p.content[fd.Name] = v
	}
	p.field++
	if p.field < len(p.form.Fields) {
		return "", false
	}
	p.action = mcp.ElicitAccept
	return "", true
}

// answer is the answer to send, once feed said done.
func (p *formPrompt) answer() wire.ElicitationAnswer {
	a := wire.ElicitationAnswer{Action: string(p.action)}
	if p.action == mcp.ElicitAccept && p.form != nil && len(p.content) > 0 {
		a.Content = p.content
	}
	return a
}

// terminalLines reads lines from the terminal f and delivers them, until
// f ends. The goroutine cannot be stopped while it waits for a line: a
// command that stops asking leaves it blocked until the process exits,
// which is soon (as with ask).
func terminalLines(f *os.File) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// elicitAsker shows the elicitations of the server a call through serve
// runs on (an elicitation names no call: one of another call of the same
// server shows too) and, on a terminal, asks one at a time with a
// formPrompt and sends the answer. Anyone else can answer first (`mcp
// elicitations answer`, a host): the question is then withdrawn. It is
// used by callThrough's loop only, so it needs no lock.
type elicitAsker struct {
	a        *app
	client   api.ElicitationAnswerer
	server   string
	terminal bool        // stdin is a terminal to ask on
	p        *formPrompt // the elicitation on the terminal; nil if none
}

// asking reports whether a question is on the terminal, waiting for a line.
func (el *elicitAsker) asking() bool { return el.p != nil }

// requested shows e, if its server is the called one, and asks it on the
// terminal if canAsk and nothing else is being asked.
func (el *elicitAsker) requested(e wire.Elicitation, canAsk bool) {
	if e.Server != el.server {
		return
	}
	w := el.a.stderr
	if el.p != nil {
		fmt.Fprintln(w)
	}
	printElicitation(w, e, e.Created)
	if el.terminal && canAsk && el.p == nil {
		if p, err := newFormPrompt(e); err == nil {
			fmt.Fprintf(w, "Elicitation %s (also `freecode mcp elicitations answer %s ...` from another terminal):\n", cell(e.ID), cell(e.ID))
			el.p = p
			fmt.Fprint(w, p.question())
			return
		}
	}
	fields := " [field=value ...]"
	if e.Mode == mcp.ElicitURL {
		fields = ""
	}
	fmt.Fprintf(w, "Waiting for the answer to elicitation %s of server %s: `freecode mcp elicitations answer %s accept%s` (or `decline`, `cancel`) from another terminal.\n",
		cell(e.ID), cell(e.Server), cell(e.ID), fields)
	if el.p != nil {
		fmt.Fprint(w, el.p.question()) // the one being asked goes on
	}
}

// line takes a line typed on the terminal (ok false: the terminal ended)
// for the question being asked, and sends the answer once it is complete.
// An answer serve refuses is shown and asked again from the start.
func (el *elicitAsker) line(ctx context.Context, line string, ok bool) error {
	if el.p == nil {
		return nil
	}
	w := el.a.stderr
	if !ok {
		id := cell(el.p.e.ID)
		el.p = nil
		fmt.Fprintf(w, "\nThe terminal ended; elicitation %s goes on waiting: answer it with `freecode mcp elicitations answer %s ...`.\n", id, id)
		return nil
	}
	problem, done := el.p.feed(line)
	if problem != "" {
		fmt.Fprintf(w, "  %s\n", problem)
	}
	if !done {
		fmt.Fprint(w, el.p.question())
		return nil
	}
	p := el.p
	el.p = nil
	ans := p.answer()
	sent, err := el.client.AnswerElicitation(ctx, p.e.ID, ans)
	switch {
	case errors.Is(err, api.ErrNotFound):
		fmt.Fprintf(w, "Elicitation %s no longer waits (answered elsewhere, cancelled or timed out).\n", cell(p.e.ID))
	case errors.Is(err, api.ErrInvalidAnswer):
		fmt.Fprintf(w, "  %s\n", cell(err.Error()))
		el.p, _ = newFormPrompt(p.e) // it was read before
		fmt.Fprint(w, el.p.question())
	case err != nil:
		return fmt.Errorf("answer elicitation %s: %w", p.e.ID, err)
	default:
		printAnswered(w, p.e, sent, ans.Content)
	}
	return nil
}

// answered withdraws the question on the terminal when its elicitation
// ended otherwise.
func (el *elicitAsker) answered(ans wire.ElicitationAnswered) {
	if el.p == nil || ans.ID != el.p.e.ID {
		return
	}
	el.p = nil
	fmt.Fprintf(el.a.stderr, "\nAnswered from elsewhere: %s.\n", elicitationEnded(ans))
}

// elicitationEnded says how an elicitation ended.
func elicitationEnded(ans wire.ElicitationAnswered) string {
	switch {
	case ans.Reason == api.ReasonTimeout:
		return "cancelled, as nobody answered in time"
	case ans.Action == "":
		return "withdrawn (" + cell(ans.Reason) + ")"
	case ans.Action == string(mcp.ElicitAccept):
		return "accepted"
	case ans.Action == string(mcp.ElicitDecline):
		return "declined"
	}
	return "cancelled"
}

// terminalElicit answers a one-shot session's elicitations on the terminal
// term, one at a time, with a formPrompt: the answer is checked against
// the whole form (mcp.Form.Complete) and asked again if it does not fit.
// A handler returns once its ctx ends; the terminal's reader goroutine
// stays (see terminalLines).
//
// progress, if not nil, is the progress line of the call the questions
// come with: it is paused while a question is on the terminal.
func (a *app) terminalElicit(term *os.File, progress *progressLine) mcp.ElicitHandler {
	turn := make(chan struct{}, 1) // held by the elicitation on the terminal
	var in termInput               // used only by the holder of turn
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		select {
		case turn <- struct{}{}:
			defer func() { <-turn }()
		case <-ctx.Done():
			return mcp.ElicitResult{}, context.Cause(ctx)
		}
		progress.pause()
		defer progress.resume()
		w := a.stderr
		we := wire.Elicitation{Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL, Host: e.Host()}
		if e.Form != nil {
			we.RequestedSchema = e.Form.Schema
		}
		printQuestion(w, we)
		for {
			p, err := newFormPrompt(we)
			if err != nil {
				return mcp.ElicitResult{}, err
			}
			fmt.Fprint(w, p.question())
			for done := false; !done; {
				lines := in.lines(term)
				if lines == nil {
					fmt.Fprintln(w, "\nThe terminal ended: declined.")
					return mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
				}
				select {
				case <-ctx.Done():
					fmt.Fprintln(w, "\nThe question is withdrawn.")
					return mcp.ElicitResult{}, context.Cause(ctx)
				case line, ok := <-lines:
					if !ok {
						in.closed = true
						continue
					}
					var problem string
					if problem, done = p.feed(line); problem != "" {
						fmt.Fprintf(w, "  %s\n", problem)
					}
					if !done {
						fmt.Fprint(w, p.question())
					}
				}
			}
			ans := p.answer()
			res := mcp.ElicitResult{Action: mcp.ElicitAction(ans.Action), Content: ans.Content}
			if res.Action != mcp.ElicitAccept || e.Form == nil {
				return res, nil
			}
			if _, err := e.Form.Complete(ans.Content); err != nil {
				fmt.Fprintf(w, "  %s\n", cell(err.Error()))
				continue
			}
			return res, nil
		}
	}
}

// watchElicit answers the elicitations of `mcp start --watch` on the
// terminal term (terminalElicit), each only once open is closed: one that
// comes earlier waits, and one whose ctx ends first (the session ended)
// returns without asking. The answer sent is confirmed on stderr, as no
// call's result follows it.
func (a *app) watchElicit(open <-chan struct{}, term *os.File) mcp.ElicitHandler {
	ask := a.terminalElicit(term, nil)
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		select {
		case <-open:
		case <-ctx.Done():
			return mcp.ElicitResult{}, context.Cause(ctx)
		}
		res, err := ask(ctx, e)
		if err == nil {
			fmt.Fprintf(a.stderr, "Answered server %s: %s.\n", cell(e.Server), elicitationEnded(wire.ElicitationAnswered{Action: string(res.Action)}))
		}
		return res, err
	}
}
