package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/telemetry"
)

// The protocol revisions a session speaks.
//
// A server of the 2026-07-28 revision ("modern": stateless, no initialize,
// every request carrying its protocol version and the client's
// capabilities in _meta, notifications through subscriptions/listen) is
// spoken to in it; every other server in 2025-11-25 (or the older revision
// it answers initialize with). Spec.Protocol decides: a revision pins it;
// "" (the default) and ProtocolAuto speak the revision the ProtocolCache
// remembers for the server's definition, and otherwise learn it from one
// server/discover probe, as the 2026-07-28 revision's backward
// compatibility rules say, and remember it (a cache opened with
// OpenProtocolCache keeps it across restarts and processes). So a server
// is asked once per definition, not once per connect.
//
// The probe costs a 2025-11-25 server (all the npm servers today) one
// request before initialize, the first time: over stdio the npm servers
// answer it -32601 within a millisecond (BenchmarkConnectNpm), over HTTP
// it is a round trip more. A stdio server that ignores unknown requests
// costs discoverGrace once, one that exits on them one more start, once;
// after that the cache sends no probe. A server whose revision changed
// (upgraded to 2026-07-28 only) fails the remembered one once, and is
// forgotten and asked again (see Connect).
const (
	// ProtocolVersion is the revision of the initialize handshake that a
	// session asks for; a server that only speaks an older revision
	// answers with that one.
	ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	// ModernProtocolVersion is the stateless revision.
	ModernProtocolVersion = mcpgo.ProtocolVersion20260728
	// ProtocolAuto, as Spec.Protocol, asks the server which revision it
	// speaks.
	ProtocolAuto = "auto"
)

// discoverGrace is how long a local server that has read the
// server/discover probe (its stdin pipe is empty) has to answer it before
// it is taken for a server of the older revisions that ignores unknown
// requests. Servers of both revisions answer at once, the older ones with
// an error (measured: server-everything, -filesystem and -memory answer
// -32601 within a millisecond); only one that never answers costs this.
// Waiting for the read first is what lets a server take as long as it
// needs to start (an `npx -y` download) without being misjudged, and a
// silent one cost no more than this after it started.
const discoverGrace = 300 * time.Millisecond

// DiscoverGrace is discoverGrace: what a stdio server that ignores the
// server/discover probe costs its first connect (BENCHMARKS.md says it).
const DiscoverGrace = discoverGrace

// drainPoll is how often the probe looks whether the server has read it.
const drainPoll = 5 * time.Millisecond

// listenRetry and listenRetryMax bound how soon a subscriptions/listen
// stream that ended is opened again (doubling while it keeps ending at
// once).
const (
	listenRetry    = time.Second
	listenRetryMax = 30 * time.Second
)

// protocolKey identifies what answers a spec: the process it starts or the
// endpoint it reaches, with what it is given.
func protocolKey(srv Spec) string {
	b, _ := json.Marshal(struct {
		Name, Type, URL, Transport string
		Command                    []string
		Env, Headers               [][2]string
	}{srv.Name, string(srv.Type), srv.URL, string(srv.Transport), srv.Command, pairs(srv.Env), pairs(srv.Headers)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func pairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// knownRevision reports whether v is a revision Spec.Protocol may pin.
func knownRevision(v string) bool { return v == ProtocolVersion || v == ModernProtocolVersion }

// negotiation is how a link tells the handshake which revision to speak.
type negotiation struct {
	// version is the revision decided before the handshake (pinned,
	// remembered, or probed over a transport of its own); "" makes the
	// handshake probe over the session's transport.
	version string
	// read reports whether a local server has read everything sent to it
	// so far (see discoverGrace); nil for a remote server, which answers
	// an HTTP request either way.
	read func() bool
	// discovered is the server's answer to a probe already sent (over a
	// transport of its own: see remoteLink.negotiated), when it was a
	// discover result; the handshake hands it to mcp-go instead of
	// letting mcp-go ask again (see discoverPrimer).
	discovered *transport.JSONRPCResponse
	// remembered says that version came from the ProtocolCache, not from
	// the spec or a probe: a server that refuses it may have changed
	// revision (see Session.refusedRemembered).
	remembered bool
}

// probe is what a server/discover probe found.
type probe struct {
	// version is the revision to speak.
	version string
	// discovered is the answer when it was a discover result (version
	// is then ModernProtocolVersion); nil otherwise.
	discovered *transport.JSONRPCResponse
	// exited says that a local server exited on the probe (errProbeExit).
	exited bool
}

// discoverPrimer is a transport that can answer the next server/discover
// request of mcp-go's from an answer the session already has: the
// session's own probe is then the only one sent. mcp-go's Initialize
// sends server/discover whenever it is to speak 2026-07-28, to learn the
// capabilities, which the probe's answer already holds.
type discoverPrimer interface {
	primeDiscover(resp *transport.JSONRPCResponse)
}

// primedDiscover is the answer a transport gives to the next
// server/discover (see discoverPrimer). Safe for concurrent use.
type primedDiscover struct {
	mu   sync.Mutex // guards resp
	resp *transport.JSONRPCResponse
}

func (p *primedDiscover) primeDiscover(resp *transport.JSONRPCResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resp = resp
}

// take returns the primed answer to req, once, if req is server/discover;
// else nil (send it).
func (p *primedDiscover) take(req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	if req.Method != string(mcpgo.MethodServerDiscover) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := p.resp
	p.resp = nil
	if resp == nil {
		return nil
	}
	answer := *resp
	answer.ID = req.ID
	return &answer
}

// protocol is the revision decided without asking the server: the one the
// spec pins, or the one the server spoke last time; "" (ask it) else.
func (s *Session) protocol() string {
	if knownRevision(s.srv.Protocol) {
		return s.srv.Protocol
	}
	return s.opts.Protocols.lookup(s.protoKey)
}

// errProbeExit says that a local server exited after it read the
// server/discover probe, without answering it: some servers of the older
// revisions end on an unknown request. Its link starts the server again
// and speaks 2025-11-25 to it at once.
var errProbeExit = errors.New("the server exited when asked server/discover")

// discover sends the server/discover probe over tr and returns the
// revision to speak: ModernProtocolVersion when the server answers with a
// discover result that lists it (or refuses the version with an
// UnsupportedProtocolVersionError that lists it), ProtocolVersion for any
// other answer, no answer within discoverGrace of reading it (read), an
// HTTP error status, or a failure. A result that is not a discover result
// (a server that answers every unknown request with {}) is not taken for
// one. exited reports that the transport closed after the server read the
// probe, unanswered (see errProbeExit). discover returns when ctx ends at
// the latest, with ProtocolVersion: the handshake then fails on time as
// it would have. A discover result is returned with the verdict, for
// mcp-go (see discoverPrimer).
func (s *Session) discover(ctx context.Context, tr transport.Interface, read func() bool) (p probe) {
	ctx, span := s.discoverSpan(ctx)
	req := s.discoverRequest(ctx, tr)
	// The span ends with the probe: an answer's error, the wait given up
	// (timeout), the connect's end; an exit on the probe is a transport
	// error.
	var errType string
	var code int
	defer func() {
		if p.exited {
			errType = telemetry.ErrorTransport
		}
		span.End(errType, code)
	}()
	pctx, cancel := context.WithCancel(ctx)
	type answer struct {
		resp *transport.JSONRPCResponse
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := tr.SendRequest(pctx, req)
		answers <- answer{resp, err}
	}()
	// The request goroutine ends with pctx at the latest.
	stop := func() answer {
		cancel()
		return <-answers
	}
	var poll <-chan time.Time
	if read != nil {
		t := time.NewTicker(drainPoll)
		defer t.Stop()
		poll = t.C
	}
	var grace <-chan time.Time
	var wasRead bool
	for {
		select {
		case a := <-answers:
			cancel()
			if a.err != nil && read != nil && (wasRead || read()) && errors.Is(a.err, transport.ErrTransportClosed) {
				return probe{version: ProtocolVersion, exited: true}
			}
			switch {
			case a.err != nil:
				errType = requestErrorType(pctx, a.err)
			case a.resp.Error != nil:
				code = a.resp.Error.Code
				errType = strconv.Itoa(code)
			}
			v := discoverVerdict(a.resp, a.err)
			s.log.V(1).Info("server/discover answered", "speaking", v)
			p := probe{version: v}
			if v == ModernProtocolVersion && a.resp.Error == nil {
				p.discovered = a.resp
			}
			return p
		case <-poll:
			if read() {
				poll, wasRead = nil, true
				t := time.NewTimer(discoverGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			errType = telemetry.ErrorTimeout
			stop()
			s.log.V(1).Info("no answer to server/discover after the server read it", "speaking", ProtocolVersion, "waited", discoverGrace)
			return probe{version: ProtocolVersion}
		case <-ctx.Done():
			errType = telemetry.ErrorType(ctx, ctx.Err())
			stop()
			// The process may end before its transport says so: the
			// handshake's context ends with errProcessExited first.
			if read != nil && errors.Is(context.Cause(ctx), errProcessExited) && (wasRead || read()) {
				return probe{version: ProtocolVersion, exited: true}
			}
			return probe{version: ProtocolVersion}
		}
	}
}

// discoverSpan starts the CLIENT span of a server/discover request.
func (s *Session) discoverSpan(ctx context.Context) (context.Context, telemetry.RequestSpan) {
	return s.out.tel.StartClient(ctx, telemetry.Request{Method: string(mcpgo.MethodServerDiscover), Server: s.srv.Name,
		Transport: s.out.transportName(), Protocol: ModernProtocolVersion})
}

// discoverRequest is a server/discover request at ModernProtocolVersion,
// under a fresh id, with the transport's version header set to match its
// _meta, which carries ctx's trace context.
func (s *Session) discoverRequest(ctx context.Context, tr transport.Interface) transport.JSONRPCRequest {
	params := map[string]any{"_meta": s.out.requestMeta(ModernProtocolVersion)}
	telemetry.InjectMeta(ctx, params)
	if hc, ok := tr.(transport.HTTPConnection); ok {
		// The MCP-Protocol-Version header must match the _meta.
		hc.SetProtocolVersion(ModernProtocolVersion)
	}
	return transport.JSONRPCRequest{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		ID:      s.out.nextID("discover"),
		Method:  string(mcpgo.MethodServerDiscover),
		Params:  params,
		Header:  standardHeaders(ModernProtocolVersion, string(mcpgo.MethodServerDiscover), params),
	}
}

// discoverModern asks server/discover of a server whose revision is known
// to be ModernProtocolVersion (pinned, or remembered), and returns its
// answer for mcp-go (see discoverPrimer). A server that refuses the version
// with UnsupportedProtocolVersion (-32022) and lists among data.supported a
// version the session speaks is asked again once at it, as the revision
// says a client does; it is ModernProtocolVersion, the only modern one
// there is, so the retry is the same request under a new id. Any other
// failure is returned: a session pinned to the revision does not fall back
// to initialize.
func (s *Session) discoverModern(ctx context.Context, tr transport.Interface) (*transport.JSONRPCResponse, error) {
	for attempt := 0; ; attempt++ {
		sctx, span := s.discoverSpan(ctx)
		resp, err := tr.SendRequest(sctx, s.discoverRequest(sctx, tr))
		if err != nil {
			span.End(requestErrorType(sctx, err), 0)
			return nil, fmt.Errorf("server/discover: %w", err)
		}
		if resp.Error == nil {
			span.End("", 0)
			return resp, nil
		}
		span.End(strconv.Itoa(resp.Error.Code), resp.Error.Code)
		var unsupported mcpgo.UnsupportedProtocolVersionError
		if attempt == 0 && errors.As(resp.Error.AsError(), &unsupported) && slices.Contains(unsupported.Supported, ModernProtocolVersion) {
			s.log.V(1).Info("server/discover refused the protocol version; asking again at one it supports",
				"supported", unsupported.Supported, "speaking", ModernProtocolVersion)
			continue
		}
		return nil, fmt.Errorf("server/discover: %w", resp.Error.AsError())
	}
}

// discoverVerdict is the revision an answer to server/discover says the
// server speaks.
func discoverVerdict(resp *transport.JSONRPCResponse, err error) string {
	if err != nil || resp == nil {
		return ProtocolVersion
	}
	if resp.Error != nil {
		var unsupported mcpgo.UnsupportedProtocolVersionError
		if errors.As(resp.Error.AsError(), &unsupported) && slices.Contains(unsupported.Supported, ModernProtocolVersion) {
			return ModernProtocolVersion
		}
		return ProtocolVersion
	}
	var result struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(resp.Result, &result) != nil || len(result.Capabilities) == 0 || result.Capabilities[0] != '{' {
		return ProtocolVersion
	}
	if slices.Contains(result.SupportedVersions, ModernProtocolVersion) {
		return ModernProtocolVersion
	}
	return ProtocolVersion
}

// modern reports whether the session speaks the 2026-07-28 revision. It is
// set by the handshake, before anything reads it.
func (o *outbound) modern() bool { return mcpgo.IsModernProtocol(o.proto) }

// nextID numbers a request of the session's own: "freecode-prefix-n".
func (o *outbound) nextID(prefix string) mcpgo.RequestId {
	return mcpgo.NewRequestId(fmt.Sprintf("freecode-%s-%d", prefix, o.seq.Add(1)))
}

// Protocol is the protocol revision the session speaks ("2025-11-25",
// "2026-07-28", or an older one a server answered initialize with).
func (s *Session) Protocol() string { return s.out.proto }

// requestMeta is the _meta that every request of the 2026-07-28 revision
// carries: the revision, the client's identity and capabilities (those
// declared in the handshake's InitializeRequest), and the log level asked
// for (Spec.LogLevel; without one the server sends no log messages).
func (o *outbound) requestMeta(version string) map[string]any {
	enc := o.meta.Load()
	if enc == nil || enc.version != version {
		enc = o.encodeMeta(version)
		if o.client != nil {
			// The capabilities are settled once the client is: what the
			// session answers does not change while it lives.
			o.meta.Store(enc)
		}
	}
	meta := map[string]any{
		mcpgo.MetaKeyProtocolVersion:    version,
		mcpgo.MetaKeyClientCapabilities: enc.caps,
		mcpgo.MetaKeyClientInfo:         enc.info,
	}
	if o.srv.LogLevel != "" {
		meta[mcpgo.MetaKeyLogLevel] = o.srv.LogLevel
	}
	return meta
}

// sessionMeta is requestMeta(o.proto) encoded, a json.RawMessage, for a
// request with no _meta key of its own.
func (o *outbound) sessionMeta() any {
	enc := o.meta.Load()
	if enc == nil || enc.version != o.proto {
		enc = o.encodeMeta(o.proto)
		if o.client != nil {
			o.meta.Store(enc)
		}
	}
	return enc.all
}

// encodeMeta encodes the client capabilities and info of requestMeta.
func (o *outbound) encodeMeta(version string) *encodedMeta {
	var caps mcpgo.ClientCapabilities
	if o.client != nil {
		caps = o.client.GetClientCapabilities()
	}
	if caps.Roots == nil {
		_, caps.Roots = o.in.roots()
	}
	if mcpgo.IsModernProtocol(version) {
		// On this revision a server asks for input (an elicitation, the
		// roots) by answering a request with input_required, which the
		// session answers (roundTrips) over any transport: elicitation,
		// form and URL mode, when Options.Elicit can answer, the roots
		// when the spec lists them (above), never sampling.
		caps.Elicitation, caps.Sampling = nil, nil
		if o.in.elicitH != nil {
			caps.Elicitation = &mcpgo.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
		}
	}
	enc := &encodedMeta{version: version}
	// Both are plain structs of strings and maps: they always encode.
	enc.caps, _ = json.Marshal(caps)
	enc.info, _ = json.Marshal(o.clientInfo)
	all := map[string]any{mcpgo.MetaKeyProtocolVersion: version, mcpgo.MetaKeyClientCapabilities: enc.caps, mcpgo.MetaKeyClientInfo: enc.info}
	if o.srv.LogLevel != "" {
		all[mcpgo.MetaKeyLogLevel] = o.srv.LogLevel
	}
	b, _ := json.Marshal(all)
	enc.raw = b
	enc.all = json.RawMessage(b)
	return enc
}

// ownMeta reports whether raw is the session's _meta as encodeMeta encoded
// it (sessionMeta): the very bytes, not a copy, so that a value from
// anywhere else is never taken for it.
func (o *outbound) ownMeta(raw json.RawMessage) bool {
	enc := o.meta.Load()
	return enc != nil && len(raw) > 0 && len(raw) == len(enc.raw) && &raw[0] == &enc.raw[0]
}

// standardHeaders are the HTTP headers the 2026-07-28 revision requires of
// a request (Mcp-Method, Mcp-Name); nil for older revisions. Transports
// other than streamable HTTP ignore them.
func standardHeaders(version, method string, params map[string]any) http.Header {
	b, err := json.Marshal(params)
	if err != nil {
		return nil
	}
	std := mcpgo.StandardHeaders(version, mcpgo.MCPMethod(method), b)
	if len(std) == 0 {
		return nil
	}
	h := http.Header{}
	for k, v := range std {
		h.Set(k, v)
	}
	return h
}

// newRequest is a request of the session's own (tools/list, tools/call)
// with params, and meta merged into its _meta: on the 2026-07-28 revision
// with the protocol's own _meta and headers (and, for a tools/call over
// HTTP, the tool's x-mcp-header parameters).
func (o *outbound) newRequest(prefix, method string, params map[string]any, meta map[string]any) transport.JSONRPCRequest {
	switch {
	case o.modern() && meta == nil:
		// The session's _meta as it was encoded once: no map to build
		// and encode on every call. A trace context, when there is one,
		// is added to it as a map (telemetry.InjectMeta).
		params["_meta"] = o.sessionMeta()
	case o.modern():
		maps.Copy(meta, o.requestMeta(o.proto))
		params["_meta"] = meta
	case len(meta) > 0:
		params["_meta"] = meta
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		ID:      o.nextID(prefix),
		Method:  method,
		Params:  params,
	}
	if o.modern() && o.srv.Type == Remote {
		// Only streamable HTTP sends headers: over stdio encoding the
		// params once more for them is a cost per call for nothing.
		req.Header = standardHeaders(o.proto, method, params)
		if method == string(mcpgo.MethodToolsCall) {
			o.paramHeaders(req.Header, params)
		}
	}
	return req
}

// paramHeaders adds to h the Mcp-Param-* headers that the called tool's
// x-mcp-header annotations ask for (2026-07-28, streamable HTTP).
func (o *outbound) paramHeaders(h http.Header, params map[string]any) {
	name, _ := params["name"].(string)
	tool := o.tools.mcpgoTool(name)
	if tool == nil || h == nil {
		return
	}
	b, err := json.Marshal(params)
	if err != nil {
		return
	}
	for k, v := range mcpgo.GenerateParamHeaders(tool, b) {
		h.Set(k, v)
	}
}

func decodeMCPGoTool(raw json.RawMessage) (*mcpgo.Tool, bool) {
	var t mcpgo.Tool
	if json.Unmarshal(raw, &t) != nil {
		return nil, false
	}
	var schema struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(raw, &schema) == nil {
		t.RawInputSchema = schema.InputSchema
	}
	return &t, true
}

// validHeaderTools drops the tools whose x-mcp-header annotations break the
// rules of the 2026-07-28 revision, which a client over streamable HTTP
// must leave out of the list (one bad definition must not stop the
// others).
func (o *outbound) validHeaderTools(raws []json.RawMessage) []json.RawMessage {
	if !o.modern() || o.srv.Type != Remote {
		return raws
	}
	out := raws[:0:0]
	for _, raw := range raws {
		if t, ok := decodeMCPGoTool(raw); ok {
			if err := mcpgo.ValidateParamHeaderAnnotations(t); err != nil {
				o.log.Info("tool skipped: invalid x-mcp-header annotations", "tool", t.Name, "err", err.Error())
				continue
			}
		}
		out = append(out, raw)
	}
	return out
}

// listen opens, on the 2026-07-28 revision, the subscriptions/listen
// stream that carries the list_changed notifications of tools, prompts
// and resources the server says change, and opens it again when it ends,
// until the session does. (Resource subscriptions, which this revision
// also moves onto the stream, are not offered on it: see noteInitialize.)
func (s *Session) listen() {
	if !s.out.modern() {
		return
	}
	caps := s.out.client.GetServerCapabilities()
	var filter mcpgo.SubscriptionFilter
	filter.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	filter.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	filter.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	if filter.IsEmpty() {
		return
	}
	if !s.life.startBackground() {
		return
	}
	go func() {
		defer s.life.endBackground()
		wait := listenRetry
		for {
			began := time.Now()
			err := s.out.client.Listen(s.ctx, filter)
			if s.ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.V(1).Info("subscriptions/listen ended", "err", s.mask.err(err))
				s.connectionLost(err)
			}
			if time.Since(began) > listenRetryMax {
				wait = listenRetry
			}
			timer := time.NewTimer(wait)
			select {
			case <-s.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			wait = min(2*wait, listenRetryMax)
		}
	}()
}

// writeWatcher is a local server's stdin as the session writes to it: it
// knows whether anything was written, so that read can tell an empty pipe
// from one the server has emptied. Each Write is one whole message, of
// mcp-go's or of stdioFast's: mu keeps them from interleaving (mcp-go
// serializes only its own).
type writeWatcher struct {
	f     interface{ Write([]byte) (int, error) }
	close func() error
	wrote atomic.Bool
	mu    sync.Mutex // held by Write
}

func (w *writeWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.f.Write(b)
	if n > 0 {
		w.wrote.Store(true)
	}
	return n, err
}

func (w *writeWatcher) Close() error { return w.close() }
