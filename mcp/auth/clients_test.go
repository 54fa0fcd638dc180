package auth_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// TestStepUp: a 403 insufficient_scope re-authorizes with the union of
// the granted and the challenged scopes, and the request goes through.
func TestStepUp(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{
		ChallengeScope: []string{"mcp:basic"},
		RequireScopes:  map[string][]string{"tools/call": {"mcp:basic", "mcp:write"}},
	})
	b := newBrowser(t)
	in := b.interaction(io.Discard)
	c := e.client("remote", srv, func(o *auth.Options) { o.Interaction = &in })

	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	code, err = e.call(c, srv.URL, "tools/call")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)

	ars := srv.AuthorizeRequests()
	require.Len(t, ars, 2)
	assert.Equal(t, "mcp:basic", ars[0].Scope)
	assert.Equal(t, "mcp:basic mcp:write", ars[1].Scope)
	assert.Equal(t, 1, srv.Counts().InsufficientScope)
	st, err := c.Status()
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp:basic", "mcp:write"}, st.Scopes)
	assert.Equal(t, 1, srv.Counts().Registrations, "the registration is reused")
}

// TestStepUpRetryLimit: a server that keeps answering 403 gets MaxStepUps
// re-authorizations, then ErrInsufficientScope without another one.
func TestStepUpRetryLimit(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{
		RequireScopes: map[string][]string{"tools/call": {"mcp:admin"}},
		DenyScopes:    []string{"mcp:admin"},
	})
	b := newBrowser(t)
	in := b.interaction(io.Discard)
	c := e.client("remote", srv, func(o *auth.Options) { o.Interaction = &in })

	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	for range auth.MaxStepUps {
		code, err = e.call(c, srv.URL, "tools/call")
		require.NoError(t, err)
		assert.Equal(t, http.StatusForbidden, code, "the retry's 403 is handed back")
	}
	_, err = e.call(c, srv.URL, "tools/call")
	require.ErrorIs(t, err, auth.ErrInsufficientScope)
	assert.Contains(t, err.Error(), `"mcp:admin"`)
	assert.Equal(t, 1+auth.MaxStepUps, srv.Counts().Authorizations)

	// A success resets the count.
	code, err = e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	code, err = e.call(c, srv.URL, "tools/call")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, 2+auth.MaxStepUps, srv.Counts().Authorizations)
}

// TestStepUpWithoutInteraction: under serve there is no browser; the
// server's wish is remembered and the next sign-in asks for it.
func TestStepUpWithoutInteraction(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{
		ChallengeScope: []string{"mcp:basic"},
		RequireScopes:  map[string][]string{"tools/call": {"mcp:write"}},
	})
	c := e.client("remote", srv, nil)
	e.login(c)
	_, err := e.call(c, srv.URL, "tools/call")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	assert.Contains(t, err.Error(), `asks for scope "mcp:write"`)
	// Other calls keep working with the token there is.
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)

	e.login(c)
	ars := srv.AuthorizeRequests()
	assert.Equal(t, "mcp:basic mcp:write", ars[len(ars)-1].Scope)
	code, err = e.call(c, srv.URL, "tools/call")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

// TestPreRegistered: a configured client is used as is, authenticating
// the way the authorization server supports; its secret is never stored.
func TestPreRegistered(t *testing.T) {
	for _, method := range []string{"client_secret_basic", "client_secret_post", "none"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			secret := ""
			if method != "none" {
				secret = "pre-registered-secret-" + method
			}
			srv := testauth.New(t, testauth.Options{
				NoRegistration: true,
				AuthMethods:    []string{method},
				Clients:        []testauth.Client{{ID: "pre-registered-client", Secret: secret, AuthMethod: method}},
			})
			c := e.client("remote", srv, func(o *auth.Options) {
				o.Config = auth.Config{ClientID: "pre-registered-client", ClientSecret: secret}
			})
			e.login(c)
			srv.ExpireAccessTokens()
			code, err := e.call(c, srv.URL, "tools/list")
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)

			assert.Zero(t, srv.Counts().Registrations)
			assert.Equal(t, 1, srv.Counts().Refreshes, "the refresh authenticates with the configured secret")
			for _, tr := range srv.TokenRequests() {
				assert.Equal(t, "pre-registered-client", tr.ClientID)
				assert.Equal(t, method, tr.AuthMethod)
			}
			assert.Equal(t, "pre-registered-client", srv.AuthorizeRequests()[0].ClientID)
			if secret != "" {
				assertNotInFiles(t, e.dir, secret)
			}
		})
	}
}

// TestClientIDMetadataDocument: where the authorization server supports
// them, the configured document URL is the client_id; nothing registers.
func TestClientIDMetadataDocument(t *testing.T) {
	const cimd = "https://freecode.example/oauth/client-metadata.json"
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{CIMD: true})
	c := e.client("remote", srv, func(o *auth.Options) { o.Config.ClientMetadataURL = cimd })
	e.login(c)
	assert.Zero(t, srv.Counts().Registrations)
	assert.Equal(t, cimd, srv.AuthorizeRequests()[0].ClientID)
	assert.Equal(t, "none", srv.TokenRequests()[0].AuthMethod)

	// Without support, the same config registers dynamically.
	srv2 := testauth.New(t, testauth.Options{})
	c2 := e.client("other", srv2, func(o *auth.Options) { o.Config.ClientMetadataURL = cimd })
	e.login(c2)
	assert.Equal(t, 1, srv2.Counts().Registrations)
}

// TestRegistrationPerIssuer: a dynamic registration is stored per issuer
// and reused (by another server of the same authorization server, by the
// next sign-in); a new issuer registers anew.
func TestRegistrationPerIssuer(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{IssuerPath: "/tenant1"})
	c := e.client("remote", srv, nil)
	e.login(c)
	e.login(e.client("again", srv, nil))
	e.login(c)
	assert.Equal(t, 1, srv.Counts().Registrations)
	clientIDs := map[string]bool{}
	for _, ar := range srv.AuthorizeRequests() {
		clientIDs[ar.ClientID] = true
	}
	assert.Len(t, clientIDs, 1)

	// The server moves to another issuer: its old tokens are refused, and
	// the next sign-in registers with the new issuer.
	srv.SetIssuerPath("/tenant2")
	_, err := e.call(c, srv.URL, "tools/list")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	res := e.login(c)
	assert.Equal(t, srv.Issuer(), res.Issuer)
	assert.True(t, strings.HasSuffix(res.Issuer, "/tenant2"))
	assert.Equal(t, 2, srv.Counts().Registrations)
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

// TestRegistrationRefused: an authorization server that forgot the
// registration says invalid_client; FreeCode drops it and registers anew,
// at sign-in and after a refused refresh.
func TestRegistrationRefused(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	e.login(c)

	srv.ForgetClients()
	out := &syncBuffer{}
	_, err := c.Login(context.Background(), newBrowser(t).interaction(out))
	require.NoError(t, err)
	assert.Contains(t, out.String(), "refused FreeCode's client registration (invalid_client); registering again")
	assert.Equal(t, 2, srv.Counts().Registrations)

	srv.ForgetClients()
	srv.ExpireAccessTokens()
	_, err = e.call(c, srv.URL, "tools/list")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	assert.Contains(t, err.Error(), "invalid_client")
	clients, _ := filepath.Glob(filepath.Join(e.dir, "clients", "*.json"))
	assert.Empty(t, clients, "the refused registration is dropped")
	e.login(c)
	assert.Equal(t, 3, srv.Counts().Registrations)
}

// TestClientCredentials: headless, no user and no browser: the first 401
// gets a token with the configured client, and expiry gets another.
func TestClientCredentials(t *testing.T) {
	e := newEnv(t)
	const secret = "cc-secret-value"
	srv := testauth.New(t, testauth.Options{
		AuthMethods: []string{"client_secret_basic"},
		PRMScopes:   []string{"mcp:tools"},
		Clients:     []testauth.Client{{ID: "svc", Secret: secret, Grants: []string{"client_credentials"}}},
	})
	c := e.client("remote", srv, func(o *auth.Options) {
		o.Config = auth.Config{Grant: auth.GrantClientCredentials, ClientID: "svc", ClientSecret: secret}
	})
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	n := srv.Counts()
	assert.Equal(t, 1, n.ClientCredentials)
	assert.Zero(t, n.Authorizations)
	tr := srv.TokenRequests()[0]
	assert.Equal(t, "client_credentials", tr.Grant)
	assert.Equal(t, "client_secret_basic", tr.AuthMethod)
	assert.Equal(t, srv.ResourceID(), tr.Resource)
	assert.Equal(t, "mcp:tools", tr.Scope)

	st, err := c.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateSignedIn, st.State)
	assert.Equal(t, auth.GrantClientCredentials, st.Grant)

	e.clock.advance(time.Hour)
	code, err = e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2, srv.Counts().ClientCredentials)
	assertNotInFiles(t, e.dir, secret)

	// Login with this grant checks the credentials.
	res, err := c.Login(context.Background(), auth.Interaction{Out: io.Discard})
	require.NoError(t, err)
	assert.Equal(t, srv.Issuer(), res.Issuer)
	assert.Equal(t, 3, srv.Counts().ClientCredentials)
}

// TestLogout deletes the tokens and revokes them where the server can.
func TestLogout(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{Revocation: true})
	c := e.client("remote", srv, nil)
	e.login(c)
	var sent string
	hc := &http.Client{Transport: c.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		return e.base.RoundTrip(r)
	}))}
	resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.True(t, srv.Valid(sent))

	res, err := c.Logout(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Removed)
	assert.True(t, res.RevocationSupported)
	assert.True(t, res.Revoked)
	require.NoError(t, res.RevokeErr)
	assert.Equal(t, 2, srv.Counts().Revocations, "refresh and access token")
	assert.False(t, srv.Valid(sent))

	st, err := c.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateNoCredentials, st.State)
	tokens, _ := filepath.Glob(filepath.Join(e.dir, "tokens", "*.json"))
	assert.Empty(t, tokens)
	_, err = e.call(c, srv.URL, "tools/list")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)

	res, err = c.Logout(context.Background())
	require.NoError(t, err)
	assert.False(t, res.Removed)

	// Without a revocation endpoint the tokens are deleted all the same.
	srv2 := testauth.New(t, testauth.Options{})
	c2 := e.client("other", srv2, nil)
	e.login(c2)
	res, err = c2.Logout(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Removed)
	assert.False(t, res.RevocationSupported)
	assert.False(t, res.Revoked)
}

// TestChangedURLStartsAfresh: tokens are keyed by server name and URL.
func TestChangedURLStartsAfresh(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	e.login(e.client("remote", srv, nil))
	moved, err := auth.New(auth.Options{Server: "remote", URL: srv.URL + "/v2", Store: e.store})
	require.NoError(t, err)
	t.Cleanup(moved.Close)
	st, err := moved.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateNoCredentials, st.State)
	// Logout of the server removes what its old URL left too.
	res, err := moved.Logout(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Removed)
	tokens, _ := filepath.Glob(filepath.Join(e.dir, "tokens", "*.json"))
	assert.Empty(t, tokens)
}

func assertNotInFiles(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), secret, "%s holds a configured secret", p)
		return nil
	})
	require.NoError(t, err)
}
