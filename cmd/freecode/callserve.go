package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/wire"
)

// callEngine is the engine a call goes through, with how it reaches the
// tool (viaServe, viaOneShot) and the tool's server ("" for a built-in).
type callEngine struct {
	api.Engine
	via    string
	server string
}

// callThrough runs the call on eng: serve's, under serve's rules and
// approvals, or a one-shot engine's, under the config's, whose approvals
// and elicitations its own options answer on the terminal (or --yes), so
// that none reaches its queues. The call is named (api.CallOptions.ID)
// so that its own approval can be told from others': this command
// answers it — with --yes, or by asking on its terminal — while `freecode
// mcp approve` (or any other client of serve) can answer it too; the
// first answer counts. Without a terminal and without --yes it waits for
// such an answer, up to serve's approval timeout. The server's
// elicitations meanwhile are shown, and asked on the terminal field by
// field (elicitAsker); --yes never answers them. progress shows the
// call's progress.
func (a *app) callThrough(ctx context.Context, eng callEngine, id string, args json.RawMessage, o callOpts, progress *progressLine) error {
	callID, err := newCallID()
	if err != nil {
		return err
	}
	// The goroutines below end once ctx is cancelled and the stream
	// closed, which the deferred calls do in that order, before the wait.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribed before the call starts, so its approval is not missed.
	events, err := eng.Events(ctx)
	if err != nil {
		if eng.via == viaServe {
			err = fmt.Errorf("freecode serve: %w", err)
		}
		return err
	}
	defer events.Close()
	evc := make(chan api.Event)
	wg.Go(func() {
		defer close(evc)
		for {
			ev, err := events.Next()
			if err != nil {
				return
			}
			select {
			case evc <- ev:
			case <-ctx.Done():
				return
			}
		}
	})

	type result struct {
		resp api.CallResponse
		err  error
	}
	done := make(chan result, 1)
	wg.Go(func() {
		resp, err := eng.CallWith(ctx, id, args, api.CallOptions{ID: callID, Timeout: o.timeout})
		done <- result{resp, err}
	})

	var mine string    // the id of this call's approval, once asked
	var approving bool // the approval question is on the terminal
	term := a.stdinTerminal()
	var in termInput // the terminal's lines, read once something is asked
	el := &elicitAsker{a: a, client: eng, server: eng.server, terminal: term != nil}
	for {
		var lines <-chan string // nil (no case) while nothing is asked
		if approving || el.asking() {
			lines = in.lines(term)
		}
		select {
		case res := <-done:
			progress.end()
			switch {
			case el.asking():
				// Its elicitation_answered may still be on its way.
				fmt.Fprintln(a.stderr, "\nThe call ended; the question is withdrawn.")
			case approving:
				// The call's answer came before its approval_answered:
				// what it is says how the approval was answered.
				var apiErr *api.Error
				switch {
				case res.err == nil:
					fmt.Fprintln(a.stderr, "\nAnswered from elsewhere: approved.")
				case errors.As(res.err, &apiErr) && apiErr.Call != nil && apiErr.Call.Kind == "not_approved":
					fmt.Fprintln(a.stderr, "\nAnswered from elsewhere: not approved.")
				case errors.As(res.err, &apiErr) && apiErr.Call != nil:
					fmt.Fprintln(a.stderr, "\nAnswered from elsewhere: approved.")
				default:
					fmt.Fprintln(a.stderr)
				}
			}
			return a.callOutcome(ctx, eng, id, res.resp, res.err, o.asJSON)
		case line, ok := <-lines:
			if !ok {
				in.closed = true // the terminal ended: nothing more to read
			}
			if approving {
				approving = false
				s := strings.TrimSpace(strings.ToLower(line))
				if err := eng.Answer(ctx, mine, s == "y" || s == "yes"); err != nil && !errors.Is(err, api.ErrNotFound) {
					return fmt.Errorf("answer approval %s: %w", mine, err)
				}
				continue
			}
			if err := el.line(ctx, line, ok); err != nil {
				return err
			}
		case ev, ok := <-evc:
			if !ok {
				evc = nil // serve ended the stream: the call's answer tells why
				continue
			}
			switch ev.Kind {
			case wire.KindCallProgress:
				var p wire.CallProgress
				if !approving && !el.asking() && ev.Decode(&p) == nil && p.CallID == callID {
					progress.show(p.Progress)
				}
			case wire.KindApprovalRequested:
				var ap api.Approval
				if ev.Decode(&ap) != nil || ap.CallID != callID {
					continue
				}
				mine = ap.ID
				switch {
				case o.yes:
					if err := eng.Answer(ctx, mine, true); err != nil && !errors.Is(err, api.ErrNotFound) {
						return fmt.Errorf("approve %s: %w", mine, err)
					}
				case term != nil && !in.closed:
					progress.end()
					fmt.Fprintf(a.stderr, "Approval %s (also `freecode mcp approve %s` or `deny %s` from another terminal):\n", mine, mine, mine)
					fmt.Fprint(a.stderr, termtext.Neutralize(approvalQuestion(ap.Tool, ap.Args, ap.Reason)))
					approving = true
				default:
					fmt.Fprintf(a.stderr, "Waiting for approval %s of %s: answer it with `freecode mcp approve %s` or `freecode mcp deny %s` (it is refused after %s without an answer).\n",
						mine, termtext.Neutralize(ap.Tool), mine, mine, api.DefaultApprovalTimeout)
				}
			case wire.KindApprovalAnswered:
				var ans api.ApprovalAnswered
				if ev.Decode(&ans) != nil || mine == "" || ans.ID != mine {
					continue
				}
				if approving {
					approving = false
					fmt.Fprintf(a.stderr, "\nAnswered from elsewhere: %s.\n", answeredText(ans))
				}
			case wire.KindElicitationRequested:
				var e wire.Elicitation
				if ev.Decode(&e) == nil {
					progress.end()
					el.requested(e, !approving && !in.closed)
				}
			case wire.KindElicitationAnswered:
				var ans wire.ElicitationAnswered
				if ev.Decode(&ans) == nil {
					el.answered(ans)
				}
			}
		}
	}
}

// termInput is the terminal's lines, read by one goroutine
// (terminalLines) from the first question on, so that no line is taken
// by a reader of an earlier question.
type termInput struct {
	ch     <-chan string
	closed bool // the terminal ended
}

func (t *termInput) lines(f *os.File) <-chan string {
	if t.ch == nil && !t.closed {
		t.ch = terminalLines(f)
	}
	if t.closed {
		return nil
	}
	return t.ch
}

// progressLine shows a call's progress on one line of stderr, rewritten
// in place, when stderr is a terminal; otherwise it shows nothing. Its
// methods may be called from any goroutine.
type progressLine struct {
	mu     sync.Mutex // guards shown, paused and writes to w
	w      io.Writer  // nil: not a terminal
	shown  bool       // a line is on the terminal
	paused int        // pauses in force (pause): show shows nothing
}

// pause ends the line and keeps it from showing until resume, while a
// question is on the terminal. A nil l does nothing.
func (l *progressLine) pause() {
	if l == nil {
		return
	}
	l.end()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paused++
}

// resume undoes one pause.
func (l *progressLine) resume() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paused--
}

func (a *app) progressLine() *progressLine {
	if !writerIsTerminal(a.stderr) {
		return &progressLine{}
	}
	return &progressLine{w: a.stderr}
}

// show replaces the line with p.
func (l *progressLine) show(p wire.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil || l.paused > 0 {
		return
	}
	// Carriage return and erase-line: the previous line goes.
	fmt.Fprintf(l.w, "\r\x1b[K%s", progressText(p))
	l.shown = true
}

// end ends the line, if one is shown, so that what follows starts on a
// line of its own.
func (l *progressLine) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprintln(l.w)
		l.shown = false
	}
}

// maxProgressText bounds the message of a progress line, so that it stays
// one line on most terminals.
const maxProgressText = 100

// progressText is p as a progress line shows it: "progress 2/3: step 2",
// the message on one line, neutralized and cut to maxProgressText runes.
func progressText(p wire.Progress) string {
	text := "progress " + strconv.FormatFloat(p.Progress, 'f', -1, 64)
	if p.Total > 0 {
		text += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
	}
	msg := strings.Join(strings.Fields(p.Message), " ")
	if r := []rune(msg); len(r) > maxProgressText {
		msg = string(r[:maxProgressText]) + "…"
	}
	if msg != "" {
		text += ": " + termtext.Neutralize(msg)
	}
	return text
}

// answeredText says how an approval ended.
func answeredText(ans api.ApprovalAnswered) string {
	switch {
	case ans.Approved:
		return "approved"
	case ans.Reason != "":
		return "refused (" + ans.Reason + ")"
	}
	return "denied"
}

// callOutcome shows the answer of a call through eng.
func (a *app) callOutcome(ctx context.Context, eng callEngine, id string, resp api.CallResponse, err error, asJSON bool) error {
	var apiErr *api.Error
	if err != nil && (!errors.As(err, &apiErr) || apiErr.Call == nil) {
		if eng.via == viaServe {
			return fmt.Errorf("call %s through freecode serve: %w", id, err) // no answer
		}
		return err
	}
	v := outcomeView{Tool: id, Via: eng.via, IsError: resp.Result.IsError, Error: resp.Error, Content: resp.Result.Content,
		Structured: resp.Result.Structured, Meta: resp.Result.Meta, Attempts: resp.Attempts, DurationMS: float64(resp.DurationMS)}
	if v.Content == nil {
		v.Content = []wire.Content{}
	}
	var callErr error
	if resp.Error != "" {
		callErr = errors.New(resp.Error)
		if resp.Kind == api.KindUnknownTool {
			var ids []string
			if tools, err := eng.Tools(ctx, ""); err == nil {
				for _, t := range tools.Tools {
					ids = append(ids, t.Name)
				}
			}
			var hidden []wire.HiddenTool
			if name := serverOfTool(id); name != "" {
				if st, err := eng.AllServerTools(ctx, name); err == nil {
					hidden = st.Hidden
				}
			}
			callErr = unknownTool(callErr, id, ids, hidden)
			v.Error = callErr.Error()
		}
	}
	return a.printOutcome(v, resp.Result.Text(), callErr, asJSON)
}

// newCallID names a call of this process for serve.
func newCallID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("call id: %w", err)
	}
	return fmt.Sprintf("cli-%d-%s", os.Getpid(), hex.EncodeToString(b[:])), nil
}

// stdinTerminal is stdin when it is a terminal, else nil.
func (a *app) stdinTerminal() *os.File {
	if f, ok := a.stdin.(*os.File); ok && isTerminal(f) {
		return f
	}
	return nil
}

// approvalQuestion is what the terminal is asked about a call.
func approvalQuestion(tool string, args json.RawMessage, reason string) string {
	return fmt.Sprintf("Allow %s %s? (%s) [y/N] ", tool, args, reason)
}

// ask puts question on stderr and returns a channel that gets the answer
// read from the terminal on stdin: true for y or yes. The reading goroutine
// ends with the line or when stdin closes; a command that stops waiting
// earlier leaves it blocked until the process exits. Call it only when
// stdinTerminal is not nil.
func (a *app) ask(question string) <-chan bool {
	fmt.Fprint(a.stderr, termtext.Neutralize(question))
	answer := make(chan bool, 1)
	f := a.stdinTerminal()
	go func() {
		line, _ := bufio.NewReader(f).ReadString('\n')
		s := strings.TrimSpace(strings.ToLower(line))
		answer <- s == "y" || s == "yes"
	}()
	return answer
}
