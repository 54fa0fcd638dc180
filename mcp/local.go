package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client/transport"
)

// localLink is a local server: a child process the session starts and owns,
// spoken to over its stdin and stdout.
type localLink struct {
	env  linkEnv
	ring *lineRing // the process's last stderr lines

	// proc is set by open once the process runs, and again when the
	// server is started a second time (see open); read-only once open
	// returned. stdin is proc's stdin as the session writes it. procMu
	// guards proc for pid, which a status may ask while open runs.
	procMu sync.Mutex
	proc   *process
	stdin  *writeWatcher

	meterMu sync.Mutex  // guards meter
	meter   *startMeter // watches the start; set by open with proc
}

func (l *localLink) open(cctx context.Context, o opener) error {
	srv := l.env.srv
	if len(srv.Command) == 0 || srv.Command[0] == "" {
		return fmt.Errorf("server %q: no command configured", srv.Name)
	}
	version := o.protocol()
	err := l.run(cctx, o, negotiation{version: version, read: l.drained, remembered: version != "" && !knownRevision(srv.Protocol)})
	if !errors.Is(err, errProbeExit) {
		return err
	}
	// A server of the older revisions that ends on a request it does not
	// know (the protocol probe): start it again and speak 2025-11-25 to
	// it from the start.
	l.env.log.V(1).Info("server exited on server/discover; starting it again", "speaking", ProtocolVersion)
	if err := l.proc.stop(false); err != nil {
		l.env.log.V(1).Info("stopping the server", "err", err.Error())
	}
	return l.run(cctx, o, negotiation{version: ProtocolVersion})
}

// run starts the server's process and runs the handshake over its stdio.
func (l *localLink) run(cctx context.Context, o opener, neg negotiation) error {
	srv := l.env.srv
	proc, err := startProcess(srv.Command, srv.Env, l.env.opts.Launcher, l.ring, l.env.log, l.env.opts.OnProcess, l.env.opts.OnStderr)
	if err != nil {
		return fmt.Errorf("server %q: cannot start %q: %w", srv.Name, srv.Command[0], err)
	}
	l.procMu.Lock()
	l.proc = proc
	l.procMu.Unlock()
	meter := newStartMeter(proc.pid, l.ring, l.env.began, l.env.timeout)
	defer meter.stop()
	l.meterMu.Lock()
	l.meter = meter
	l.meterMu.Unlock()
	// The command as written, if known: expanded, it may hold secrets.
	var command any = srv.Command
	if srv.Shown != "" {
		command = srv.Shown
	}
	l.env.log.V(1).Info("started server process", "pid", proc.pid, "command", command)

	// Requests of the handshake also end when the process does.
	cctx, cancel := context.WithCancelCause(cctx)
	defer cancel(nil)
	go func() {
		select {
		case <-proc.exited:
			cancel(errProcessExited)
		case <-cctx.Done():
		}
	}()

	// stdout is read a whole line at a time, however long (by lineFilter,
	// and by mcp-go's bufio.Reader.ReadString('\n') behind it): it fails
	// past the message limit, when lineFilter holds about the limit, and
	// mcp-go gives up (ending the session).
	limit := srv.Limits.MaxMessageBytes
	stdout := &limitReader{
		r:    proc.stdout,
		c:    newFrameCounter(limit, endAtNewline),
		over: func() error { return l.env.over(limitMessageBytes, limit) },
	}
	// The session's calls are sent and answered beside mcp-go (see
	// stdioFast): their answers are taken out of stdout before mcp-go
	// reads it, and they end when the transport closes stdin.
	stdin := &writeWatcher{f: proc.stdin}
	fast := newStdioFast(stdin, l.env.ownMeta)
	stdin.close = func() error {
		fast.end()
		proc.closeStdin()
		return nil
	}
	l.stdin = stdin
	fast.Stdio = transport.NewIO(&lineFilter{r: stdout, fast: fast, max: maxLineBuffer(limit)}, stdin, nil)
	var tr transport.Interface = fast
	if l.env.opts.mcpgoCalls {
		tr = fast.Stdio
	}
	// NewIO logs to slog.Default (which prints on stderr) and takes no
	// options: route what it logs, as a remote link's transports do, into
	// the session's logger. Its errors (a read that failed: a message over
	// the limit, which the session reports itself) still reach that
	// logger at any verbosity.
	transport.WithCommandLogger(slog.New(logr.ToSlogHandler(l.env.log.V(1))))(fast.Stdio)
	return o.handshake(cctx, l.env.newClient(tr, nil), neg)
}

// drained reports whether the server has read everything written to its
// stdin: something was written, and the pipe holds nothing unread — or,
// once stdin is closed (the server exited and the transport closed it), it
// held nothing unread when it was closed.
func (l *localLink) drained() bool {
	if l.stdin == nil || !l.stdin.wrote.Load() {
		return false
	}
	if n := l.proc.unread(); n >= 0 {
		return n == 0
	}
	return l.proc.unreadAtClose.Load() == 0
}

func (l *localLink) exited() <-chan struct{} {
	if l.proc == nil {
		return nil
	}
	return l.proc.exited
}

func (l *localLink) exitCause(ctx context.Context, when string, err error) error {
	if l.proc == nil || !l.awaitExit(ctx, err) {
		return nil
	}
	tail := l.ring.tail()
	return &ExitError{Server: l.env.srv.Name, When: when, State: l.proc.state, Stderr: tail, Withheld: l.withheld(tail)}
}

func (l *localLink) progress() string {
	l.meterMu.Lock()
	m := l.meter
	l.meterMu.Unlock()
	if m == nil {
		return ""
	}
	return m.progressed()
}

func (l *localLink) expect(budget time.Duration) {
	l.meterMu.Lock()
	m := l.meter
	l.meterMu.Unlock()
	if m != nil {
		m.expect(budget)
	}
}

func (l *localLink) withheld(lines []string) []string {
	if l.proc == nil {
		return nil
	}
	return mentionedVars(l.proc.withheld, lines)
}

// awaitExit reports whether the process has exited, waiting a moment for
// it when err looks like the result of an exit (closed pipes).
func (l *localLink) awaitExit(ctx context.Context, err error) bool {
	exited := l.proc.exited
	select {
	case <-exited:
		return true
	default:
	}
	if (ctx.Err() != nil && !errors.Is(context.Cause(ctx), errProcessExited)) || !isTransportError(err) {
		return false
	}
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	select {
	case <-exited:
		return true
	case <-ctx.Done():
		// Cancelled because of the exit (exited is closed by then), or out
		// of time.
		select {
		case <-exited:
			return true
		default:
			return false
		}
	case <-timer.C:
		return false
	}
}

func (l *localLink) stop(graceful bool) error {
	if l.proc == nil {
		return nil
	}
	return l.proc.stop(graceful)
}

func (l *localLink) pid() int {
	l.procMu.Lock()
	defer l.procMu.Unlock()
	if l.proc == nil {
		return 0
	}
	return l.proc.pid
}

func (l *localLink) stderrTail() []string {
	if l.proc == nil {
		return nil
	}
	return l.ring.tail()
}
