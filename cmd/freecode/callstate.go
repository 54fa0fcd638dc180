package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// A call of a tool of a server that cannot answer it says why, from the
// server's state, and what to do: not that the tool is unknown.

// errNotReady is wrapped by the error of a call of a tool of a server that
// serve runs but that is not ready: crashing, unreachable, waiting for a
// sign-in.
var errNotReady = errors.New("server is not ready")

// errDisabled is wrapped by the error of a call of a tool of a disabled
// server: nothing connects it.
var errDisabled = errors.New("server is disabled")

// disabledCall is the error of a call of a tool of srv, which is disabled:
// nothing connects it. It wraps errDisabled.
func (a *app) disabledCall(id string, srv schema.Server) error {
	how := fmt.Sprintf("enable it with `freecode mcp enable %s`", srv.Name)
	if strings.HasPrefix(srv.Source, schema.SourceProjectPrefix) {
		how = fmt.Sprintf(`set "enabled": true in its entry in %s`, a.entryFile(srv))
	}
	return &stateError{msg: fmt.Sprintf("cannot call %s: server %q is disabled in %s, so FreeCode does not connect it; %s",
		cell(id), srv.Name, a.entryFile(srv), how), kind: errDisabled}
}

// stateError is a call refused for its server's state: msg says it all,
// kind is the sentinel a caller branches on.
type stateError struct {
	msg  string
	kind error
}

func (e *stateError) Error() string { return e.msg }
func (e *stateError) Unwrap() error { return e.kind }

// notRunningCall is the error of a call of a tool of srv, which serve runs
// but which is not ready: s is its status there (past pending and
// starting). A server in backoff is crashing (it failed to start or its
// session ended) or, a remote one, cannot be reached; either way the
// error says so, with its last error, its restarts and the next try.
func (a *app) notRunningCall(id string, srv schema.Server, s wire.ServerStatus, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot call %s: ", cell(id))
	next := ""
	if !s.NextRetry.IsZero() {
		next = "; FreeCode tries again in " + roundDur(s.NextRetry.Sub(now))
	}
	switch {
	case s.Phase == wire.PhaseBackoff && !s.UnreachableSince.IsZero():
		fmt.Fprintf(&b, "server %q cannot be reached under freecode serve (since %s ago)%s", s.Name, roundDur(now.Sub(s.UnreachableSince)), next)
	case s.Phase == wire.PhaseBackoff:
		fmt.Fprintf(&b, "server %q is crashing under freecode serve", s.Name)
		if s.Crashes > 0 {
			fmt.Fprintf(&b, " (restarted %d time%s, %d after a failure)", s.Restarts, plural(s.Restarts), s.Crashes)
		}
		b.WriteString(next)
	case s.Phase == wire.PhaseNeedsLogin:
		fmt.Fprintf(&b, "server %q needs sign-in: %s", s.Name, loginRemedy(s.Name))
		return &stateError{msg: b.String(), kind: errNotReady}
	default:
		fmt.Fprintf(&b, "server %q is %s under freecode serve", s.Name, s.Phase)
	}
	if s.LastError != "" {
		fmt.Fprintf(&b, "\nlast error: %s", indentLines(errorCell(s)))
	}
	fmt.Fprintf(&b, "\nSee its log with `freecode mcp logs %s`; fix its entry in %s (serve applies the change), or try again now with `freecode mcp restart %s`.",
		s.Name, a.entryFile(srv), s.Name)
	return &stateError{msg: b.String(), kind: errNotReady}
}

// oneShotStartFailed is the error of a call whose server, started for the
// call alone, did not start: err says why.
func (a *app) oneShotStartFailed(id string, srv schema.Server, err error) error {
	return &remedyError{
		err: fmt.Errorf("cannot call %s: %w", cell(id), a.withRemedy(srv, err)),
		remedy: fmt.Sprintf("Fix its entry in %s, or turn it off with `freecode mcp disable %s`; `freecode mcp start %s` tries it again.",
			a.entryFile(srv), srv.Name, srv.Name),
	}
}
