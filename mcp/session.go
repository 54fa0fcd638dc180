package mcp

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/telemetry"
)

const (
	defaultStderrLines   = 200
	defaultClientName    = "freecode"
	defaultClientVersion = "dev"
	// exitWait bounds how long a failed request waits for the local
	// process's exit to explain the failure.
	exitWait = 2 * time.Second
)

// The steps of connecting, as error messages name them.
const (
	stepInitialize = "initialize"
	stepToolsList  = "tools/list"
	stepDone       = "done" // the server answered everything
)

// Options configure a Session.
type Options struct {
	// Logger receives the session's diagnostics; a local server's stderr
	// lines go to it at V(1). The zero value discards everything.
	Logger logr.Logger
	// StderrLines is how many of the server's last log lines are kept:
	// the lines a local server writes to stderr (for StderrTail and error
	// messages) and the log messages any server sends (LogAfter has
	// both); 0 means 200.
	StderrLines int
	// ClientName and ClientVersion identify FreeCode in initialize; they
	// default to "freecode" and "dev".
	ClientName, ClientVersion string
	// TLSClientConfig, if set, is used for remote servers' https
	// connections: a host embedding sessions can trust a private CA
	// (RootCAs) or present a client certificate. Nil means Go's defaults:
	// the system roots, which honour SSL_CERT_FILE and SSL_CERT_DIR.
	TLSClientConfig *tls.Config
	// OnProcess, if set, is called as soon as a local server's process has
	// started, before the handshake, with its pid (also its process group
	// id) and a channel closed once the process was reaped and SIGKILL was
	// sent to what was left of its group (with a Launcher: once the
	// launched process's Wait returned). It is called on the goroutine
	// that called Connect, even if the connect then fails, and must not
	// block. It lets a caller track the group for the whole life of the
	// process, including a long first start.
	OnProcess func(pid int, exited <-chan struct{})
	// Schemas, if set, shares prepared input schemas between this session's
	// tool lists and other sessions using the same cache; nil shares only
	// within one list.
	Schemas *SchemaCache
	// WorkingTimeout, if longer than the spec's Timeout, lets a local server
	// that is still working when its Timeout runs out (it used CPU or wrote
	// to stderr at the end; see StartTimeoutError.Progress) go on
	// connecting: the deadline moves to twice the time so far, up to
	// WorkingTimeout, for as long as the server is still working at each
	// deadline. A first `npx -y pkg` spends its time downloading, and
	// stopping it then is what not to do: npm's npx, killed while it
	// installs, can leave its install lock (the next npx waits a minute for
	// it to go stale) or a half-installed package (which then fails to
	// load) behind. Zero: Timeout is the whole budget.
	WorkingTimeout time.Duration
	// OnStillWorking, if set, is told each time connecting goes on past
	// its budget because the server is still working (see WorkingTimeout):
	// how it showed that ("using CPU", "writing to stderr"), the time spent
	// so far and the new budget, so that a command can say why it still
	// waits. It is called from the goroutine that keeps the time, never
	// after Connect returned, and must not block.
	OnStillWorking func(how string, spent, budget time.Duration)
	// OnStderr, if set, gets each line a local server writes to stderr as
	// it arrives (cut to 4 KiB, as kept), from the goroutine that reads
	// stderr, from the start of the process on: `freecode mcp start` shows
	// them while the server starts. It must not block: the server blocks
	// once the pipe is full.
	OnStderr func(line string)
	// Launcher, if set, starts each local server's process: FreeCode's
	// runs it under a reaper process that kills and reaps everything the
	// server left behind when it exits, even helpers that moved to a
	// session of their own, and kills it all at once if FreeCode dies. PID
	// and OnProcess still name the server itself. Nil starts the server
	// directly; then what leaves its process group outlives it.
	Launcher Launcher
	// Tokens, if set, keeps the OAuth tokens of remote servers: a
	// remote server that sends no Authorization header of its own
	// (Spec.SignsIn) then has its requests authorized with the stored
	// tokens, renewed as needed, and a 401 answer starts the recovery
	// package auth describes. A server that needs a user to sign in fails
	// the connect (or ends the session) with an error wrapping
	// ErrNeedsLogin. Nil: no authorization; a 401 fails like any HTTP
	// error.
	Tokens *auth.Store
	// Interaction, if set beside Tokens, lets a session run the
	// browser sign-in itself when a server asks for one, instead of
	// failing with ErrNeedsLogin (for a driver that can follow the
	// authorization URL, such as the conformance client).
	Interaction *auth.Interaction
	// Elicit, if set, answers the servers' elicitation requests (form and
	// URL mode), and the sessions declare the elicitation capability so
	// that servers ask; nil declares none and answers a request with an
	// error. It gets the server's name with each request.
	Elicit ElicitHandler
	// ElicitTimeout bounds how long an elicitation waits for Elicit: then
	// its context ends (cause ErrElicitTimeout) and the server is sent
	// "cancel", whatever the handler returns. Zero: DefaultElicitTimeout.
	ElicitTimeout time.Duration
	// Protocols, if set, remembers which protocol revision each server
	// spoke, so that connecting it again sends no server/discover probe
	// (see ProtocolCache; OpenProtocolCache keeps it across processes);
	// nil probes every connect of a server whose Spec.Protocol is not set.
	Protocols *ProtocolCache
	// Telemetry, if set and on, gives each request the session sends a
	// CLIENT span (telemetry.StartClient) and its duration metric. Set or
	// not, a request carries the trace context of its ctx, if any, in its
	// _meta (traceparent, tracestate), so a host's trace goes on to the
	// server.
	Telemetry *telemetry.Telemetry

	// mcpgoCalls leaves a local server's calls to mcp-go's transport
	// (no stdioFast): the tests compare the two.
	mcpgoCalls bool
}

// DefaultElicitTimeout is Options.ElicitTimeout's default: a person may
// need a while to answer, but a server's tool call must not wait forever.
const DefaultElicitTimeout = 10 * time.Minute

// ErrElicitTimeout is the cancellation cause of an ElicitHandler's context
// when Options.ElicitTimeout passed.
var ErrElicitTimeout = errors.New("nobody answered the elicitation in time")

// errConnectTimeout is the cancellation cause of Connect's deadline.
var errConnectTimeout = errors.New("connect timeout")

// errProcessExited is the cancellation cause of Connect's context when the
// local process exits during the handshake.
var errProcessExited = errors.New("server process exited")

// Session is one running connection to one MCP server. All methods are safe
// for concurrent use.
//
// One owner goroutine, started by Connect, runs the session until it ends:
// it re-lists tools after tools/list_changed (resources and prompts after
// theirs: see Features), and notices the local
// process's exit, the loss of a remote connection, or Close. Done is closed
// when it has stopped everything the session started.
type Session struct {
	srv     Spec
	timeout time.Duration // Spec.Timeout: connecting's, and each re-list's
	opts    Options
	log     logr.Logger // wrapped by Connect, before any use, to apply mask
	// mask shows a remote server's URL as written in every message and
	// log line (nil for a local server: it changes nothing).
	mask     *urlMask
	protoKey string // the spec's key in Options.Protocols
	// refusedRemembered says that the server answered the revision the
	// ProtocolCache remembered with an error: set by the handshake, read
	// by Connect once the link's open returned.
	refusedRemembered bool
	limits            *limitTrip // the first limit the server went over ends the session

	// ctx lives as long as the session; mcp-go's Start gets it, and the
	// owner goroutine's re-lists derive from it. cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc

	// Session itself connects (Connect, and the handshake its link calls back:
	// see opener), runs the owner goroutine and decides what a failure means
	// for the session. The rest is in parts, each a type with its own state
	// and lock, which its exported methods delegate to:
	//
	//   - link (link.go, local.go, remote.go): the process or endpoint below
	//     the protocol;
	//   - connectProgress (connecting.go): connecting's step, budget and
	//     progress, for the deadline and the timeout message;
	//   - outbound (outbound.go, call.go, lists.go, protocol.go): the
	//     session's own requests, the mcp-go client, the calls' progress;
	//   - inbound (requests.go, roots.go): the server's requests
	//     (elicitation, roots, sampling refused);
	//   - toolList (toollist.go): the tools as listed and converted;
	//   - featureState (features.go, read.go): resources, templates, prompts,
	//     subscriptions, instructions, and the requests about them;
	//   - serverLog (logging.go): the server's stderr and log messages;
	//   - lifetime (lifetime.go): Close, a lost connection, the background
	//     work the end waits for, and why the session ended.
	//
	// Connect makes them before anything starts; none is replaced.
	link      link
	conn      *connectProgress
	out       *outbound
	in        *inbound
	tools     *toolList
	feat      *featureState
	serverLog *serverLog
	life      *lifetime
}

// Connect starts (local) or reaches (remote) the server, initializes it and
// lists all its tools — and the resources, resource templates and prompts
// it declares (Features) —, all within srv.Timeout, which must be set
// like every limit. On failure nothing is left running and the error says
// why in terms a user can act on: the command that could not start, the
// exit status and the tail of stderr, the step that got no answer in time
// (with what tools/list had received so far), the HTTP status of a remote
// endpoint, or the limit the server went over (a *LimitError).
//
// Converting the tools is FreeCode's own work, bounded by the limits, and
// follows without counting against the timeout: a server that answered in
// time is not failed for having many tools.
//
// Everything the server sends is bounded by srv.Limits, each of which must
// be set: a message larger than MaxMessageBytes, or a tool list beyond
// MaxListItems, MaxListPages or MaxListBytes, ends the session with a
// *LimitError, while connecting or later.
//
// The session outlives ctx, which only bounds connecting; end it with Close.
// A local server started without Options.Launcher also gets SIGKILL if the
// OS thread that called Connect exits, which Go only lets happen to a
// goroutine that called runtime.LockOSThread and returned without
// unlocking: do not call Connect from such a goroutine.
func Connect(ctx context.Context, srv Spec, opts Options) (*Session, error) {
	return connectReasking(ctx, srv, opts, true)
}

// connectReasking is Connect; reask lets it connect again, once, with a probe,
// when the server refused the revision the ProtocolCache remembered.
func connectReasking(ctx context.Context, srv Spec, opts Options, reask bool) (*Session, error) {
	if opts.StderrLines <= 0 {
		opts.StderrLines = defaultStderrLines
	}
	if opts.ClientName == "" {
		opts.ClientName = defaultClientName
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = defaultClientVersion
	}
	if err := srv.Limits.check(); err != nil {
		return nil, fmt.Errorf("server %q: %w", srv.Name, err)
	}
	timeout := srv.Timeout
	if timeout <= 0 {
		return nil, fmt.Errorf("server %q: timeout is %s: it must be positive", srv.Name, timeout)
	}
	s := &Session{
		srv:      srv,
		timeout:  timeout,
		conn:     newConnectProgress(srv.Name, time.Now(), timeout),
		opts:     opts,
		log:      opts.Logger.WithValues("server", srv.Name),
		limits:   newLimitTrip(srv),
		life:     newLifetime(),
		protoKey: protocolKey(srv),
	}
	if srv.Type == Remote {
		// Every message and log line of the session shows the URL as
		// written.
		s.mask = newURLMask(srv)
		s.log = maskLogger(s.log, s.mask)
	}
	ring := newLineRing(opts.StderrLines)
	s.tools = newToolList(srv.Name, opts.Schemas, s.log)
	s.serverLog = &serverLog{ring: ring, log: s.log}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.in = newInbound(s.ctx, srv, opts, s.log, s.mask, s.life)
	s.out = newOutbound(s.ctx, srv, opts, s.log, s.mask, s.limits, s.life, s.tools, s.in, s.connectionLost)
	s.feat = newFeatureState(srv.Name, s.log, s.mask, s.limits, s.out)
	var err error
	if s.link, err = s.newLink(ring); err != nil {
		s.cancel()
		return nil, err
	}

	var cctx context.Context
	var cancel func()
	if proc, ok := s.link.(processLink); ok && opts.WorkingTimeout > timeout {
		cctx, cancel = s.conn.workingDeadline(ctx, proc, opts.WorkingTimeout, func(how string, spent, next time.Duration) {
			s.log.Info("still working when its timeout ran out; waiting longer", "working", how, "timeout", next)
			if opts.OnStillWorking != nil {
				opts.OnStillWorking(how, spent, next)
			}
		})
	} else {
		cctx, cancel = context.WithDeadlineCause(ctx, s.conn.began.Add(timeout), errConnectTimeout)
	}
	defer cancel()
	// A limit the server goes over ends connecting at once.
	cctx, cancelLimit := context.WithCancelCause(cctx)
	defer cancelLimit(nil)
	go func() {
		select {
		case <-s.limits.hit:
			cancelLimit(s.limits.tripped())
		case <-cctx.Done():
		}
	}()
	// Until Connect succeeds, a timeout also ends the session's own context,
	// which is what mcp-go's transports were started with (an SSE stream
	// being opened, for one).
	stopAfter := context.AfterFunc(cctx, s.cancel)

	// The connect's INTERNAL span is the parent of the handshake's
	// requests (server/discover, initialize, the lists).
	octx, span := s.out.tel.StartConnect(cctx, telemetry.Request{Server: srv.Name, Transport: s.out.transportName()})
	err = s.link.open(octx, s)
	if err == nil && !stopAfter() {
		// Out of time (or over a limit) right after the last answer.
		err = s.connectError(cctx, s.conn.step, context.Cause(cctx))
	}
	stopAfter()
	if err != nil {
		span.End(requestErrorType(cctx, err), 0)
	} else {
		span.End("", 0)
	}
	if err != nil {
		s.opts.Protocols.forget(s.protoKey)
		s.finish(err)
		if s.refusedRemembered && reask && ctx.Err() == nil {
			s.log.Info("the server refused the protocol revision it spoke last time; asking it again", "err", err.Error())
			return connectReasking(ctx, srv, opts, false)
		}
		return nil, err
	}
	if !knownRevision(srv.Protocol) {
		s.opts.Protocols.store(s.protoKey, s.out.proto)
	}
	s.tools.set(s.conn.raws)
	s.conn.raws = nil
	s.log.V(1).Info("connected", "tools", len(s.tools.current()), "protocol", s.out.client.ProtocolVersion())
	s.life.running.Store(true)
	go s.run()
	return s, nil
}

// handshake makes c the session's client, starts it, initializes the
// server in the revision neg names (probing first if it names none) and
// lists its tools. Links call it (see opener) once their transport is up.
// It returns errProbeExit, and nothing else is done, when a local server
// exited on the probe (see discover).
func (s *Session) handshake(cctx context.Context, c *client.Client, neg negotiation) error {
	s.out.client = c
	s.conn.step = stepInitialize
	s.out.client.OnNotification(s.onNotification)
	if err := s.out.client.Start(s.ctx); err != nil {
		return s.connectError(cctx, stepInitialize, transport.NewError(err))
	}
	version, discovered := neg.version, neg.discovered
	if version == "" {
		found := s.discover(cctx, c.GetTransport(), neg.read)
		if found.exited {
			return errProbeExit
		}
		version, discovered = found.version, found.discovered
	}
	if mcpgo.IsModernProtocol(version) && discovered == nil {
		// Asked here rather than by mcp-go's Initialize, which falls back
		// to initialize when the probe fails and retries a refused
		// version only at another one.
		d, err := s.discoverModern(cctx, c.GetTransport())
		if err != nil && s.srv.Protocol == ModernProtocolVersion && cctx.Err() == nil && !isTransportError(err) {
			return fmt.Errorf("server %q: initialize: its protocol is pinned to %s but the server does not speak it (%w): set \"protocol\": \"auto\" in its entry, or remove it",
				s.srv.Name, ModernProtocolVersion, err)
		}
		if err != nil {
			s.refusedRemembered = neg.remembered && cctx.Err() == nil && !isTransportError(err) && s.limits.tripped() == nil
			return s.connectError(cctx, stepInitialize, err)
		}
		discovered = d
	}
	if p, ok := c.GetTransport().(discoverPrimer); ok && discovered != nil {
		// mcp-go's Initialize asks server/discover again: the answer
		// is the one just received, not a second probe.
		p.primeDiscover(discovered)
	}
	// Roots and elicitation only where the session serves them: up to
	// 2025-11-25 (see elicitOption). No server request comes before
	// initialize, so the client takes them before any can arrive.
	req := mcpgo.InitializeRequest{}
	if !mcpgo.IsModernProtocol(version) {
		rootsOpt, rootsCap := s.in.roots()
		if rootsOpt != nil {
			rootsOpt(c)
		}
		if opt := s.in.elicitOption(version); opt != nil {
			opt(c)
		}
		req.Params.Capabilities.Roots = rootsCap
	}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = s.out.clientInfo
	ictx, span := s.out.tel.StartClient(cctx, telemetry.Request{Method: string(mcpgo.MethodInitialize), Server: s.srv.Name,
		Transport: s.out.transportName(), Protocol: version})
	res, err := s.out.client.Initialize(ictx, req)
	if err != nil {
		span.End(requestErrorType(ictx, err), 0)
	} else {
		span.End("", 0)
	}
	if err != nil {
		// A server that answers the revision it spoke last time with an
		// error (a 2026-07-28-only server refusing initialize) may have
		// changed: Connect asks it again.
		s.refusedRemembered = neg.remembered && cctx.Err() == nil && !isTransportError(err) && s.limits.tripped() == nil
		return s.connectError(cctx, stepInitialize, err)
	}
	s.out.proto = s.out.client.ProtocolVersion()
	s.feat.noteInitialize(res, s.out.modern())
	if s.srv.Protocol == ModernProtocolVersion && s.out.proto != ModernProtocolVersion {
		// mcp-go falls back to initialize when server/discover fails.
		return fmt.Errorf("server %q: initialize: its protocol is pinned to %s but the server speaks %s: set \"protocol\": \"auto\" in its entry, or remove it",
			s.srv.Name, ModernProtocolVersion, s.out.proto)
	}
	if res.Capabilities.Tools == nil {
		s.log.V(1).Info("server declares no tools capability")
	} else {
		s.conn.step = stepToolsList
		raws, err := s.out.listTools(cctx, &s.conn.tools)
		if err != nil {
			return s.connectError(cctx, stepToolsList, err)
		}
		s.conn.raws = raws
	}
	if err := s.listFeatures(cctx); err != nil {
		return err
	}
	s.conn.step = stepDone
	return nil
}

// lostWhileConnecting returns the connection loss reported while
// connecting, if any.
func (s *Session) lostWhileConnecting() error { return s.life.lostEarly() }

// connectError explains why step failed while connecting.
func (s *Session) connectError(cctx context.Context, step string, err error) error {
	name := s.srv.Name
	if le := s.limits.tripped(); le != nil {
		return le.during(step)
	}
	when := "before initialize"
	if step != stepInitialize {
		when = "while listing " + listNoun(step)
	}
	proc, _ := s.link.(processLink)
	if proc != nil {
		if exit := proc.exitCause(cctx, when, err); exit != nil {
			return exit
		}
	}
	cause := context.Cause(cctx)
	switch {
	case errors.Is(cause, errConnectTimeout):
		timeout := &StartTimeoutError{Server: name, Step: step, Timeout: s.conn.spent(), msg: s.conn.timeoutMessage(step)}
		if proc != nil {
			timeout.Progress, timeout.Stderr = proc.progress(), proc.stderrTail()
			timeout.Withheld = proc.withheld(timeout.Stderr)
		}
		return timeout
	case cctx.Err() != nil && !errors.Is(cause, errProcessExited):
		return fmt.Errorf("server %q: %s canceled: %w", name, step, cause)
	}
	if errors.Is(err, ErrNeedsLogin) {
		return authError(s.mask, err)
	}
	if isAuthFlow(err) {
		// The authorization's own requests failed (an authorization
		// server that cannot be reached): not the endpoint's last status.
		return fmt.Errorf("server %q: %s: %w", name, step, authError(s.mask, err))
	}
	var redirect *RedirectError
	if errors.As(err, &redirect) {
		return newError(redirect.Error(), redirect, err)
	}
	if ep, ok := s.link.(endpointLink); ok {
		if explained := ep.explain(step, err); explained != nil {
			return explained
		}
	}
	if isTransportError(err) {
		return newError(fmt.Sprintf("server %q: %s: %s", name, step, s.mask.err(err)), ErrTransport, err)
	}
	return newError(fmt.Sprintf("server %q: %s: %s", name, step, s.mask.err(err)), err)
}

// isTransportError reports whether err came from the transport (mcp-go
// wraps those in *transport.Error) rather than from the server's answer.
func isTransportError(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, ErrTransport)
}

// onNotification runs on mcp-go's read goroutine: it must not make
// requests, so for a changed tool list it only asks the owner goroutine to
// list again; log messages go into the log ring, and a call's progress to
// whoever follows it.
func (s *Session) onNotification(n mcpgo.JSONRPCNotification) {
	s.feat.onNotification(n)
	switch n.Method {
	case mcpgo.MethodNotificationToolsListChanged:
		s.tools.listChanged()
	case mcpgo.MethodNotificationSubscriptionsAcknowledged:
		// On 2026-07-28 a change made before the subscriptions/listen
		// stream was open (or while it was being opened again) was sent
		// to nobody: the stream's acknowledgement is a reason to look
		// again too, once the list is no longer fresh.
		s.tools.mayHaveChanged()
	case string(mcpgo.MethodNotificationMessage):
		s.serverLog.onMessage(n)
	case string(mcpgo.MethodNotificationProgress):
		s.out.progress.onProgress(n)
	}
}

// connectionLost reports the loss of the connection, and so the end of the
// session, if err means the connection is gone for good (see
// endpointLink.lost; a local session ends by its process's exit).
func (s *Session) connectionLost(err error) {
	if ep, ok := s.link.(endpointLink); ok && ep.lost(err) {
		s.life.reportLost(newError(fmt.Sprintf("server %q: connection lost: %s", s.srv.Name, s.mask.err(err)), ErrTransport, ep.unreachable(err), err))
	}
}

// run is the owner goroutine.
func (s *Session) run() {
	s.applyLogLevel()
	s.listen()
	proc, _ := s.link.(processLink)
	var exited <-chan struct{} // never ready for a remote server
	if proc != nil {
		exited = proc.exited()
	}
	for {
		select {
		case <-s.life.closing:
			s.finish(nil)
			return
		case <-s.limits.hit:
			s.finish(s.life.unlessClosing(s.limits.tripped()))
			return
		case <-exited:
			s.finish(s.life.unlessClosing(s.limitOr(proc.exitCause(s.ctx, "", nil))))
			return
		case err := <-s.life.lost:
			s.finish(s.life.unlessClosing(s.limitOr(err)))
			return
		case <-s.tools.relist:
			s.refresh()
		case <-s.feat.relist:
			s.refreshFeatures()
		}
	}
}

// limitOr returns the limit the server went over, if any, else err: going
// over a limit makes the connection fail too, but the limit is why.
func (s *Session) limitOr(err error) error {
	if le := s.limits.tripped(); le != nil {
		return le
	}
	return err
}

// refresh lists the tools again after tools/list_changed, or after a
// listen stream's acknowledgement once the list is stale.
func (s *Session) refresh() {
	if !s.tools.noticed.Swap(false) && s.out.fresh.fresh(stepToolsList, time.Now()) {
		s.log.V(1).Info("tool list still fresh (ttlMs): not listed again")
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	raws, err := s.out.listTools(ctx, &listProgress{})
	if err != nil {
		if s.ctx.Err() != nil || s.limits.tripped() != nil {
			return // closing, or ending over a limit
		}
		s.log.Error(err, "listing tools again after tools/list_changed failed")
		s.connectionLost(err)
		return
	}
	if s.tools.set(raws) {
		s.log.V(1).Info("tool set changed", "tools", len(raws))
		signal(s.tools.changed) // unless the previous signal was not taken yet
	}
}

// finish stops everything the session started, records why it ended and
// closes done. Only one goroutine calls it: Connect on failure, or run.
func (s *Session) finish(why error) {
	s.cancel()
	if s.out.client != nil {
		// Closes the local server's stdin, or ends the remote HTTP session.
		if err := s.out.client.Close(); err != nil {
			s.log.V(1).Info("closing transport", "err", err.Error())
		}
	}
	// Background work (cancellation notices) ends with s.ctx and the
	// closed transport; the link is stopped after it, so that nothing of
	// it is left behind (an idle HTTP connection, say).
	s.life.stopBackground()
	stopErr := s.link.stop(s.life.running.Load())
	if why != nil {
		s.log.Info("session ended", "err", why.Error())
	} else {
		s.log.V(1).Info("session closed")
	}
	s.life.end(why, stopErr)
}

// Name is the server's configured name.
func (s *Session) Name() string { return s.srv.Name }

// PID is the local server's process id (also its process group id), or 0
// for a remote server.
func (s *Session) PID() int {
	if proc, ok := s.link.(processLink); ok {
		return proc.pid()
	}
	return 0
}

// Tools returns the current converted tool set, sorted by ID.
func (s *Session) Tools() []Tool { return s.tools.current() }

// ConvertErrors returns why tools of the current set were left out (see
// Warnings for tools kept with a degraded schema).
func (s *Session) ConvertErrors() []error { return s.tools.convertErrors() }

// Warnings returns the warnings of the current tool set (ToolWarnings of
// Tools): tools kept although references in their input schemas were not
// followed, so those parts of their arguments are not checked.
func (s *Session) Warnings() []ToolWarning { return s.tools.warnings() }

// RawTools returns the current tools/list elements as the server sent them.
func (s *Session) RawTools() []json.RawMessage { return s.tools.raws() }

// ToolsChanged is signalled (buffered, capacity one) after a re-list that
// changed Tools. Several changes may collapse into one signal, so a receiver
// reads Tools afresh; none is lost.
func (s *Session) ToolsChanged() <-chan struct{} { return s.tools.changed }

// Done is closed when the session has ended and everything it started has
// stopped.
func (s *Session) Done() <-chan struct{} { return s.life.done }

// Err says why the session ended: nil while it runs and after Close, an
// *ExitError when the local process exited, a *LimitError when the server
// went over one of its limits, an error wrapping ErrTransport when a remote
// connection was lost.
func (s *Session) Err() error {
	_, err := s.life.ended()
	return err
}

// StderrTail returns the last lines the local server wrote to stderr
// (Options.StderrLines of them at most); nil for a remote server.
func (s *Session) StderrTail() []string {
	if proc, ok := s.link.(processLink); ok {
		return proc.stderrTail()
	}
	return nil
}

// Ping sends the server an MCP ping and waits for the answer, within ctx.
// It is also how a host finds out whether a remote session's sign-in
// still holds after the stored credentials changed (a sign-out from
// another terminal): if it does not, the session ends with an error
// wrapping ErrNeedsLogin, which Ping returns too. A ping after the session
// ended fails with ErrClosed. The 2026-07-28 revision has no ping (and
// mcp-go's Ping sends nothing on it): there Ping asks server/discover,
// which every server of that revision answers, through the same
// transport, authorization and all.
func (s *Session) Ping(ctx context.Context) error {
	if ended, endErr := s.life.ended(); ended {
		if endErr != nil {
			return newError(fmt.Sprintf("ping: session ended: %s", endErr), ErrClosed, endErr)
		}
		return fmt.Errorf("server %q: ping: %w", s.srv.Name, ErrClosed)
	}
	if err := s.ping(ctx); err != nil {
		if errors.Is(err, ErrNeedsLogin) {
			return authError(s.mask, err)
		}
		return newError(fmt.Sprintf("server %q: ping: %s", s.srv.Name, s.mask.err(err)), err)
	}
	return nil
}

// ping asks the server something it must answer: ping, or on the
// 2026-07-28 revision server/discover.
func (s *Session) ping(ctx context.Context) error {
	if s.out.modern() {
		_, err := s.out.client.Discover(ctx, mcpgo.DiscoverRequest{})
		return err
	}
	//lint:ignore SA1019 deprecated only by protocol 2026-07-28, which ping above does not send it on.
	return s.out.client.Ping(ctx)
}

// Close ends the session: a local server's stdin is closed, then its process
// group gets SIGTERM and finally SIGKILL, each after a grace period; a remote
// session is ended with DELETE. It returns when everything has stopped. It is
// idempotent; the error is non-nil only if the process could not be reaped.
func (s *Session) Close() error {
	// Cancelling aborts a re-list in progress.
	s.life.requestClose(s.cancel)
	return s.life.stopError()
}
