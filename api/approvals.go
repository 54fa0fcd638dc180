package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
)

// DefaultApprovalTimeout bounds how long a call waits for its approval.
const DefaultApprovalTimeout = 5 * time.Minute

// ErrApprovalTimeout is the error of an approval nobody answered in time.
var ErrApprovalTimeout = errors.New("nobody answered the approval request in time")

// Approvals is a orchestrator.Approver whose answers come through the API: every
// request becomes a pending Approval, announced with ApprovalRequested on the
// bus, until Answer, the timeout or the caller's ctx ends it. It is safe for
// concurrent use.
type Approvals struct {
	bus     *event.Bus
	timeout time.Duration

	mu      sync.Mutex // guards pending and next
	pending map[string]*pendingApproval
	next    uint64
}

type pendingApproval struct {
	Approval
	answer chan approvalAnswer // buffered(1); Answer sends at most once (it deletes the entry first)
}

// approvalAnswer is an approval's answer and who gave it.
type approvalAnswer struct {
	ok bool
	by string
}

// NewApprovals returns an Approvals publishing on bus (nil: no events);
// timeout <= 0 means DefaultApprovalTimeout.
func NewApprovals(bus *event.Bus, timeout time.Duration) *Approvals {
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	return &Approvals{bus: bus, timeout: timeout, pending: map[string]*pendingApproval{}}
}

// Approve implements orchestrator.Approver. It blocks until the request is
// answered (true only for an explicit approval), the timeout passes
// (ErrApprovalTimeout) or ctx ends (ctx's error).
func (a *Approvals) Approve(ctx context.Context, req orchestrator.ApprovalRequest) (bool, error) {
	a.mu.Lock()
	a.next++
	p := &pendingApproval{
		Approval: Approval{
			ID: "a" + strconv.FormatUint(a.next, 10), CallID: req.CallID, Tool: req.ToolID,
			Args: req.Args, ReadOnly: req.ReadOnly, Reason: req.Reason, Rule: req.Rule, Sensitive: req.Sensitive, Created: time.Now(),
		},
		answer: make(chan approvalAnswer, 1),
	}
	a.pending[p.ID] = p
	a.mu.Unlock()
	a.bus.Publish(ApprovalRequested{p.Approval})

	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case ans := <-p.answer:
		orchestrator.AnsweredBy(ctx, ans.by)
		a.bus.Publish(ApprovalAnswered{ID: p.ID, Approved: ans.ok})
		return ans.ok, nil
	case <-timer.C:
		if a.drop(p.ID) {
			a.bus.Publish(ApprovalAnswered{ID: p.ID, Reason: "timeout"})
			return false, fmt.Errorf("%w (%s)", ErrApprovalTimeout, a.timeout)
		}
	case <-ctx.Done():
		if a.drop(p.ID) {
			a.bus.Publish(ApprovalAnswered{ID: p.ID, Reason: "canceled"})
			return false, ctx.Err()
		}
	}
	// Answer removed the entry first, so its answer is in the channel.
	ans := <-p.answer
	orchestrator.AnsweredBy(ctx, ans.by)
	a.bus.Publish(ApprovalAnswered{ID: p.ID, Approved: ans.ok})
	return ans.ok, nil
}

// drop removes a pending approval; false means Answer got there first.
func (a *Approvals) drop(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.pending[id]; !ok {
		return false
	}
	delete(a.pending, id)
	return true
}

// Answer approves or refuses the pending approval id. It wraps ErrNotFound
// when there is no such pending approval (never was, or already answered).
func (a *Approvals) Answer(id string, approve bool) error {
	return a.AnswerBy(id, approve, "")
}

// AnswerBy is Answer saying who answered (ClientOf the request), which
// the orchestrator's report of the call carries (orchestrator.AnsweredBy).
func (a *Approvals) AnswerBy(id string, approve bool, by string) error {
	a.mu.Lock()
	p, ok := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("approval %q: %w (it may have been answered or timed out)", id, ErrNotFound)
	}
	p.answer <- approvalAnswer{ok: approve, by: by}
	return nil
}

// Pending lists the approvals waiting for an answer, oldest first.
func (a *Approvals) Pending() []Approval {
	a.mu.Lock()
	out := make([]Approval, 0, len(a.pending))
	for _, p := range a.pending {
		out = append(out, p.Approval)
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Approval) int {
		if c := len(x.ID) - len(y.ID); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}
