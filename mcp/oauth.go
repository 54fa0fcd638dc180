package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/mcp/auth"
)

// Sentinels of remote authorization, the values package auth wraps, so
// that errors.Is works with either name.
var (
	// ErrNeedsLogin is wrapped by the error of a remote session, or of a
	// connect, that cannot go on until a user signs in: no usable
	// credentials are stored and no Options.Interaction is set. The error
	// says "run `freecode mcp login <name>`". A session that ends this
	// way has Err wrapping it.
	ErrNeedsLogin = auth.ErrNeedsLogin
	// ErrInsufficientScope is wrapped by the error of a request the server
	// kept refusing for want of scope after auth.MaxStepUps
	// re-authorizations. It fails that request only.
	ErrInsufficientScope = auth.ErrInsufficientScope
	// ErrNoSignIn is wrapped by NewSignIn's error for a server FreeCode
	// does not sign in to.
	ErrNoSignIn = errors.New("server does not sign in with OAuth")
)

// OAuth is a remote server's OAuth settings (Spec.OAuth); the zero value
// discovers everything from the server's first 401 and registers
// dynamically.
type OAuth = auth.Config

// OAuthGrant is the grant a remote server's tokens come from.
type OAuthGrant = auth.Grant

// The grants of OAuth.Grant.
const (
	GrantAuthorizationCode = auth.GrantAuthorizationCode
	GrantClientCredentials = auth.GrantClientCredentials
)

// headerAuthorization is the header that, set in Spec.Headers, makes a
// remote server one with a static token: no OAuth then.
const headerAuthorization = "Authorization"

// SignsIn reports whether a session signs in to srv with OAuth when it
// asks (given Options.Tokens): a remote server whose Headers carry no
// Authorization header (in any case) of their own.
func (srv Spec) SignsIn() bool {
	if srv.Type != Remote {
		return false
	}
	for k := range srv.Headers {
		if strings.EqualFold(k, headerAuthorization) {
			return false
		}
	}
	return true
}

// signsIn reports whether a session of srv with opts runs its requests
// through an OAuth client.
func signsIn(srv Spec, opts Options) bool {
	return opts.Tokens != nil && srv.SignsIn()
}

// newAuthClient is the OAuth client of srv's session or sign-in. hc makes
// its requests to authorization servers (nil: one of its own); log must
// be masked already. Its error shows the URL as written.
func newAuthClient(srv Spec, opts Options, hc *http.Client, log logr.Logger, mask *urlMask) (*auth.Client, error) {
	c, err := auth.New(auth.Options{
		Server:      srv.Name,
		URL:         srv.URL,
		Config:      srv.OAuth,
		Store:       opts.Tokens,
		HTTPClient:  hc,
		Logger:      log,
		Interaction: opts.Interaction,
	})
	if err != nil {
		return nil, newError(mask.err(err), err)
	}
	return c, nil
}

// isStepUp reports whether err needs a sign-in only because a request
// wants more scope than the stored sign-in has (a 403
// insufficient_scope): that request fails, the session goes on.
func isStepUp(err error) bool {
	var le *auth.LoginRequiredError
	return errors.As(err, &le) && le.StepUp
}

// authError is err, which the OAuth layer of srv's session returned, for
// users: needing sign-in reads as the engine says it ("server %q needs
// sign-in (...): run `freecode mcp login <name>`"), without the request
// URL net/http and mcp-go put in front; anything else is masked as every
// message of a remote session is. The result wraps err.
func authError(mask *urlMask, err error) error {
	var le *auth.LoginRequiredError
	if errors.As(err, &le) {
		return newError(mask.text(le.Error()), err)
	}
	return newError(mask.err(err), err)
}

// SignIn is the OAuth side of one remote server outside a session: it
// signs in and out (`freecode mcp login`, `logout`) and reads the stored
// state (`get`, `status`). Its errors show the server's URL as written, as
// a session's do; the authorization URL Login prints is the one the
// authorization server needs. It holds no token itself: the store does.
type SignIn struct {
	c    *auth.Client
	mask *urlMask
	own  *http.Transport // the HTTP client's, when SignIn made it
}

// NewSignIn returns the sign-in of srv over opts.Tokens, with
// opts.Logger (masked) and opts.TLSClientConfig. It fails with ErrNoSignIn
// for a server FreeCode does not sign in to (a local server, one with a
// static Authorization header) or without a store. It does no I/O.
func NewSignIn(srv Spec, opts Options) (*SignIn, error) {
	switch {
	case srv.Type != Remote:
		return nil, fmt.Errorf("server %q is a local server: %w", srv.Name, ErrNoSignIn)
	case !srv.SignsIn():
		return nil, fmt.Errorf("server %q sends an Authorization header of its own (headers): %w", srv.Name, ErrNoSignIn)
	case opts.Tokens == nil:
		return nil, fmt.Errorf("server %q: no token store: %w", srv.Name, ErrNoSignIn)
	}
	mask := newURLMask(srv)
	s := &SignIn{mask: mask}
	var hc *http.Client
	if opts.TLSClientConfig != nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		s.own.TLSClientConfig = opts.TLSClientConfig.Clone()
		hc = &http.Client{Transport: s.own, Timeout: auth.DefaultHTTPTimeout}
	}
	c, err := newAuthClient(srv, opts, hc, maskLogger(opts.Logger.WithValues("server", srv.Name), mask), mask)
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

// Login signs in through in (see auth.Client.Login): discovery,
// registration, the browser flow or the client credentials grant. A ctx
// without a deadline gets auth.DefaultLoginTimeout.
func (s *SignIn) Login(ctx context.Context, in auth.Interaction) (*auth.LoginResult, error) {
	res, err := s.c.Login(ctx, in)
	if err != nil {
		return nil, authError(s.mask, err)
	}
	return res, nil
}

// Logout deletes the stored tokens and revokes them where the
// authorization server offers revocation (see auth.Client.Logout).
func (s *SignIn) Logout(ctx context.Context) (*auth.LogoutResult, error) {
	res, err := s.c.Logout(ctx)
	if err != nil {
		return nil, authError(s.mask, err)
	}
	if res.RevokeErr != nil {
		res.RevokeErr = authError(s.mask, res.RevokeErr)
	}
	return res, nil
}

// Status reads the stored sign-in state; it makes no request.
func (s *SignIn) Status() (auth.Status, error) {
	st, err := s.c.Status()
	if err != nil {
		return st, authError(s.mask, err)
	}
	return st, nil
}

// Close releases idle connections. The SignIn stays usable.
func (s *SignIn) Close() {
	s.c.Close()
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
}
