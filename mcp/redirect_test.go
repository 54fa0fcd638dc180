package mcp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

// The configured headers a redirect must not carry to another origin.
const (
	apiKeyHeader = "X-Api-Key"
	apiKey       = "key-S3CRET-77a1"
	bearer       = "Bearer tok-S3CRET-0b3d"
)

// headerLog records the credentials each request to one server carried.
type headerLog struct {
	mu   sync.Mutex // guards seen
	seen []string   // "METHOD path X-Api-Key Authorization"
}

func (l *headerLog) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get(apiKeyHeader)+" "+r.Header.Get("Authorization"))
}

func (l *headerLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// credentialed reports whether any request carried the key or the token.
func (l *headerLog) credentialed() bool {
	for _, r := range l.requests() {
		if strings.Contains(r, apiKey) || strings.Contains(r, bearer) {
			return true
		}
	}
	return false
}

// proxyTo is a reverse proxy to the test server at target (its origin),
// streaming responses as they come (SSE).
func proxyTo(t *testing.T, target string) *httputil.ReverseProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p.FlushInterval = -1
	p.ErrorLog = testutil.Log(t) // a request canceled mid-stream is logged
	return p
}

// otherOrigin is a real MCP server (the test server behind a proxy) at
// another origin, which records what reaches it. Its cleanup is
// registered first, so it runs after the session's.
func otherOrigin(t *testing.T, flags ...string) (*httptest.Server, *headerLog) {
	t.Helper()
	u, _ := startTestServerHTTP(t, flags...)
	log := &headerLog{}
	proxy := proxyTo(t, u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.record(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// redirectTo answers every request with 307 to the same path and query at
// origin.
func redirectTo(origin string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, origin+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}
}

// connectOnce connects srv and closes the session at once: what `freecode
// mcp start` does.
func connectOnce(srv Spec, opts Options) error {
	s, err := Connect(context.Background(), srv, opts)
	if err != nil {
		return err
	}
	return s.Close()
}

func withCredentials(srv Spec) Spec {
	srv.Headers = map[string]string{apiKeyHeader: apiKey, "Authorization": bearer}
	return srv
}

func requireRedirectError(t *testing.T, err error, downgrade bool, to string) {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	var re *RedirectError
	require.True(t, errors.As(err, &re), "want a *RedirectError, got %v", err)
	require.Equal(t, downgrade, re.Downgrade)
	require.ErrorIs(t, err, ErrTransport)
	require.Contains(t, err.Error(), "the server redirected to "+to)
	require.Contains(t, err.Error(), "put the final URL in the config")
	if downgrade {
		require.Contains(t, err.Error(), "(from https to http)")
	} else {
		require.Contains(t, err.Error(), "(another origin)")
	}
}

// A 307 to another origin is not followed, for the POSTs of streamable
// HTTP and the GET of the legacy SSE stream alike: the connect fails and
// the other origin receives none of the configured headers.
func TestRemoteCrossOriginRedirectRefused(t *testing.T) {
	for _, tr := range []Transport{TransportAuto, TransportStreamableHTTP, TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			var flags []string
			path := "/mcp"
			if tr == TransportSSE {
				flags, path = []string{"--sse"}, "/sse"
			}
			other, got := otherOrigin(t, flags...)
			front := httptest.NewServer(redirectTo(other.URL))
			t.Cleanup(front.Close)

			err := connectOnce(withCredentials(remoteServer("moved", front.URL+path, tr)), Options{Logger: testLogger(t)})
			require.False(t, got.credentialed(), "the other origin received the headers: %v", got.requests())
			require.Empty(t, got.requests())
			requireRedirectError(t, err, false, other.URL+path)
		})
	}
}

// An https endpoint that redirects to http is not followed: the token
// would travel in clear text.
func TestRemoteDowngradeRedirectRefused(t *testing.T) {
	plain, got := otherOrigin(t)
	front := httptest.NewTLSServer(redirectTo(plain.URL))
	t.Cleanup(front.Close)
	roots := x509.NewCertPool()
	roots.AddCert(front.Certificate())
	opts := Options{TLSClientConfig: &tls.Config{RootCAs: roots}}

	err := connectOnce(withCredentials(remoteServer("tls", front.URL+"/mcp", TransportAuto)), opts)
	require.False(t, got.credentialed(), "the token went out over http: %v", got.requests())
	requireRedirectError(t, err, true, plain.URL+"/mcp")
}

// Redirects within one origin (a trailing slash, with 307 or 308) are
// followed, with the configured headers and the request body.
func TestRemoteSameOriginRedirectFollowed(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			u, _ := startTestServerHTTP(t)
			proxy := proxyTo(t, u)
			got := &headerLog{}
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.record(r)
				switch r.URL.Path {
				case "/mcp":
					http.Redirect(w, r, "/mcp/", code)
				case "/mcp/":
					r.URL.Path = "/mcp"
					proxy.ServeHTTP(w, r)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(front.Close)

			s := connect(t, withCredentials(remoteServer("slash", front.URL+"/mcp", TransportStreamableHTTP)))
			res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"after a redirect"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "after a redirect", textOf(t, res))
			require.Contains(t, got.requests(), "POST /mcp/ "+apiKey+" "+bearer)
		})
	}
}

// A redirect to another origin of a request once the session runs (a
// call, or only the standalone GET stream) ends the session with the
// same error; the other origin gets nothing.
func TestRemoteRedirectEndsSession(t *testing.T) {
	for name, redirected := range map[string]func(r *http.Request) bool{
		"call":       func(r *http.Request) bool { return r.Method == http.MethodPost },
		"GET stream": func(r *http.Request) bool { return r.Method == http.MethodGet },
	} {
		t.Run(name, func(t *testing.T) {
			other, got := otherOrigin(t)
			u, _ := startTestServerHTTP(t)
			proxy := proxyTo(t, u)
			var moved atomic.Bool
			// The GET stream is redirected from the start: it runs beside
			// the handshake, which goes through.
			moved.Store(name == "GET stream")
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if moved.Load() && redirected(r) {
					redirectTo(other.URL)(w, r)
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)

			srv := withCredentials(remoteServer("moving", front.URL+"/mcp", TransportStreamableHTTP))
			s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
			if err == nil {
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				if name == "call" {
					moved.Store(true)
					_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
					requireRedirectError(t, err, false, other.URL+"/mcp")
				}
				select {
				case <-s.Done():
				case <-time.After(signalWait):
					t.Fatal("the session did not end after a refused redirect")
				}
				err = s.Err()
			}
			requireRedirectError(t, err, false, other.URL+"/mcp")
			require.False(t, got.credentialed(), "the other origin received the headers: %v", got.requests())
		})
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://h.example/mcp", "https://h.example/mcp/", true},
		{"https://h.example/mcp", "https://H.Example:443/other", true},
		{"http://h.example/mcp", "http://h.example:80/mcp", true},
		{"http://[::1]:8080/mcp", "http://[::1]:8080/x", true},
		{"https://h.example/mcp", "http://h.example/mcp", false},
		{"http://h.example/mcp", "https://h.example/mcp", false},
		{"https://h.example/mcp", "https://h.example:8443/mcp", false},
		{"https://h.example/mcp", "https://api.h.example/mcp", false},
		{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp", false},
	} {
		a, err := url.Parse(tc.a)
		require.NoError(t, err)
		b, err := url.Parse(tc.b)
		require.NoError(t, err)
		require.Equal(t, tc.same, sameOrigin(a, b), "%s → %s", tc.a, tc.b)
	}
}
