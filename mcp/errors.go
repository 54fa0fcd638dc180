package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// ErrTransport is wrapped by every error caused by the connection to a
	// server failing or being lost (process exit, closed pipe, network error,
	// expired HTTP session), as opposed to an error the server reported. A
	// call that failed this way may or may not have reached the server.
	ErrTransport = errors.New("connection to MCP server lost")

	// ErrClosed is wrapped by the errors of calls made after the session
	// ended. If it ended because of a failure, the error also wraps that
	// failure (see [Session.Err]).
	ErrClosed = errors.New("MCP session closed")

	// ErrLimit is wrapped by the error that ends a session because its server
	// sent more than one of its limits allows (a message too large, a tool
	// list too long); see [LimitError].
	ErrLimit = errors.New("MCP server went over a limit")
)

// stderrLinesInErrors bounds how many stderr lines an error message quotes.
const stderrLinesInErrors = 10

// ExitError reports that a local server's process ended on its own. It wraps
// [ErrTransport].
type ExitError struct {
	Server string
	// When says at which point the process ended: "before initialize",
	// "while listing tools" (or resources, prompts, ...), or "" once the
	// session was running.
	When string
	// State is the reaped process's state (exit code or signal).
	State *os.ProcessState
	// Stderr is the tail of what the process wrote to stderr.
	Stderr []string
	// Withheld names the variables that Stderr mentions and that are set
	// in FreeCode's environment but were not passed to the server (it gets
	// only an allow-list of the environment plus its own env): the likely
	// reason it ended. Only the names, never the values.
	Withheld []string
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q %s", e.Server, describeExit(e.State))
	if e.When != "" {
		b.WriteString(" " + e.When)
	}
	b.WriteString(formatStderr(e.Stderr))
	return b.String()
}

// StartTimeoutError reports that connecting to a server did not finish
// within its timeout. It wraps [ErrTransport] and context.DeadlineExceeded.
type StartTimeoutError struct {
	Server string
	// Step is what got no answer in time: "initialize", "tools/list", or
	// "done" when time ran out right after the last answer.
	Step string
	// Timeout is the budget that ran out.
	Timeout time.Duration
	// Progress says how a local server showed it was still working when
	// the time ran out — "using CPU", "writing to stderr" — or is "" when
	// it did not (it hangs, or waits for something) and for a remote
	// server. A server that was still working may well start with a longer
	// timeout: the first `npx -y pkg` of a package spends it downloading.
	Progress string
	// Stderr is the tail of a local server's stderr.
	Stderr []string
	// Withheld is as in ExitError: variables Stderr mentions that FreeCode
	// has and the server did not get.
	Withheld []string

	msg string // what timed out, with how far tools/list got
}

func (e *StartTimeoutError) Error() string {
	msg := e.msg
	if e.Progress != "" {
		msg += "; it was still working (" + e.Progress + ") when the time ran out"
	}
	return msg + formatStderr(e.Stderr)
}

func (e *StartTimeoutError) Unwrap() []error {
	return []error{ErrTransport, context.DeadlineExceeded}
}

func (e *ExitError) Unwrap() error { return ErrTransport }

// ExitCode is the process's exit status, or -1 if a signal ended it.
func (e *ExitError) ExitCode() int {
	if e.State == nil {
		return -1
	}
	return e.State.ExitCode()
}

func describeExit(st *os.ProcessState) string {
	if st == nil {
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = ws.Signal().String()
		}
		return "was killed by " + name
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

// formatStderr renders the last lines of stderr for an error message, or ""
// when there are none.
func formatStderr(lines []string) string {
	if len(lines) > stderrLinesInErrors {
		lines = lines[len(lines)-stderrLinesInErrors:]
	}
	switch len(lines) {
	case 0:
		return ""
	case 1:
		return "; stderr: " + lines[0]
	}
	return "; stderr:\n  " + strings.Join(lines, "\n  ")
}

// sessionError is an error with a message written for users and any number
// of wrapped causes, e.g. ErrTransport plus the transport's own error.
type sessionError struct {
	msg    string
	causes []error
}

func (e *sessionError) Error() string   { return e.msg }
func (e *sessionError) Unwrap() []error { return e.causes }

// newError is an error with msg and the causes that are not nil.
func newError(msg string, causes ...error) error {
	kept := causes[:0:0]
	for _, c := range causes {
		if c != nil {
			kept = append(kept, c)
		}
	}
	return &sessionError{msg: msg, causes: kept}
}
