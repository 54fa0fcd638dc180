package testauth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"

	"github.com/freecode/freecode/internal/testauth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStrictness: the server refuses what a sloppy client would send, so
// that a client passing against it follows the specs.
func TestStrictness(t *testing.T) {
	srv := testauth.New(t, testauth.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	iss := srv.Issuer()
	const redirect = "http://127.0.0.1:9/callback"

	// Register a public client.
	resp, err := hc.Post(iss+"/register", "application/json", strings.NewReader(`{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}`))
	require.NoError(t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reg))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	authorize := func(q url.Values) *url.URL {
		t.Helper()
		resp, err := hc.Get(iss + "/authorize?" + q.Encode())
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		return loc
	}
	verifier := oauth2.GenerateVerifier()
	base := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:4242/callback"},
		"state": {"s"}, "resource": {srv.ResourceID()}}

	noPKCE := authorize(base)
	assert.Equal(t, "invalid_request", noPKCE.Query().Get("error"), "PKCE is required")

	q := url.Values{}
	for k, v := range base {
		q[k] = v
	}
	q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))
	q.Set("code_challenge_method", "S256")
	loc := authorize(q)
	code := loc.Query().Get("code")
	require.NotEmpty(t, code, "any loopback port is admitted (RFC 8252 §7.3)")
	assert.Equal(t, "s", loc.Query().Get("state"))

	token := func(form url.Values, basic ...string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, iss+"/token", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if len(basic) == 2 {
			req.SetBasicAuth(basic[0], basic[1])
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {reg.ClientID},
		"redirect_uri": {"http://127.0.0.1:4242/callback"}, "resource": {srv.ResourceID()}}

	st, out := token(exchange, reg.ClientID, "nope")
	assert.Equal(t, http.StatusUnauthorized, st, "a public client authenticating with a secret")
	assert.Equal(t, "invalid_client", out["error"])

	exchange.Set("code_verifier", "wrong-verifier-wrong-verifier-wrong-verifier-0")
	st, out = token(exchange)
	assert.Equal(t, http.StatusBadRequest, st)
	assert.Equal(t, "invalid_grant", out["error"], "PKCE verification")

	// The code was spent by the failed attempt; a new one.
	code = authorize(q).Query().Get("code")
	exchange.Set("code", code)
	exchange.Set("code_verifier", verifier)
	exchange.Set("resource", "https://other.example/mcp")
	st, out = token(exchange)
	assert.Equal(t, "invalid_target", out["error"], "the resource must be the authorization request's")
	assert.Equal(t, http.StatusBadRequest, st)

	code = authorize(q).Query().Get("code")
	exchange.Set("code", code)
	exchange.Set("resource", srv.ResourceID())
	st, out = token(exchange)
	require.Equal(t, http.StatusOK, st, "%v", out)
	rt, _ := out["refresh_token"].(string)
	require.NotEmpty(t, rt)
	st, out = token(exchange)
	assert.Equal(t, "invalid_grant", out["error"], "a code is one-use")
	assert.Equal(t, http.StatusBadRequest, st)

	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {reg.ClientID}}
	st, out = token(refresh)
	require.Equal(t, http.StatusOK, st, "%v", out)
	st, out = token(refresh)
	assert.Equal(t, http.StatusBadRequest, st)
	assert.Equal(t, "invalid_grant", out["error"], "a refresh token is one-use")

	n := srv.Counts()
	assert.Equal(t, 1, n.Registrations)
	assert.Equal(t, 1, n.CodeExchanges)
	assert.Equal(t, 1, n.Refreshes)
	assert.Equal(t, 3, n.InvalidGrants)
	assert.Equal(t, 1, n.InvalidClients)
}

// TestChallenge: the resource answers 401 with the metadata URL and scope,
// and 403 insufficient_scope for what needs more.
func TestChallenge(t *testing.T) {
	srv := testauth.New(t, testauth.Options{ChallengeScope: []string{"mcp:basic"}})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer realm="testauth", resource_metadata="`+srv.PRMURL()+`", scope="mcp:basic"`, resp.Header.Get("WWW-Authenticate"))

	resp, err = hc.Get(srv.PRMURL())
	require.NoError(t, err)
	var prm map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&prm))
	_ = resp.Body.Close()
	assert.Equal(t, srv.URL, prm["resource"])
	assert.Equal(t, []any{srv.Issuer()}, prm["authorization_servers"])
}
