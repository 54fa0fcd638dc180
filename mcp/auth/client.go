package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/oauth2"
)

const (
	// DefaultHTTPTimeout bounds each request to an authorization server
	// (metadata, registration, token, revocation).
	DefaultHTTPTimeout = 30 * time.Second
	// DefaultRefreshMargin is how long before its expiry an access token
	// is renewed; at most half of the token's lifetime.
	DefaultRefreshMargin = time.Minute
	// DefaultLoginTimeout bounds Login when its context has no deadline.
	DefaultLoginTimeout = 5 * time.Minute
	// MaxStepUps is how many re-authorizations for 403 insufficient_scope
	// run in a row before FreeCode gives up with ErrInsufficientScope; any
	// successful answer resets the count.
	MaxStepUps = 2
)

// Options configure a Client.
type Options struct {
	// Server is the configured server name: part of the store key and
	// of every message.
	Server string
	// URL is the server's MCP endpoint as configured. Tokens are keyed by
	// it and sent only to its origin.
	URL string
	// Config is the server's oauth settings.
	Config Config
	// Store keeps the tokens. Required.
	Store *Store
	// HTTPClient gives the transport and timeout of the requests to
	// authorization servers and metadata endpoints; nil means
	// http.DefaultTransport and DefaultHTTPTimeout. Its redirect policy
	// is not used: the Client's own applies (see [ErrRedirectRefused]). An
	// *http.Transport is cloned (Close releases the clone's connections).
	// It must not be one that runs through this Client's Transport.
	HTTPClient *http.Client
	// Logger gets diagnostics at V(1); never a token or secret.
	Logger logr.Logger
	// Interaction, if set, lets the Transport run an authorization code
	// flow in-band when the server asks for one. Without it the Transport
	// fails with ErrNeedsLogin and `freecode mcp login` signs in.
	Interaction *Interaction
	// RefreshMargin replaces DefaultRefreshMargin when positive.
	RefreshMargin time.Duration
	// ClientName replaces DefaultClientName in dynamic registrations.
	ClientName string
	// Now replaces time.Now (tests move the clock).
	Now func() time.Time
}

func (o Options) String() string {
	return fmt.Sprintf("auth.Options{Server:%q URL:%q Config:%v Interactive:%t}", o.Server, redactRawURL(o.URL), o.Config, o.Interaction != nil)
}
func (o Options) GoString() string     { return o.String() }
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
func (o Options) MarshalLog() any      { return o.String() }

// Client is the OAuth client of one remote server: it holds no token
// itself beyond a cache of the store's file, re-read whenever the file
// changes, so a sign-in or refresh by another process is seen at the next
// request.
type Client struct {
	name        string
	rawURL      string
	resourceURL *url.URL
	cfg         Config
	grant       Grant
	store       *Store
	key         string
	http        *http.Client
	own         *http.Transport // the clone c.http runs over; nil for a transport not an *http.Transport
	log         logr.Logger
	interaction *Interaction
	margin      time.Duration
	clientName  string
	now         func() time.Time

	// mu guards the fields below. It is never held across a network
	// request or while waiting for the file lock.
	mu      sync.Mutex
	loaded  bool
	cur     *record     // the store's record as last read; never mutated
	curStat fs.FileInfo // of the file cur was read from
	flight  *flight     // the renewal or authorization in progress
	stepUps int         // step-up authorizations since the last success
	// renewedOn401 is the access token a renewal triggered by a 401
	// produced, until a request succeeds with it; a 401 for it too means
	// renewing does not help (the server moved to another authorization
	// server, say) and a new authorization is needed.
	renewedOn401 string
}

func (c *Client) String() string {
	return fmt.Sprintf("auth.Client{Server:%q URL:%q Config:%v}", c.name, redactURL(c.resourceURL), c.cfg)
}
func (c *Client) GoString() string     { return c.String() }
func (c *Client) LogValue() slog.Value { return slog.StringValue(c.String()) }
func (c *Client) MarshalLog() any      { return c.String() }

// New returns the OAuth client of one server. It does no I/O.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: url %q is not an http(s) URL", opts.Server, redactRawURL(opts.URL))
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("server %q: %w", opts.Server, err)
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("server %q: no token store", opts.Server)
	}
	if opts.Interaction != nil && opts.Interaction.Out == nil {
		return nil, fmt.Errorf("server %q: Interaction.Out is required: the authorization URL is always printed", opts.Server)
	}
	key, err := tokenKey(opts.Server, opts.URL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		name:        opts.Server,
		rawURL:      opts.URL,
		resourceURL: u,
		cfg:         opts.Config,
		grant:       opts.Config.grant(),
		store:       opts.Store,
		key:         key,
		http:        opts.HTTPClient,
		log:         opts.Logger.WithValues("server", opts.Server),
		interaction: opts.Interaction,
		margin:      opts.RefreshMargin,
		clientName:  opts.ClientName,
		now:         opts.Now,
	}
	c.http = c.httpClient(opts.HTTPClient)
	if c.margin <= 0 {
		c.margin = DefaultRefreshMargin
	}
	if c.clientName == "" {
		c.clientName = DefaultClientName
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// httpClient is the client of the authorization's requests: hc's
// transport and timeout (nil: http.DefaultTransport, DefaultHTTPTimeout)
// under the redirect policy ([Client.checkRedirect]) and the endpoint
// policy for the addresses hosts resolve to. An *http.Transport is
// cloned, so that its dial can refuse the addresses the policy does not
// admit ([guardDial]); Close releases the clone's connections. Where no
// such dial sees the endpoint's address (a proxy, another RoundTripper, a
// transport that dials TLS itself) the host is resolved and checked
// before each request ([guardedTransport]).
func (c *Client) httpClient(hc *http.Client) *http.Client {
	var rt http.RoundTripper = http.DefaultTransport
	timeout := DefaultHTTPTimeout
	if hc != nil {
		rt, timeout = hc.Transport, hc.Timeout
		if rt == nil {
			rt = http.DefaultTransport
		}
	}
	loopback := c.loopbackServer()
	g := &guardedTransport{base: rt, loopbackServer: loopback}
	if t, ok := rt.(*http.Transport); ok {
		c.own = t.Clone()
		c.own.DialContext = guardDial(t.DialContext, loopback)
		g.base = c.own
		//lint:ignore SA1019 a caller's transport may still set DialTLS, which bypasses DialContext for https
		if c.own.DialTLSContext == nil && c.own.DialTLS == nil {
			g.own = c.own
		}
	}
	return &http.Client{Transport: g, Timeout: timeout, CheckRedirect: c.checkRedirect}
}

// Close releases the idle connections of the Client's own HTTP client.
// The Client stays usable.
func (c *Client) Close() {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
}

// current is the stored record, re-read if the file changed; nil if no
// tokens are stored.
func (c *Client) current() (*record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.currentLocked()
}

func (c *Client) currentLocked() (*record, error) {
	if c.loaded && !c.store.changed(c.key, c.curStat) {
		return c.cur, nil
	}
	return c.reloadLocked()
}

func (c *Client) reloadLocked() (*record, error) {
	rec, st, err := c.store.loadRecord(c.key)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", c.name, err)
	}
	c.cur, c.curStat, c.loaded = rec, st, true
	return rec, nil
}

// saveLocked writes next and caches it. The caller holds the file lock,
// so the file's identity read back here is that of our write.
func (c *Client) saveLocked(next *record) error {
	if err := c.store.saveRecord(c.key, next); err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	st, _ := os.Stat(c.store.tokenPath(c.key))
	c.mu.Lock()
	c.cur, c.curStat, c.loaded = next, st, true
	c.mu.Unlock()
	return nil
}

func (c *Client) save(ctx context.Context, next *record) error {
	unlock, err := c.store.lockTokens(ctx, c.key, c.log)
	if err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	defer unlock()
	return c.saveLocked(next)
}

func (c *Client) expired(r *record) bool {
	return !r.Expiry.IsZero() && !c.now().Before(r.Expiry)
}

// expiresSoon reports whether r is within the refresh margin of expiry.
func (c *Client) expiresSoon(r *record) bool {
	if r.Expiry.IsZero() {
		return false
	}
	margin := c.margin
	if !r.ObtainedAt.IsZero() {
		if life := r.Expiry.Sub(r.ObtainedAt); life > 0 && life/2 < margin {
			margin = life / 2
		}
	}
	return !c.now().Before(r.Expiry.Add(-margin))
}

// usable reports whether r holds an access token that is not expired.
func (c *Client) usable(r *record) bool {
	return r != nil && r.AccessToken != "" && !c.expired(r)
}

func canRenew(r *record) bool {
	return r.Grant == GrantClientCredentials || r.RefreshToken != ""
}

// msgWaitingForFlight is logged (V(2)) by a request or Login that waits
// for the renewal or authorization in progress.
const msgWaitingForFlight = "waiting for the authorization in progress"

// flight is one renewal or authorization; others wait for it.
type flight struct {
	done chan struct{}
	err  error
}

// single runs fn unless settled reports that the stored record already
// is what fn would bring, with at most one fn running per Client: the
// others wait for it and share its outcome. A waiter whose leader gave up
// on its own context tries itself.
func (c *Client) single(ctx context.Context, settled func(*record) bool, fn func(context.Context) error) error {
	for {
		c.mu.Lock()
		if f := c.flight; f != nil {
			c.mu.Unlock()
			c.log.V(2).Info(msgWaitingForFlight)
			select {
			case <-f.done:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if isContextErr(f.err) && ctx.Err() == nil {
				continue
			}
			return f.err
		}
		if settled != nil {
			rec, err := c.currentLocked()
			if err != nil {
				c.mu.Unlock()
				return err
			}
			if settled(rec) {
				c.mu.Unlock()
				return nil
			}
		}
		f := &flight{done: make(chan struct{})}
		c.flight = f
		c.mu.Unlock()

		f.err = fn(ctx)

		c.mu.Lock()
		c.flight = nil
		c.mu.Unlock()
		close(f.done)
		return f.err
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// tokenFor is the access token to send, renewed first when it is within
// the refresh margin of expiry. "" means send none (nothing stored, or
// nothing usable and the 401 path will say what to do).
func (c *Client) tokenFor(ctx context.Context) (string, error) {
	rec, err := c.current()
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", nil
	}
	if rec.AccessToken == "" {
		if rec.NeedsLogin != "" && c.interaction == nil && c.grant == GrantAuthorizationCode {
			// Known to need a sign-in: say so without bothering the server.
			return "", c.needsLogin(rec.NeedsLogin, nil)
		}
		return "", nil
	}
	if !c.expiresSoon(rec) {
		return rec.AccessToken, nil
	}
	if !canRenew(rec) {
		if c.expired(rec) {
			return "", nil
		}
		return rec.AccessToken, nil
	}
	old := rec.AccessToken
	err = c.single(ctx, func(r *record) bool {
		return r != nil && r.AccessToken != old && c.usable(r) && !c.expiresSoon(r)
	}, func(ctx context.Context) error {
		return c.renew(ctx, old, false)
	})
	if err != nil {
		if !c.expired(rec) {
			c.log.V(1).Info("renewing the access token failed; using it until it expires", "err", err.Error())
			return old, nil
		}
		if errors.Is(err, ErrNeedsLogin) && (c.interaction != nil || c.grant == GrantClientCredentials) {
			return "", nil // the 401 path authorizes anew
		}
		return "", err
	}
	rec, err = c.current()
	if err != nil || rec == nil {
		return "", err
	}
	return rec.AccessToken, nil
}

// renew refreshes the stored tokens (refresh token, or a new client
// credentials token) under the server's file lock: take the lock, re-read
// the file, renew only if the token there is still the one that failed
// (or, unless force, still about to expire), write, release. So two
// processes never both spend a one-use refresh token.
func (c *Client) renew(ctx context.Context, failed string, force bool) error {
	unlock, err := c.store.lockTokens(ctx, c.key, c.log)
	if err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	defer unlock()
	c.mu.Lock()
	rec, err := c.reloadLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if rec == nil || (rec.AccessToken == "" && !canRenew(rec)) {
		reason := "no stored credentials"
		if rec != nil && rec.NeedsLogin != "" {
			reason = rec.NeedsLogin
		}
		return c.needsLogin(reason, nil)
	}
	if rec.AccessToken != failed && c.usable(rec) && !c.expiresSoon(rec) {
		c.log.V(1).Info("the access token was renewed meanwhile")
		return nil
	}
	if !force && rec.AccessToken == failed && !c.expiresSoon(rec) {
		return nil
	}
	var tok *oauth2.Token
	switch {
	case rec.Grant == GrantClientCredentials:
		tok, err = c.clientCredentialsToken(ctx, rec.TokenEndpoint, rec.Client, rec.Scopes, rec.Resource)
	case rec.RefreshToken != "":
		tok, err = c.refreshToken(ctx, rec)
	default:
		return c.needsLogin("the access token expired and no refresh token was issued", nil)
	}
	next := *rec
	if err != nil {
		var oe *OAuthError
		if rec.Grant != GrantClientCredentials && errors.As(err, &oe) && (oe.Code == CodeInvalidGrant || oe.Code == CodeInvalidClient) {
			if oe.Code == CodeInvalidClient && rec.Client.Kind == kindDynamic {
				c.forgetClient(rec.Issuer, rec.Client.ID)
			}
			next.AccessToken, next.RefreshToken, next.Expiry = "", "", time.Time{}
			next.NeedsLogin = "the authorization server refused the refresh token (" + oe.Code + ")"
			if serr := c.saveLocked(&next); serr != nil {
				c.log.Info("cannot record that the server needs sign-in", "err", serr.Error())
			}
			return c.needsLogin(next.NeedsLogin, err)
		}
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	if err := c.fill(&next, tok, rec.Scopes); err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	if err := c.saveLocked(&next); err != nil {
		return err
	}
	c.log.V(1).Info("renewed the access token", "grant", string(rec.Grant), "expiry", next.Expiry)
	return nil
}

func (c *Client) needsLogin(reason string, cause error) error {
	return &LoginRequiredError{Server: c.name, Reason: reason, Err: cause}
}

// recover handles a 401, or a 403 insufficient_scope, to a request that
// carried the access token failed ("" for none): renew the token, or
// authorize anew (client credentials, or the interactive flow if one is
// configured), or fail with ErrNeedsLogin. One recovery runs at a time;
// requests that fail meanwhile wait for it and then retry.
func (c *Client) recover(ctx context.Context, failed string, ch challenge) error {
	if ch.stepUp() {
		c.mu.Lock()
		n := c.stepUps
		c.mu.Unlock()
		if n >= MaxStepUps {
			return fmt.Errorf("server %q: %w: still refused after %d re-authorizations (it asks for scope %q)",
				c.name, ErrInsufficientScope, n, strings.Join(ch.scopes, " "))
		}
	}
	return c.single(ctx, func(r *record) bool {
		return r != nil && r.AccessToken != failed && c.usable(r)
	}, func(ctx context.Context) error {
		return c.recoverOnce(ctx, failed, ch)
	})
}

func (c *Client) recoverOnce(ctx context.Context, failed string, ch challenge) error {
	rec, err := c.current()
	if err != nil {
		return err
	}
	c.mu.Lock()
	renewedOn401 := c.renewedOn401
	c.mu.Unlock()
	if ch.status == http.StatusUnauthorized && failed != "" && failed != renewedOn401 && rec != nil && canRenew(rec) {
		err := c.renew(ctx, failed, true)
		if err == nil {
			if r, _ := c.current(); r != nil {
				c.mu.Lock()
				c.renewedOn401 = r.AccessToken
				c.mu.Unlock()
			}
			return nil
		}
		var oe *OAuthError
		if !errors.Is(err, ErrNeedsLogin) && !errors.As(err, &oe) {
			return err // the authorization server is unreachable: not a reason to sign in again
		}
		c.log.V(1).Info("renewing did not help; authorizing anew", "err", err.Error())
	}
	_, err = c.authorize(ctx, ch, true, c.interaction)
	return err
}

// authorize obtains new tokens: the client credentials grant, or the
// authorization code flow through in. Without in, an authorization code
// server needs a sign-in; a step-up's scopes are remembered for it.
func (c *Client) authorize(ctx context.Context, ch challenge, sawChallenge bool, in *Interaction) (*record, error) {
	rec, err := c.current()
	if err != nil {
		return nil, err
	}
	if c.grant == GrantAuthorizationCode && in == nil {
		return nil, c.loginRequiredFor(ctx, rec, ch)
	}
	if ch.stepUp() {
		c.mu.Lock()
		c.stepUps++
		c.mu.Unlock()
	}
	d, err := c.discover(ctx, ch, sawChallenge)
	if err != nil {
		return nil, err
	}
	scopes := c.selectScopes(d, ch, rec)
	var next *record
	switch c.grant {
	case GrantClientCredentials:
		cl, err := c.resolveClient(ctx, d.asm, "", false)
		if err != nil {
			return nil, err
		}
		tok, err := c.clientCredentialsToken(ctx, d.asm.TokenEndpoint, cl, scopes, d.resource)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", c.name, err)
		}
		next = c.newRecord(d, cl, GrantClientCredentials)
		if err := c.fill(next, tok, scopes); err != nil {
			return nil, fmt.Errorf("server %q: %w", c.name, err)
		}
	default:
		next, err = c.authorizeCode(ctx, d, scopes, in)
		if err != nil {
			return nil, err
		}
	}
	if err := c.save(ctx, next); err != nil {
		return nil, err
	}
	c.log.V(1).Info("authorized", "issuer", next.Issuer, "scopes", next.Scopes, "expiry", next.Expiry)
	return next, nil
}

// loginRequiredFor is the ErrNeedsLogin for a server that asked for
// authorization when no interactive flow is configured. The scopes a
// step-up asks for are stored for the next sign-in.
func (c *Client) loginRequiredFor(ctx context.Context, rec *record, ch challenge) error {
	reason := "no stored credentials"
	switch {
	case ch.stepUp():
		reason = fmt.Sprintf("it asks for scope %q", strings.Join(ch.scopes, " "))
		if rec != nil && len(ch.scopes) > 0 {
			next := *rec
			next.WantScopes = union(rec.WantScopes, ch.scopes)
			if !slices.Equal(next.WantScopes, rec.WantScopes) {
				if err := c.save(ctx, &next); err != nil {
					c.log.Info("cannot remember the scopes the server asks for", "err", err.Error())
				}
			}
		}
	case rec != nil && rec.NeedsLogin != "":
		reason = rec.NeedsLogin
	case rec != nil && rec.AccessToken != "":
		reason = "the server refused the stored token"
	}
	return &LoginRequiredError{Server: c.name, Reason: reason, StepUp: ch.stepUp()}
}

// selectScopes follows the MCP scope selection strategy: the configured
// scopes, else the challenge's scope, else the protected resource's
// scopes_supported, else none. Scopes granted before by the same issuer,
// and scopes a 403 asked for, are kept (a step-up asks for the union of
// granted and challenged scopes); offline_access is added for the
// authorization code grant when the authorization server offers it.
func (c *Client) selectScopes(d *discovery, ch challenge, rec *record) []string {
	var s []string
	switch {
	case len(c.cfg.Scopes) > 0:
		s = c.cfg.Scopes
	case len(ch.scopes) > 0:
		s = ch.scopes
	case d.prm != nil && len(d.prm.ScopesSupported) > 0:
		s = d.prm.ScopesSupported
	}
	if ch.stepUp() {
		s = union(s, ch.scopes)
	}
	if rec != nil && strings.TrimSuffix(rec.Issuer, "/") == strings.TrimSuffix(d.asm.Issuer, "/") {
		s = union(rec.Scopes, s, rec.WantScopes)
	}
	if c.grant == GrantAuthorizationCode && slices.Contains(d.asm.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(slices.Clip(s), "offline_access")
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// union keeps the order of first appearance.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func (c *Client) newRecord(d *discovery, cl clientCreds, g Grant) *record {
	if cl.Kind != kindDynamic {
		cl.Secret = "" // a configured secret stays in the config
	}
	return &record{
		Server:             c.name,
		URL:                redactURL(c.resourceURL),
		Resource:           d.resource,
		Issuer:             d.asm.Issuer,
		TokenEndpoint:      d.asm.TokenEndpoint,
		RevocationEndpoint: d.asm.RevocationEndpoint,
		Grant:              g,
		Client:             cl,
	}
}

// LoginResult says who signed in where, for "Signed in to <name>
// (<issuer>), scopes …". It holds no secret.
type LoginResult struct {
	Server  string
	Issuer  string
	Account string // from an ID token, if the server issued one
	Scopes  []string
	Expiry  time.Time // of the access token; zero if the server gave none
	// Refreshable says whether a refresh token (or the client
	// credentials grant) renews the access token without the user.
	Refreshable bool
}

// Login signs in to the server: it asks the server (an unauthenticated
// request, for its challenge), discovers its authorization server,
// registers if needed, runs the authorization code flow through in (or
// the client credentials grant) and stores the tokens. A ctx without a
// deadline gets DefaultLoginTimeout. Login and the Transport's recovery
// never run at the same time for one Client.
func (c *Client) Login(ctx context.Context, in Interaction) (*LoginResult, error) {
	if in.Out == nil {
		return nil, errors.New("auth: Login needs Interaction.Out, where the authorization URL is printed")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultLoginTimeout)
		defer cancel()
	}
	ch, saw, err := c.probe(ctx)
	if err != nil {
		return nil, err
	}
	var rec *record
	err = c.single(ctx, nil, func(ctx context.Context) error {
		var err error
		rec, err = c.authorize(ctx, ch, saw, &in)
		return err
	})
	if err != nil {
		return nil, err
	}
	if rec == nil {
		// An in-band authorization ran meanwhile and signed in.
		if rec, err = c.current(); err != nil {
			return nil, err
		}
		if rec == nil || rec.AccessToken == "" {
			return nil, fmt.Errorf("server %q: the sign-in did not complete", c.name)
		}
	}
	c.mu.Lock()
	c.stepUps, c.renewedOn401 = 0, ""
	c.mu.Unlock()
	return &LoginResult{
		Server:      c.name,
		Issuer:      rec.Issuer,
		Account:     rec.Account,
		Scopes:      slices.Clone(rec.Scopes),
		Expiry:      rec.Expiry,
		Refreshable: canRenew(rec),
	}, nil
}

// probe sends the server an unauthenticated JSON-RPC ping to read its
// challenge. saw reports a 401 (or 403 insufficient_scope).
func (c *Client) probe(ctx context.Context) (ch challenge, saw bool, err error) {
	req, err := http.NewRequestWithContext(withProbe(ctx), http.MethodPost, c.rawURL,
		strings.NewReader(`{"jsonrpc":"2.0","id":"freecode-sign-in","method":"ping"}`))
	if err != nil {
		return challenge{}, false, fmt.Errorf("server %q: %w", c.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if na := noAnswer(c.rawURL, start, err); na != nil {
			return challenge{}, false, fmt.Errorf("server %q: %w", c.name, na)
		}
		return challenge{}, false, wrap(fmt.Sprintf("server %q: reach %s", c.name, redactURL(c.resourceURL)), err)
	}
	ch = parseChallenge(resp)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
	_ = resp.Body.Close()
	saw = resp.StatusCode == http.StatusUnauthorized || ch.stepUp()
	c.log.V(1).Info("probed the server", "status", resp.StatusCode, "challenge", saw)
	return ch, saw, nil
}

// LogoutResult says what Logout did. It holds no secret.
type LogoutResult struct {
	// Removed is true if tokens were stored (and are now deleted).
	Removed bool
	// RevocationSupported is true if the authorization server has a
	// revocation endpoint (RFC 7009).
	RevocationSupported bool
	// Revoked is true if it confirmed the revocation of every token.
	Revoked bool
	// RevokeErr is why revoking failed; the tokens are deleted anyway.
	RevokeErr error
}

// Logout deletes the server's stored tokens (also those kept for an
// earlier URL of the server) and then revokes them where the
// authorization server offers revocation: the refresh token first, which
// ends the grant on most servers, then the access token. The client
// registration stays, for the next sign-in.
func (c *Client) Logout(ctx context.Context) (*LogoutResult, error) {
	unlock, err := c.store.lockTokens(ctx, c.key, c.log)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", c.name, err)
	}
	var recs []*record
	res := &LogoutResult{}
	keys := append([]string{c.key}, c.store.otherKeys(c.name, c.key)...)
	for _, k := range keys {
		r, _, err := c.store.loadRecord(k)
		if err != nil {
			c.log.Info("unreadable token file; removing it", "err", err.Error())
		}
		removed, rerr := c.store.removeRecord(k)
		if rerr != nil {
			unlock()
			return nil, fmt.Errorf("server %q: %w", c.name, rerr)
		}
		res.Removed = res.Removed || removed
		if r != nil && r.Server == c.name {
			recs = append(recs, r)
		}
	}
	c.mu.Lock()
	c.cur, c.curStat, c.loaded = nil, nil, false
	c.stepUps, c.renewedOn401 = 0, ""
	c.mu.Unlock()
	unlock()

	var errs []error
	for _, r := range recs {
		if r.RevocationEndpoint == "" {
			continue
		}
		res.RevocationSupported = true
		for _, t := range []struct{ tok, hint string }{{r.RefreshToken, "refresh_token"}, {r.AccessToken, "access_token"}} {
			if t.tok == "" {
				continue
			}
			if err := c.revoke(ctx, r.RevocationEndpoint, r.Client, t.tok, t.hint); err != nil {
				errs = append(errs, err)
			}
		}
	}
	res.Revoked = res.RevocationSupported && len(errs) == 0
	if len(errs) > 0 {
		res.RevokeErr = fmt.Errorf("server %q: %w", c.name, errors.Join(errs...))
	}
	return res, nil
}

// State is a server's sign-in state.
type State int

const (
	// StateNoCredentials: nothing is stored. A server that needs no
	// authorization is in this state too.
	StateNoCredentials State = iota
	// StateSignedIn: a usable access token is stored, or one that renews
	// itself (refresh token, client credentials).
	StateSignedIn
	// StateNeedsLogin: stored credentials can no longer be used; a user
	// must run `freecode mcp login <name>`.
	StateNeedsLogin
)

func (s State) String() string {
	switch s {
	case StateNoCredentials:
		return "no-credentials"
	case StateSignedIn:
		return "signed-in"
	case StateNeedsLogin:
		return "needs-login"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is what `freecode mcp get`/`status` show. It holds no secret.
type Status struct {
	Server      string
	State       State
	Grant       Grant
	Issuer      string
	Account     string    // who signed in, if an ID token said
	Scopes      []string  // granted
	Expiry      time.Time // of the access token; zero if unknown
	Refreshable bool
	Reason      string // for StateNeedsLogin
}

// Status reads the server's sign-in state from the store. It makes no
// request.
func (c *Client) Status() (Status, error) {
	st := Status{Server: c.name, Grant: c.grant}
	rec, err := c.current()
	if err != nil || rec == nil {
		return st, err
	}
	st.Grant, st.Issuer, st.Account, st.Scopes, st.Expiry = rec.Grant, rec.Issuer, rec.Account, slices.Clone(rec.Scopes), rec.Expiry
	st.Refreshable = canRenew(rec)
	switch {
	case rec.NeedsLogin != "":
		st.State, st.Reason = StateNeedsLogin, rec.NeedsLogin
		st.Refreshable = false
	case rec.AccessToken == "" && !canRenew(rec):
		st.State, st.Reason = StateNeedsLogin, "no access token is stored"
	case c.expired(rec) && !canRenew(rec):
		st.State, st.Reason = StateNeedsLogin, "the access token expired and no refresh token was issued"
	default:
		st.State = StateSignedIn
	}
	return st, nil
}
