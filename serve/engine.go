package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// Core is the Engine in process: it answers what the API over it answers
// (api.NewServer is its HTTP form), and it is the one place where the
// controller's errors become the API's (apiError).
var _ api.Engine = (*Core)(nil)

// Status returns the controller's status with serve's own fields added.
func (c *Core) Status(context.Context) (wire.Status, error) {
	st := c.Controller.Status()
	st.ServePID, st.ConfigPath, st.Project, st.Root = os.Getpid(), c.opts.Sources.User, c.opts.Sources.Project, c.root
	st.ProjectError = c.rules.projectError()
	st.Audit = c.auditStatus()
	now, names := time.Now(), map[string]bool{}
	for i := range st.Servers {
		names[st.Servers[i].Name] = true
		st.Servers[i].Calls = c.stats.of(st.Servers[i].Name, now)
	}
	c.stats.forget(func(name string) bool { return names[name] })
	return st, nil
}

// Tools returns the provider-facing definitions in dialect.
func (c *Core) Tools(_ context.Context, dialect string) (api.Tools, error) {
	return api.ToolsOf(c.Defs, dialect, false)
}

// ToolsSummary is Tools without the definitions.
func (c *Core) ToolsSummary(_ context.Context, dialect string) (api.Tools, error) {
	return api.ToolsOf(c.Defs, dialect, true)
}

// ServerTools returns the tools server name has registered, without those
// its tools filter hides.
func (c *Core) ServerTools(ctx context.Context, name string) (wire.ServerTools, error) {
	st, err := c.AllServerTools(ctx, name)
	st.Hidden = nil // asked for by `freecode mcp tools --all` only
	return st, err
}

// AllServerTools returns the tools server name has registered and those
// its tools filter hides.
func (c *Core) AllServerTools(_ context.Context, name string) (wire.ServerTools, error) {
	st, err := c.Controller.Snapshot().Tools(name)
	if err != nil {
		return wire.ServerTools{}, apiError(err)
	}
	return st, nil
}

// Lists returns every server's tools (without those its tools filter
// hides), resources, prompts and instructions, from one snapshot of the
// controller.
func (c *Core) Lists(context.Context) (wire.Lists, error) {
	ls := c.Controller.Snapshot().Lists()
	for i := range ls.Tools {
		ls.Tools[i].Hidden = nil // asked for by `freecode mcp tools --all` only
	}
	return ls, nil
}

// ClearLoaded empties the set of tools tool_search loaded: a new
// conversation starts from the always-loaded tools.
func (c *Core) ClearLoaded(context.Context) error {
	c.Defs.ResetLoaded()
	return nil
}

// CallWith runs a tool through the orchestrator (api.RunCall); a call
// without an id is numbered api-N.
func (c *Core) CallWith(ctx context.Context, toolID string, args json.RawMessage, opts api.CallOptions) (api.CallResponse, error) {
	if opts.ID == "" {
		opts.ID = "api-" + strconv.FormatUint(c.calls.Add(1), 10)
	}
	return api.RunCall(ctx, c.Orchestrator, c.Bus, toolID, args, opts)
}

// Approvals lists the calls waiting for the user's approval (none when
// Options.Approver answers them).
func (c *Core) Approvals(context.Context) ([]api.Approval, error) { return c.approvals.Pending(), nil }

// Answer approves or refuses a pending approval, as the client of ctx
// (api.ClientOf), which the audit log records.
func (c *Core) Answer(ctx context.Context, id string, approve bool) error {
	by := api.ClientOf(ctx)
	if by == "" {
		by = UnnamedClient
	}
	return c.approvals.AnswerBy(id, approve, by)
}

// Elicitations lists the servers' elicitations waiting for an answer
// (none when Options.Elicit answers them).
func (c *Core) Elicitations(context.Context) ([]wire.Elicitation, error) {
	return c.elicitations.Pending(), nil
}

// AnswerElicitation answers a pending elicitation.
func (c *Core) AnswerElicitation(ctx context.Context, id string, a wire.ElicitationAnswer) (wire.ElicitationAnswered, error) {
	by := api.ClientOf(ctx)
	if by == "" {
		by = UnnamedClient
	}
	ans, err := c.elicitations.AnswerBy(id, a, by)
	if errors.Is(err, api.ErrInvalidAnswer) {
		err = api.WithKind(err, api.ErrBadRequest) // a 400 over the socket
	}
	return ans, err
}

// Restart restarts server name.
func (c *Core) Restart(_ context.Context, name string) error {
	return apiError(c.Controller.Restart(name))
}

// Logs returns server name's stderr as kept.
func (c *Core) Logs(_ context.Context, name string) (wire.Logs, error) {
	logs, err := c.Controller.Logs(name, wire.LogCursor{})
	if err != nil {
		return wire.Logs{}, apiError(err)
	}
	logs.Server = name
	if logs.Lines == nil {
		logs.Lines = []string{}
	}
	return logs, nil
}

// FollowLogs streams server name's stderr (api.NewLogStream).
func (c *Core) FollowLogs(ctx context.Context, name string) (api.Stream, error) {
	logs, err := c.Controller.Logs(name, wire.LogCursor{})
	if err != nil {
		return nil, apiError(err)
	}
	return api.NewLogStream(ctx, logs, func(ctx context.Context, after wire.LogCursor) (wire.Logs, error) {
		logs, err := c.Controller.WaitLogs(ctx, name, after)
		return logs, apiError(err)
	}), nil
}

// Events subscribes to the bus (api.NewEventStream).
func (c *Core) Events(ctx context.Context) (api.Stream, error) {
	return api.NewEventStream(ctx, c.Bus), nil
}

// Resources returns the resources of server name, or of every server that
// has some when name is "".
func (c *Core) Resources(_ context.Context, name string) (wire.Resources, error) {
	snap := c.Controller.Snapshot()
	if name == "" {
		return snap.AllResources(), nil
	}
	sr, err := snap.Resources(name)
	if err != nil {
		return wire.Resources{}, apiError(err)
	}
	return wire.Resources{Servers: []wire.ServerResources{sr}}, nil
}

// Prompts returns the prompts of server name, or of every server that has
// some when name is "".
func (c *Core) Prompts(_ context.Context, name string) (wire.Prompts, error) {
	snap := c.Controller.Snapshot()
	if name == "" {
		return snap.AllPrompts(), nil
	}
	sp, err := snap.Prompts(name)
	if err != nil {
		return wire.Prompts{}, apiError(err)
	}
	return wire.Prompts{Servers: []wire.ServerPrompts{sp}}, nil
}

// ReadResource reads uri of server name, within its callTimeout.
func (c *Core) ReadResource(ctx context.Context, name, uri string) (wire.ResourceRead, error) {
	if name == "" || uri == "" {
		return wire.ResourceRead{}, api.WithKind(errors.New("a read needs a server and a URI"), api.ErrBadRequest)
	}
	ctx, cancel, d := c.bounded(ctx, name)
	defer cancel()
	res, err := c.Controller.ReadResource(ctx, name, uri)
	if err != nil {
		return wire.ResourceRead{}, apiError(timedOut(ctx, err, d))
	}
	if res.Contents == nil {
		res.Contents = []wire.ResourceContent{}
	}
	return res, nil
}

// GetPrompt gets prompt of server name with args, within its callTimeout.
func (c *Core) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (wire.PromptResult, error) {
	ctx, cancel, d := c.bounded(ctx, name)
	defer cancel()
	if args == nil {
		args = map[string]string{}
	}
	res, err := c.Controller.GetPrompt(ctx, name, prompt, args)
	if err != nil {
		return wire.PromptResult{}, apiError(timedOut(ctx, err, d))
	}
	if res.Messages == nil {
		res.Messages = []wire.PromptMessage{}
	}
	return res, nil
}

// Subscribe subscribes to updates of uri of server name (on), or ends
// that, within its callTimeout.
func (c *Core) Subscribe(ctx context.Context, name, uri string, on bool) error {
	if name == "" || uri == "" {
		return api.WithKind(errors.New("a subscription needs a server and a URI"), api.ErrBadRequest)
	}
	ctx, cancel, d := c.bounded(ctx, name)
	defer cancel()
	return apiError(timedOut(ctx, c.Controller.Subscribe(ctx, name, uri, on), d))
}

// Complete asks server name for the values of an argument, within its
// callTimeout.
func (c *Core) Complete(ctx context.Context, name string, req wire.CompletionRequest) (wire.Completion, error) {
	if name == "" {
		return wire.Completion{}, api.WithKind(errors.New("a completion needs a server"), api.ErrBadRequest)
	}
	ctx, cancel, d := c.bounded(ctx, name)
	defer cancel()
	res, err := c.Controller.Complete(ctx, name, req)
	if err != nil {
		return wire.Completion{}, apiError(timedOut(ctx, err, d))
	}
	return res, nil
}

// bounded bounds ctx by server name's callTimeout: a read, a prompt, a
// subscription or a completion takes no longer than a call of its tools may.
func (c *Core) bounded(ctx context.Context, name string) (context.Context, context.CancelFunc, time.Duration) {
	d := c.rules.limits().TimeoutOf(name)
	if d <= 0 {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, 0
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errRequestTimeout)
	return ctx, cancel, d
}

// errRequestTimeout is the cause of a request's timeout (bounded).
var errRequestTimeout = errors.New("the server did not answer within its callTimeout")

// timedOut is err, marked as a timeout of d when ctx ran out of its time.
func timedOut(ctx context.Context, err error, d time.Duration) error {
	if err != nil && errors.Is(context.Cause(ctx), errRequestTimeout) {
		return api.WithKind(fmt.Errorf("%w (%s, the server's callTimeout)", err, d), api.ErrTimeout)
	}
	return err
}

// apiError gives a controller error the API sentinel it means, its message
// unchanged: an unknown server, prompt or resource is api.ErrNotFound (404);
// a disabled, held or not ready server, or one that does not offer what
// was asked, api.ErrConflict (409); wrong prompt arguments or parameters
// the server refuses api.ErrBadRequest (400). Other errors are left as
// they are (a timeout is marked by timedOut, a lost connection wraps
// registry.ErrTransport).
func apiError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, api.ErrTimeout):
		return err
	case errors.Is(err, controller.ErrUnknownServer), errors.Is(err, mcp.ErrUnknownPrompt), errors.Is(err, mcp.ErrResourceNotFound):
		return api.WithKind(err, api.ErrNotFound)
	case errors.Is(err, controller.ErrDisabled), errors.Is(err, controller.ErrHeld), errors.Is(err, controller.ErrNotReady),
		errors.Is(err, mcp.ErrNotOffered):
		return api.WithKind(err, api.ErrConflict)
	case errors.Is(err, mcp.ErrPromptArguments), errors.Is(err, mcp.ErrInvalidParams):
		return api.WithKind(err, api.ErrBadRequest)
	}
	return err
}
