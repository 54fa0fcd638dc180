package auth_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// TestNoTokenToOtherOrigins: neither a request to another origin nor a
// redirect there carries the token.
func TestNoTokenToOtherOrigins(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	srv := testauth.New(t, testauth.Options{Handler: mux})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	c := e.client("remote", srv, nil)
	e.login(c)

	hc := &http.Client{Transport: c.Transport(e.base)}
	resp, err := hc.Get(other.URL + "/direct")
	require.NoError(t, err)
	_ = resp.Body.Close()
	resp, err = hc.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 1, srv.Counts().Authorized, "the resource got the token")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"", ""}, seen, "the other origin got none")
}

// TestRetryRebuildsTheBody: the request sent again after a 401 carries
// the same body.
func TestRetryRebuildsTheBody(t *testing.T) {
	e := newEnv(t)
	var bodies []string
	var mu sync.Mutex
	srv := testauth.New(t, testauth.Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	})})
	c := e.client("remote", srv, nil)
	e.login(c)
	srv.ExpireAccessTokens()
	const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`
	hc := &http.Client{Transport: c.Transport(e.base)}
	resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{body}, bodies, "the handler saw the retried request whole")
	assert.Equal(t, 1, srv.Counts().Refreshes)
}

// TestNoReplay: a network error is returned, not retried; nor is a
// request whose body cannot be rebuilt; nor one that got any other
// answer.
func TestNoReplay(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	e.login(c)

	var sends atomic.Int32
	broken := errors.New("connection reset mid-response")
	failing := c.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sends.Add(1)
		return nil, broken
	}))
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
	require.NoError(t, err)
	_, err = failing.RoundTrip(req)
	require.ErrorIs(t, err, broken)
	assert.Equal(t, int32(1), sends.Load())

	// A body without GetBody cannot be sent twice: the 401 comes back.
	srv.ExpireAccessTokens()
	req, err = http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	require.NoError(t, err)
	req.GetBody = nil
	resp, err := c.Transport(e.base).RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Zero(t, srv.Counts().Refreshes)

	// A 500 is an answer: handed back as it is.
	sends.Store(0)
	fivehundred := c.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sends.Add(1)
		return &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
	}))
	req, err = http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err = fivehundred.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, int32(1), sends.Load())
}

// TestForbiddenWithoutInsufficientScope is an answer, not a step-up.
func TestForbiddenWithoutInsufficientScope(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	})})
	c := e.client("remote", srv, nil)
	e.login(c)
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, 1, srv.Counts().Authorizations)
}

// TestUnprotectedServer: no 401, no token, nothing stored; Login says the
// server does not ask.
func TestUnprotectedServer(t *testing.T) {
	e := newEnv(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(plain.Close)
	c, err := auth.New(auth.Options{Server: "plain", URL: plain.URL + "/mcp", Store: e.store})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	code, err := e.call(c, plain.URL+"/mcp", "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	_, err = c.Login(t.Context(), auth.Interaction{Out: io.Discard})
	require.ErrorIs(t, err, auth.ErrNotProtected)
}

// TestDiscoveryFailureIsNotAbsence: a 5xx from a metadata URL is an
// error, not a reason to guess the 2025-03-26 endpoints; a catch-all 200
// page is not metadata.
func TestDiscoveryFailureIsNotAbsence(t *testing.T) {
	e := newEnv(t)
	var guessed atomic.Bool
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>app shell</html>")
		case "/.well-known/oauth-protected-resource":
			w.WriteHeader(http.StatusBadGateway)
		default:
			guessed.Store(true)
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(broken.Close)
	c, err := auth.New(auth.Options{Server: "broken", URL: broken.URL + "/mcp", Store: e.store})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Login(t.Context(), newBrowser(t).interaction(io.Discard))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 502")
	assert.False(t, guessed.Load())
}
