package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// connectProgress is how far connecting got and how long it may take, for
// the deadline and the message of a timeout. budget may be read from any
// goroutine; the rest is only used by the goroutine running Connect.
type connectProgress struct {
	server string // the server's name, for messages
	// began is when Connect began: the budget counts from then, for the
	// deadline and for the start meter's window alike (starting the
	// process can take a while on a loaded machine).
	began   time.Time
	timeout time.Duration // Spec.Timeout
	// budget is connecting's budget so far, in nanoseconds: timeout, or
	// longer while the server keeps working (Options.WorkingTimeout).
	budget atomic.Int64

	// step is the step under way; tools is what tools/list received, and
	// feature what the list of resources, templates or prompts being made
	// received; raws is what tools/list answered, until Connect converts
	// it.
	step    string
	tools   listProgress
	feature listProgress
	raws    []json.RawMessage
}

func newConnectProgress(server string, began time.Time, timeout time.Duration) *connectProgress {
	c := &connectProgress{server: server, began: began, timeout: timeout}
	c.budget.Store(int64(timeout))
	return c
}

// workingDeadline returns a context for connecting that ends with the
// cause errConnectTimeout once the budget has run out: the timeout, and,
// each time it runs out while the server is still working, twice the time
// so far up to Options.WorkingTimeout. cancel ends it, and returns once
// the goroutine that keeps the time has ended: Options.OnStillWorking is
// not called after Connect returned. proc is the local process starting;
// most is Options.WorkingTimeout. stillWorking is told each time the
// budget grows (as Options.OnStillWorking is), from the goroutine that
// keeps the time.
func (c *connectProgress) workingDeadline(ctx context.Context, proc processLink, most time.Duration,
	stillWorking func(how string, spent, budget time.Duration)) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	budget := c.timeout
	done := make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(time.Until(c.began.Add(budget)))
		defer timer.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-timer.C:
			}
			how := proc.progress()
			if how == "" || budget >= most {
				cancel(errConnectTimeout)
				return
			}
			next := min(2*budget, most)
			proc.expect(next)
			stillWorking(how, budget, next)
			// From when Connect began, as the first: a timer that fired
			// late on a loaded machine does not push the end further.
			timer.Reset(time.Until(c.began.Add(next)))
			budget = next
			c.budget.Store(int64(budget))
		}
	}()
	return cctx, func() {
		cancel(nil)
		<-done
	}
}

// spent is connecting's budget: the timeout, or longer (workingDeadline).
func (c *connectProgress) spent() time.Duration { return time.Duration(c.budget.Load()) }

// timeoutMessage says which step of connecting ran out of time, and for
// tools/list how far it got.
func (c *connectProgress) timeoutMessage(step string) string {
	name := c.server
	switch step {
	case stepToolsList:
		return fmt.Sprintf("server %q: no answer to tools/list within %s (%s)", name, c.spent(), c.tools.soFar())
	case stepResourcesList, stepTemplatesList, stepPromptsList:
		return fmt.Sprintf("server %q: no answer to %s within %s (%s)", name, step, c.spent(), c.feature.soFar())
	case stepDone:
		msg := fmt.Sprintf("server %q: connecting did not finish within %s", name, c.spent())
		if c.tools.pages > 0 {
			msg += fmt.Sprintf(" (tools/list answered: %s)", c.tools)
		}
		return msg
	}
	return fmt.Sprintf("server %q: no answer to %s within %s", name, step, c.spent())
}

// listProgress counts what one list (tools/list, resources/list, ...)
// received.
type listProgress struct {
	pages, items int
	// noun names one item in messages; "" is "tool".
	noun string
}

func (p listProgress) String() string {
	noun := p.noun
	if noun == "" {
		noun = "tool"
	}
	return fmt.Sprintf("%s in %s", plural(p.items, noun), plural(p.pages, "page"))
}

// soFar describes an unfinished list.
func (p listProgress) soFar() string {
	if p.pages == 0 {
		return "no page received yet"
	}
	return "received " + p.String() + " so far"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
