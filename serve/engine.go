package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// backend is the daemon as the API sees it (api.Backend): the controller's
// status with serve's own fields added, its restarts and its logs. It is
// the one place where the controller's errors become the API's (apiError).
type backend struct {
	ctrl                   *controller.Controller
	cfgPath, project, root string
	rules                  *rulesHolder
}

func (b backend) Status() wire.Status {
	st := b.ctrl.Status()
	st.ServePID, st.ConfigPath, st.Project, st.Root = os.Getpid(), b.cfgPath, b.project, b.root
	st.ProjectError = b.rules.projectError()
	return st
}

func (b backend) Restart(name string) error { return apiError(b.ctrl.Restart(name)) }

func (b backend) Logs(name string, after wire.LogCursor) (wire.Logs, error) {
	logs, err := b.ctrl.Logs(name, after)
	return logs, apiError(err)
}

func (b backend) WaitLogs(ctx context.Context, name string, after wire.LogCursor) (wire.Logs, error) {
	logs, err := b.ctrl.WaitLogs(ctx, name, after)
	return logs, apiError(err)
}

func (b backend) Tools(name string) (wire.ServerTools, error) {
	st, err := b.ctrl.Tools(name)
	return st, apiError(err)
}

func (b backend) Resources(name string) (wire.Resources, error) {
	if name == "" {
		return b.ctrl.AllResources(), nil
	}
	sr, err := b.ctrl.Resources(name)
	if err != nil {
		return wire.Resources{}, apiError(err)
	}
	return wire.Resources{Servers: []wire.ServerResources{sr}}, nil
}

func (b backend) Prompts(name string) (wire.Prompts, error) {
	if name == "" {
		return b.ctrl.AllPrompts(), nil
	}
	sp, err := b.ctrl.Prompts(name)
	if err != nil {
		return wire.Prompts{}, apiError(err)
	}
	return wire.Prompts{Servers: []wire.ServerPrompts{sp}}, nil
}

// bounded bounds ctx by server name's callTimeout: a read, a prompt or a
// subscription takes no longer than a call of its tools may.
func (b backend) bounded(ctx context.Context, name string) (context.Context, context.CancelFunc, time.Duration) {
	d := b.rules.limits().TimeoutOf(name)
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
		return &kindError{err: fmt.Errorf("%w (%s, the server's callTimeout)", err, d), kind: api.ErrTimeout}
	}
	return err
}

func (b backend) ReadResource(ctx context.Context, name, uri string) (wire.ResourceRead, error) {
	ctx, cancel, d := b.bounded(ctx, name)
	defer cancel()
	res, err := b.ctrl.ReadResource(ctx, name, uri)
	return res, apiError(timedOut(ctx, err, d))
}

func (b backend) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (wire.PromptResult, error) {
	ctx, cancel, d := b.bounded(ctx, name)
	defer cancel()
	res, err := b.ctrl.GetPrompt(ctx, name, prompt, args)
	return res, apiError(timedOut(ctx, err, d))
}

func (b backend) Subscribe(ctx context.Context, name, uri string, on bool) error {
	ctx, cancel, d := b.bounded(ctx, name)
	defer cancel()
	return apiError(timedOut(ctx, b.ctrl.Subscribe(ctx, name, uri, on), d))
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
		return &kindError{err: err, kind: api.ErrNotFound}
	case errors.Is(err, controller.ErrDisabled), errors.Is(err, controller.ErrHeld), errors.Is(err, controller.ErrNotReady),
		errors.Is(err, mcp.ErrNotOffered):
		return &kindError{err: err, kind: api.ErrConflict}
	case errors.Is(err, mcp.ErrPromptArguments), errors.Is(err, mcp.ErrInvalidParams):
		return &kindError{err: err, kind: api.ErrBadRequest}
	}
	return err
}

// kindError is err that also wraps kind, an API sentinel.
type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }
