package serve

import (
	"context"
	"errors"
	"os"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/controller"
)

// backend is the daemon as the API sees it (api.Backend): the controller's
// status with serve's own fields added, its restarts and its logs. It is
// the one place where the controller's errors become the API's (apiError).
type backend struct {
	ctrl    *controller.Controller
	cfgPath string
	rules   *rulesHolder
}

func (b backend) Status() api.Status {
	st := b.ctrl.Status()
	st.ServePID, st.ConfigPath = os.Getpid(), b.cfgPath
	st.ProjectError = b.rules.projectError()
	return st
}

func (b backend) Restart(name string) error { return apiError(b.ctrl.Restart(name)) }

func (b backend) Logs(name string, after wire.LogCursor) (api.Logs, error) {
	logs, err := b.ctrl.Logs(name, after)
	return logs, apiError(err)
}

func (b backend) WaitLogs(ctx context.Context, name string, after wire.LogCursor) (api.Logs, error) {
	logs, err := b.ctrl.WaitLogs(ctx, name, after)
	return logs, apiError(err)
}

func (b backend) Tools(name string) (api.ServerTools, error) {
	st, err := b.ctrl.Tools(name)
	return st, apiError(err)
}

// apiError gives a controller error the API sentinel it means, its message
// unchanged: an unknown server is api.ErrNotFound (404), a disabled or held
// one api.ErrConflict (409). Other errors are left as they are.
func apiError(err error) error {
	switch {
	case errors.Is(err, controller.ErrUnknownServer):
		return &kindError{err: err, kind: api.ErrNotFound}
	case errors.Is(err, controller.ErrDisabled), errors.Is(err, controller.ErrHeld):
		return &kindError{err: err, kind: api.ErrConflict}
	}
	return err
}

// kindError is err that also wraps kind, an API sentinel.
type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }
