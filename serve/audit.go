package serve

import (
	"context"
	"errors"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// auditCloseTimeout bounds how long Close waits for the queued audit
// records to be written.
const auditCloseTimeout = 5 * time.Second

// UnnamedClient is the host of a call whose client did not name itself
// (api.WithClient, api.ClientHeader).
const UnnamedClient = "api (unnamed client)"

// openAudit opens the home's audit log. A log that cannot be opened is
// logged and reported in the status (Status.Audit.Error); calls go on
// without it (see audit.Logger for why).
func (c *Core) openAudit() {
	store, err := audit.Open(context.Background(), c.opts.Home, audit.Options{})
	if err != nil {
		c.opts.Logger.Error(err, "no audit log: tool calls go on unrecorded")
		c.auditErr = err.Error()
		return
	}
	c.audit = audit.NewLogger(store, c.opts.Logger.WithName("audit"))
}

// closeAudit writes what is queued, within auditCloseTimeout.
func (c *Core) closeAudit() {
	if c.audit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditCloseTimeout)
	defer cancel()
	if err := c.audit.Close(ctx); err != nil {
		c.opts.Logger.Error(err, "audit records still queued were lost")
	}
}

// auditStatus is the audit log's part of the status.
func (c *Core) auditStatus() *wire.AuditStatus {
	if c.audit == nil {
		return &wire.AuditStatus{Path: audit.Dir(c.opts.Home), Error: c.auditErr}
	}
	h := c.audit.Health()
	return &wire.AuditStatus{Path: h.Path, Written: h.Written, Lost: h.Lost, Error: h.Err, ErrorAt: h.ErrAt}
}

// report is the orchestrator's Options.Report: each call is counted for
// its server's numbers (when it reached the server) and recorded in the
// audit log with the host that asked for it (api.ClientOf ctx). Neither
// blocks.
func (c *Core) report(ctx context.Context, r orchestrator.Report) {
	oc := r.Outcome
	failed := oc.Err != nil || oc.Result.IsError
	if r.Server != "" && r.Server != registry.SourceBuiltin && oc.Attempts > 0 {
		c.stats.add(r.Server, time.Now(), oc.Duration, failed)
	}
	if c.audit == nil {
		return
	}
	host := api.ClientOf(ctx)
	if host == "" {
		host = UnnamedClient
	}
	rec := audit.Record{Kind: audit.KindCall, Host: host, CallID: r.Call.ID, Tool: r.Call.Tool, Server: r.Server,
		Args: c.audit.Key().Digest(r.Call.Args), Sensitive: r.Sensitive, DurationMS: oc.Duration.Milliseconds(), Attempts: oc.Attempts}
	if r.Decided {
		rec.Decision, rec.Rule = r.Decision.Action.String(), r.Decision.Rule
	}
	if r.Asked {
		rec.Approval, rec.By = approvalOutcome(r), r.AnsweredBy
	}
	switch {
	case oc.Err != nil:
		rec.Status = api.ErrorKind(oc.Err)
	case oc.Result.IsError:
		rec.Status = audit.StatusToolError
	default:
		rec.Status = audit.StatusOK
	}
	c.audit.Log(rec)
}

// approvalOutcome says how an asked call's approval ended.
func approvalOutcome(r orchestrator.Report) string {
	switch {
	case r.NoApprover:
		return audit.ApprovalNone
	case r.Approved:
		return audit.ApprovalApproved
	case errors.Is(r.ApprovalErr, api.ErrApprovalTimeout):
		return audit.ApprovalTimeout
	case errors.Is(r.ApprovalErr, context.Canceled), errors.Is(r.ApprovalErr, context.DeadlineExceeded):
		return audit.ApprovalCanceled
	case r.ApprovalErr != nil:
		return audit.ApprovalError
	}
	return audit.ApprovalRefused
}
