package auth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// TestLogin runs the whole authorization code flow against each way a
// server may publish its metadata, through the loopback listener and a
// browser that follows the redirect, then uses the token.
func TestLogin(t *testing.T) {
	cases := []struct {
		name string
		opts testauth.Options
	}{
		{"path-based PRM, RFC 8414", testauth.Options{}},
		{"root PRM, not in the challenge", testauth.Options{PRM: testauth.PRMRoot, NoMetadataURLInChallenge: true}},
		{"path-based PRM not in the challenge", testauth.Options{NoMetadataURLInChallenge: true}},
		{"RFC 8414 with path insertion", testauth.Options{IssuerPath: "/tenant1"}},
		{"OpenID discovery with path appending", testauth.Options{Metadata: testauth.MetadataOIDC, IssuerPath: "/tenant1"}},
		{"OpenID discovery at the root", testauth.Options{Metadata: testauth.MetadataOIDC}},
		{"2025-03-26 root metadata naming an issuer with a path", testauth.Options{PRM: testauth.PRMNone, IssuerPath: "/oauth"}},
		{"2025-03-26 default endpoints", testauth.Options{PRM: testauth.PRMNone, Metadata: testauth.MetadataNone}},
		{"2025-03-26 metadata that does not advertise PKCE", testauth.Options{PRM: testauth.PRMNone, NoPKCE: true}},
		{"iss sent without being advertised", testauth.Options{Iss: testauth.IssSent}},
		{"iss advertised and sent", testauth.Options{Iss: testauth.IssAdvertised}},
		{"ID token names the account", testauth.Options{IDTokenAccount: "ada@example.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			srv := testauth.New(t, tc.opts)
			c := e.client("remote", srv, nil)

			st, err := c.Status()
			require.NoError(t, err)
			assert.Equal(t, auth.StateNoCredentials, st.State)

			res := e.login(c)
			assert.Equal(t, srv.Issuer(), res.Issuer)
			assert.Equal(t, "remote", res.Server)
			assert.True(t, res.Refreshable)
			assert.WithinDuration(t, time.Now().Add(time.Hour), res.Expiry, time.Minute)
			assert.Equal(t, tc.opts.IDTokenAccount, res.Account)

			code, err := e.call(c, srv.URL, "tools/list")
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)

			n := srv.Counts()
			assert.Equal(t, 1, n.Registrations)
			assert.Equal(t, 1, n.Authorizations)
			assert.Equal(t, 1, n.CodeExchanges)
			assert.Equal(t, 1, n.Authorized)

			reg := srv.Registrations()[0]
			assert.Equal(t, "native", reg.ApplicationType)
			assert.Equal(t, []string{"authorization_code", "refresh_token"}, reg.GrantTypes)
			if tc.opts.Metadata == testauth.MetadataNone {
				assert.Equal(t, "client_secret_basic", reg.TokenEndpointAuthMethod, "RFC 7591's default when the server says nothing")
			} else {
				assert.Equal(t, "none", reg.TokenEndpointAuthMethod, "a native app registers as a public client where it can")
			}
			require.Len(t, reg.RedirectURIs, 1)
			assert.True(t, strings.HasPrefix(reg.RedirectURIs[0], "http://127.0.0.1:"), reg.RedirectURIs[0])
			assert.True(t, strings.HasSuffix(reg.RedirectURIs[0], auth.CallbackPath), reg.RedirectURIs[0])

			ar := srv.AuthorizeRequests()[0]
			assert.Equal(t, "S256", ar.CodeChallengeMethod)
			assert.Equal(t, srv.ResourceID(), ar.Resource, "RFC 8707 resource in the authorization request")
			tr := srv.TokenRequests()[0]
			assert.Equal(t, srv.ResourceID(), tr.Resource, "RFC 8707 resource in the token request")

			st, err = c.Status()
			require.NoError(t, err)
			assert.Equal(t, auth.StateSignedIn, st.State)
			assert.Equal(t, srv.Issuer(), st.Issuer)
			assert.Equal(t, tc.opts.IDTokenAccount, st.Account)
		})
	}
}

// TestScopeSelection: the challenge's scope, else the metadata's
// scopes_supported, else no scope parameter; offline_access only when
// the authorization server offers it; the configured scopes win.
func TestScopeSelection(t *testing.T) {
	cases := []struct {
		name string
		opts testauth.Options
		cfg  auth.Config
		want string
	}{
		{"from the challenge", testauth.Options{ChallengeScope: []string{"mcp:basic"}, PRMScopes: []string{"a", "b"}}, auth.Config{}, "mcp:basic"},
		{"from scopes_supported", testauth.Options{PRMScopes: []string{"mcp:basic", "mcp:read", "mcp:write"}}, auth.Config{}, "mcp:basic mcp:read mcp:write"},
		{"omitted when undefined", testauth.Options{}, auth.Config{}, ""},
		{"offline_access when offered", testauth.Options{PRMScopes: []string{"mcp:basic"}, ScopesSupported: []string{"mcp:basic", "offline_access"}}, auth.Config{}, "mcp:basic offline_access"},
		{"no offline_access when not offered", testauth.Options{PRMScopes: []string{"mcp:basic", "mcp:read"}, ScopesSupported: []string{"mcp:basic", "mcp:read"}}, auth.Config{}, "mcp:basic mcp:read"},
		{"configured scopes", testauth.Options{ChallengeScope: []string{"mcp:basic"}}, auth.Config{Scopes: []string{"repo", "read:user"}}, "repo read:user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			srv := testauth.New(t, tc.opts)
			c := e.client("remote", srv, func(o *auth.Options) { o.Config = tc.cfg })
			e.login(c)
			assert.Equal(t, tc.want, srv.AuthorizeRequests()[0].Scope)
		})
	}
}

// TestLoginRefusals: what a client must refuse before or after the
// browser leg.
func TestLoginRefusals(t *testing.T) {
	cases := []struct {
		name           string
		opts           testauth.Options
		is             error
		msg            string
		authorizations int
	}{
		{"metadata for another resource", testauth.Options{PRMResource: "https://evil.example/mcp"}, auth.ErrResourceMismatch, "describes \"https://evil.example/mcp\"", 0},
		{"no PKCE advertised", testauth.Options{NoPKCE: true}, nil, "does not advertise PKCE S256", 0},
		{"wrong iss (mix-up)", testauth.Options{Iss: testauth.IssWrong}, nil, "possible mix-up attack", 1},
		{"advertised iss missing", testauth.Options{Iss: testauth.IssAdvertisedMissing}, nil, "has no iss though", 1},
		{"no registration, nothing configured", testauth.Options{NoRegistration: true}, nil, "offers no dynamic client registration: set oauth.clientId", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			srv := testauth.New(t, tc.opts)
			c := e.client("remote", srv, nil)
			_, err := c.Login(context.Background(), newBrowser(t).interaction(io.Discard))
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.msg)
			assert.Contains(t, err.Error(), `server "remote"`)
			assert.Equal(t, tc.authorizations, srv.Counts().Authorizations)
			assert.Zero(t, srv.Counts().CodeExchanges)
			st, err := c.Status()
			require.NoError(t, err)
			assert.Equal(t, auth.StateNoCredentials, st.State)
		})
	}
}

// TestLoginPaste is the headless path: the browser cannot reach the
// listener, so the user pastes the address it ended on. A line that is no
// URL and a URL of another attempt are refused with a hint.
func TestLoginPaste(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)

	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	// A browser on another machine: it stops at the redirect to the
	// loopback address, which the user copies.
	noFollow := &http.Client{Transport: e.base, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	open := func(ctx context.Context, browserURL string) error {
		authURL, err := location(ctx, noFollow, browserURL)
		if err != nil {
			return err
		}
		loc, err := location(ctx, noFollow, authURL)
		if err != nil {
			return err
		}
		u, err := url.Parse(loc)
		if err != nil {
			return err
		}
		stale := *u
		q := stale.Query()
		q.Set("state", "not-this-attempt")
		stale.RawQuery = q.Encode()
		_, err = io.WriteString(pw, "hello\n"+stale.String()+"\n  "+loc+"  \n")
		return err
	}
	out := &syncBuffer{}
	res, err := c.Login(context.Background(), auth.Interaction{Out: out, Open: open, Paste: pr})
	require.NoError(t, err)
	assert.Equal(t, srv.Issuer(), res.Issuer)
	require.NoError(t, pw.Close()) // ends the reader goroutine (a pipe takes no deadline)

	printed := out.String()
	assert.Contains(t, printed, "To sign in to remote, open this URL in a browser:")
	assert.Contains(t, printed, "paste the address it ended on here")
	assert.Contains(t, printed, "That is not the address the browser ended on")
	assert.Contains(t, printed, "That address belongs to another sign-in attempt")
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

// TestLoginWaitIsBounded: no answer ends the wait with the context, and
// the listener is gone.
func TestLoginWaitIsBounded(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	port := freePort(t)
	c := e.client("remote", srv, func(o *auth.Options) { o.Config.CallbackPort = port })
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan string, 1)
	go func() {
		<-opened
		// The URL was printed before the browser was asked to open it.
		assert.Contains(t, out.String(), "open this URL in a browser:\n\n  "+srv.Issuer())
		cancel() // the user pressed Ctrl-C
	}()
	_, err := c.Login(ctx, auth.Interaction{Out: out, Open: func(_ context.Context, u string) error {
		opened <- u
		return nil
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, auth.ErrNoBrowserAnswer)
	assert.Contains(t, err.Error(), "no answer from the browser")
	// The listener is closed: the port can be taken again.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

// TestCallbackPortInUse names the setting.
func TestCallbackPortInUse(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	c := e.client("remote", srv, func(o *auth.Options) { o.Config.CallbackPort = port })
	_, err = c.Login(context.Background(), newBrowser(t).interaction(io.Discard))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oauth.callbackPort "+itoa(port))
}

// TestCallbackIgnoresForeignRequests: a request without this flow's state
// gets 400 and does not end the wait.
func TestCallbackIgnoresForeignRequests(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	port := freePort(t)
	c := e.client("remote", srv, func(o *auth.Options) { o.Config.CallbackPort = port })
	b := newBrowser(t)
	open := func(ctx context.Context, authURL string) error {
		forged := "http://127.0.0.1:" + itoa(port) + auth.CallbackPath + "?code=forged&state=guess"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, forged, nil)
		if err != nil {
			return err
		}
		resp, err := b.hc.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			return errors.New("forged callback accepted")
		}
		return b.open(ctx, authURL)
	}
	out := &syncBuffer{}
	_, err := c.Login(context.Background(), auth.Interaction{Out: out, Open: open})
	require.NoError(t, err)
	assert.NotContains(t, out.String(), "Could not open a browser")
	assert.Equal(t, 1, srv.Counts().CodeExchanges)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func itoa(n int) string { return strconv.Itoa(n) }

// location GETs u without following and returns the redirect's target.
func location(ctx context.Context, hc *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("GET %s: HTTP %d, not a redirect", u, resp.StatusCode)
	}
	return resp.Header.Get("Location"), nil
}

// TestBrowserGetsOneShotLink: the browser is handed an address on the
// callback listener, not the authorization URL, whose state and PKCE
// challenge another user of the machine would read from the browser's
// command line. That address redirects to the printed authorization URL,
// and the sign-in completes through it.
func TestBrowserGetsOneShotLink(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	b := newBrowser(t)
	noFollow := &http.Client{Transport: e.base, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	out := &syncBuffer{}
	var handed, target string
	open := func(ctx context.Context, browserURL string) error {
		handed = browserURL
		var err error
		if target, err = location(ctx, noFollow, browserURL); err != nil {
			return err
		}
		return b.open(ctx, target)
	}
	_, err := c.Login(context.Background(), auth.Interaction{Out: out, Open: open})
	require.NoError(t, err)

	u, err := url.Parse(handed)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", u.Hostname())
	assert.True(t, strings.HasPrefix(u.Path, auth.BrowserPathPrefix), u.Path)
	assert.Empty(t, u.RawQuery)
	au, err := url.Parse(target)
	require.NoError(t, err)
	q := au.Query()
	state, challenge := q.Get("state"), q.Get("code_challenge")
	require.NotEmpty(t, state)
	require.NotEmpty(t, challenge)
	assert.NotContains(t, handed, state)
	assert.NotContains(t, handed, challenge)
	assert.Contains(t, out.String(), "open this URL in a browser:\n\n  "+target+"\n", "the redirect leads to the printed URL")
	cb, err := url.Parse(q.Get("redirect_uri"))
	require.NoError(t, err)
	assert.Equal(t, u.Host, cb.Host, "the link is served by the callback listener")
	assert.Equal(t, 1, srv.Counts().CodeExchanges)
}

// TestBrowserLinkReused: a second request for the address handed to the
// browser means someone else may have it, and the state behind it: the
// sign-in ends, whichever request came first.
func TestBrowserLinkReused(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	noFollow := &http.Client{Transport: e.base, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	open := func(ctx context.Context, browserURL string) error {
		// Another user got there first; then the user's browser.
		if _, err := location(ctx, noFollow, browserURL); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, browserURL, nil)
		if err != nil {
			return err
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusGone {
			return fmt.Errorf("second request: HTTP %d", resp.StatusCode)
		}
		return nil
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Login(ctx, auth.Interaction{Out: out, Open: open})
	require.ErrorIs(t, err, auth.ErrBrowserLinkReused)
	assert.Contains(t, err.Error(), "someone else on this machine may have read it")
	assert.NotContains(t, out.String(), "Could not open a browser")
	assert.Zero(t, srv.Counts().CodeExchanges)
	st, err := c.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateNoCredentials, st.State)
}
