package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// A server's log (its stderr and the log messages it sends) is read by
// cursor (wire.LogCursor): session = the
// generation that wrote the lines, line = their number in it (from 1, as
// the session's ring numbers them). A reader asks for the lines after the
// last one it has, so it gets each line once and never under the wrong
// session, whatever the lines say and however often the server restarts.
//
// While a generation's session is connected its lines come from the
// session itself; once it ended (or a start failed with stderr to show)
// they come from the tail kept in serverState, numbered as the session
// numbered them. A start that failed before it had a session (its stderr
// only in the error) keeps the lines of that error numbered from 1.

// stderrTail is what a session or a failed start left in its log: its
// last lines and the number of the last one, and of them the stderr lines
// alone (what the status shows as StderrTail).
type stderrTail struct {
	lines  []string
	last   int64
	stderr []string
}

// tailOf is conn's log as it ends (for a remote session only the log
// messages, none if it sent none: its generation then has no lines rather
// than an earlier session's).
func tailOf(conn Conn) *stderrTail {
	lines, last, _ := conn.LogAfter(0)
	return &stderrTail{lines: mcp.LineTexts(lines), last: last, stderr: conn.StderrTail()}
}

// keepTail records tail as gen's log. c.mu is held.
func (st *serverState) keepTail(gen int64, tail *stderrTail) {
	st.tail, st.tailLast = slices.Clone(tail.lines), tail.last
	st.stderrTail = slices.Clone(tail.stderr)
	st.logGen = gen
	st.logsMoved()
}

// logsMoved wakes the readers waiting for this server's stderr: its
// session changed, or the server is gone. c.mu is held.
func (st *serverState) logsMoved() {
	if st.logMoved != nil {
		close(st.logMoved)
		st.logMoved = nil
	}
}

// Logs returns, in one locked read, the log lines of the server's
// current session after the cursor after, or of its last session (or
// failed start) when none is connected. A cursor of another session (a
// restart since) reads the current one from its start, and the zero cursor
// reads all that is kept: the session's last lines (mcp.Options.StderrLines
// of them), so a reader that fell further behind misses the oldest. A
// remote server has only the log messages it sent. It returns an error wrapping ErrUnknownServer for a name it
// does not know.
func (c *Controller) Logs(name string, after wire.LogCursor) (wire.Logs, error) {
	logs, _, _, err := c.readLogs(name, after)
	return logs, err
}

// WaitLogs is Logs once there is something after the cursor: a line, or
// another session. It returns ctx's error if ctx ends first, and an error
// wrapping ErrUnknownServer once the server is forgotten.
func (c *Controller) WaitLogs(ctx context.Context, name string, after wire.LogCursor) (wire.Logs, error) {
	for {
		logs, line, moved, err := c.readLogs(name, after)
		if err != nil || logs.Session != after.Session || len(logs.Lines) > 0 {
			return logs, err
		}
		select {
		case <-ctx.Done():
			return wire.Logs{}, fmt.Errorf("logs of %q: %w", name, ctx.Err())
		case <-line:
		case <-moved:
		}
	}
}

// readLogs is Logs plus what announces the next change: line is closed by
// the session's next stderr line (nil when no session is connected or it
// has no stderr), moved when the session changes.
func (c *Controller) readLogs(name string, after wire.LogCursor) (logs wire.Logs, line, moved <-chan struct{}, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.servers[name]
	if st == nil {
		return wire.Logs{}, nil, nil, fmt.Errorf("logs of %q: %w", name, ErrUnknownServer)
	}
	if st.logMoved == nil {
		st.logMoved = make(chan struct{})
	}
	n := after.Line
	if after.Session != st.logGen {
		n = 0
	}
	logs = wire.Logs{Server: name, Session: st.logGen}
	if st.conn != nil {
		var lines []mcp.LogLine
		lines, logs.Last, line = st.conn.LogAfter(n)
		logs.Lines = mcp.LineTexts(lines)
	} else {
		logs.Lines, logs.Last = linesAfter(st.tail, st.tailLast, n)
	}
	if logs.Lines == nil {
		logs.Lines = []string{}
	}
	return logs, line, st.logMoved, nil
}

// linesAfter returns the lines of tail, whose last is number last, that are
// numbered above n, and the cursor after them.
func linesAfter(tail []string, last, n int64) ([]string, int64) {
	first := last - int64(len(tail)) + 1
	skip := min(max(n-first+1, 0), int64(len(tail)))
	return slices.Clone(tail[skip:]), max(last, n)
}
