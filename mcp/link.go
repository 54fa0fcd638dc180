package mcp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// link is what lies below a session's protocol: a local child process the
// session owns (localLink) or a remote HTTP endpoint (remoteLink). It opens
// the transport the session speaks MCP over and knows what the session
// cannot: how the server ended, what a failed request means, what to stop.
// A Session holds one and never asks which kind it is.
//
// open is called once, by Connect; the other methods may be called after
// it, also when it failed, from the session's goroutines (exitCause,
// explain, lost, pid and stderrTail concurrently); stop is called once,
// last.
type link interface {
	// open starts the server's process or reaches its endpoint, and runs
	// the handshake over a client on it (o.handshake), more than once if
	// the link falls back to another transport or a local server exited
	// on the protocol probe. Its error is for users.
	open(ctx context.Context, o opener) error
	// exited is closed once the local process has exited and was reaped;
	// it is nil, and so never ready, for a remote server.
	exited() <-chan struct{}
	// exitCause returns the local process's exit as an *ExitError (When is
	// when) if it has exited, waiting a moment for it when err looks like
	// the result of an exit (a closed pipe) and ctx is not done for
	// another reason; nil if the process runs on, and for a remote server.
	exitCause(ctx context.Context, when string, err error) error
	// explain describes err, the failure of step, in the link's own terms
	// (the HTTP status a remote endpoint answered, a host that cannot be
	// reached), or returns nil.
	explain(step string, err error) error
	// lost reports whether err means the connection is gone for good, so
	// that the session must end. A local session ends by its process's
	// exit instead.
	lost(err error) bool
	// unreachable returns the *UnreachableError for err, a failed request,
	// if it means the remote server cannot be reached; nil for a local
	// server and for any other failure.
	unreachable(err error) error
	// stop releases what open started, after the session's client was
	// closed: a local process is stopped (see process.stop; graceful is
	// false for a server that never got going), a remote link's idle
	// connections are closed. The error is non-nil only if the process
	// could not be reaped.
	stop(graceful bool) error
	// pid is the local server's pid (also its process group id), or 0.
	pid() int
	// stderrTail is the local server's last stderr lines; nil for a
	// remote server.
	stderrTail() []string
	// progress says how a local server that is still starting shows it is
	// working in the last part of its budget (see
	// StartTimeoutError.Progress); "" if it does not, and for a remote
	// server. expect moves the end of the budget to budget after the start
	// (Session.workingDeadline). Both are called while open runs, from any
	// goroutine.
	progress() string
	expect(budget time.Duration)
	// withheld returns the variables of FreeCode's environment that lines
	// (the server's stderr) mention and the local server did not get; nil
	// for a remote server.
	withheld(lines []string) []string
}

// opener is the session's side of opening a link.
type opener interface {
	// handshake makes c the session's client, initializes the server over
	// it in the protocol revision neg says (or the one a probe finds) and
	// lists its tools.
	handshake(ctx context.Context, c *client.Client, neg negotiation) error
	// protocol is the revision decided without asking the server ("": ask
	// it).
	protocol() string
	// discover probes tr for the revision the server speaks (see
	// Session.discover).
	discover(ctx context.Context, tr transport.Interface, read func() bool) (version string, exited bool)
	// connectError explains why step failed while connecting.
	connectError(ctx context.Context, step string, err error) error
	// lostWhileConnecting returns a connection loss reported while
	// connecting, if any.
	lostWhileConnecting() error
}

// linkEnv is what a link takes from its session.
type linkEnv struct {
	srv     Spec
	opts    Options
	timeout time.Duration // connecting's, with the default applied
	began   time.Time     // when connecting began: timeout counts from then
	log     logr.Logger   // the session's (masked for a remote server)
	mask    *urlMask      // nil for a local server
	// over records that the server went over limit, which ends the
	// session, and returns the error for a reader to fail with.
	over func(limit string, value int64) error
	// lostConn ends the session because its connection is gone.
	lostConn func(error)
	// newClient makes the mcp-go client over a transport (Session.newClient;
	// hc: a streamable HTTP transport's client, else nil).
	newClient func(tr transport.Interface, hc *http.Client) *client.Client
}

// newLink returns the link for s's server type. For a remote server it
// first sets up the URL mask, so that every message and log line of the
// session shows the URL as written.
func (s *Session) newLink() (link, error) {
	switch s.srv.Type {
	case Local:
		return &localLink{env: s.linkEnv(), ring: s.ring}, nil
	case Remote:
		s.mask = newURLMask(s.srv)
		s.log = maskLogger(s.log, s.mask)
		return &remoteLink{env: s.linkEnv()}, nil
	default:
		return nil, fmt.Errorf("server %q: unknown server type %q", s.srv.Name, s.srv.Type)
	}
}

func (s *Session) linkEnv() linkEnv {
	return linkEnv{srv: s.srv, opts: s.opts, timeout: s.timeout, began: s.began, log: s.log, mask: s.mask, over: s.overLimit, lostConn: s.reportLost,
		newClient: s.newClient}
}
