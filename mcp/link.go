package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// link is what lies below a session's protocol: a local child process the
// session owns (localLink) or a remote HTTP endpoint (remoteLink). It opens
// the transport the session speaks MCP over and stops what it started. What
// only one kind has is in an interface of its own, which the session finds
// with a type assertion: a local process (processLink: its exit, pid,
// stderr and start meter) or a remote endpoint (endpointLink: what its
// failures mean). Neither kind pretends to have the other's.
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
	// stop releases what open started, after the session's client was
	// closed: a local process is stopped (see process.stop; graceful is
	// false for a server that never got going), a remote link's idle
	// connections are closed. The error is non-nil only if the process
	// could not be reaped.
	stop(graceful bool) error
}

// processLink is a link to a local process the session owns (localLink).
// Its methods answer "nothing yet" (nil, 0, "") before open started the
// process.
type processLink interface {
	link
	// exited is closed once the local process has exited and was reaped;
	// nil before it started.
	exited() <-chan struct{}
	// exitCause returns the local process's exit as an *ExitError (When is
	// when) if it has exited, waiting a moment for it when err looks like
	// the result of an exit (a closed pipe) and ctx is not done for
	// another reason; nil if the process runs on.
	exitCause(ctx context.Context, when string, err error) error
	// pid is the server's pid (also its process group id).
	pid() int
	// stderrTail is the server's last stderr lines.
	stderrTail() []string
	// progress says how a server that is still starting shows it is
	// working in the last part of its budget (see
	// StartTimeoutError.Progress); "" if it does not. expect moves the end
	// of the budget to budget after the start (connectProgress.workingDeadline).
	// Both are called while open runs, from any goroutine.
	progress() string
	expect(budget time.Duration)
	// withheld returns the variables of FreeCode's environment that lines
	// (the server's stderr) mention and the server did not get.
	withheld(lines []string) []string
}

// endpointLink is a link to a remote endpoint (remoteLink): its requests
// fail in ways a process's do not.
type endpointLink interface {
	link
	// explain describes err, the failure of step, in the link's own terms
	// (the HTTP status a remote endpoint answered, a host that cannot be
	// reached), or returns nil.
	explain(step string, err error) error
	// lost reports whether err means the connection is gone for good, so
	// that the session must end. (A local session ends by its process's
	// exit instead.)
	lost(err error) bool
	// unreachable returns the *UnreachableError for err, a failed request,
	// if it means the server cannot be reached; nil for any other failure.
	unreachable(err error) error
}

var (
	_ processLink  = (*localLink)(nil)
	_ endpointLink = (*remoteLink)(nil)
)

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
	discover(ctx context.Context, tr transport.Interface, read func() bool) probe
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
	// newClient makes the mcp-go client over a transport (inbound.newClient;
	// hc: a streamable HTTP transport's client, else nil).
	newClient func(tr transport.Interface, hc *http.Client) *client.Client
	// ownMeta reports whether a request's _meta is the session's own
	// encoding (outbound.ownMeta), which a local link writes unchecked.
	ownMeta func(json.RawMessage) bool
}

// newLink returns the link for s's server type; a local server's stderr
// lines go to ring.
func (s *Session) newLink(ring *lineRing) (link, error) {
	switch s.srv.Type {
	case Local:
		return &localLink{env: s.linkEnv(), ring: ring}, nil
	case Remote:
		return &remoteLink{env: s.linkEnv()}, nil
	default:
		return nil, fmt.Errorf("server %q: unknown server type %q", s.srv.Name, s.srv.Type)
	}
}

func (s *Session) linkEnv() linkEnv {
	return linkEnv{srv: s.srv, opts: s.opts, timeout: s.timeout, began: s.conn.began, log: s.log, mask: s.mask, over: func(limit string, value int64) error { return s.limits.over("", limit, value) }, lostConn: s.life.reportLost,
		newClient: s.in.newClient, ownMeta: s.out.ownMeta}
}
