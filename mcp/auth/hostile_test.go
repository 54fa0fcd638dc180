package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp/auth"
)

// Values the hostile authorization server hands out; none may travel on.
const (
	hostileCode  = "hostile-code-0123456789"
	hostileToken = "hostile-access-token-0123456789"
)

// hostile is an MCP server ("res") and its authorization server ("as"),
// each on a loopback origin of its own, that a test makes misbehave, and
// a third origin ("sink") they point at. Every request any of them gets
// is recorded.
type hostile struct {
	res, as, sink *httptest.Server

	mu       sync.Mutex
	override map[string]http.HandlerFunc // by "<server> <path>"
	hits     []hit
}

type hit struct {
	server, method, path, body string
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{override: map[string]http.HandlerFunc{}}
	h.sink = httptest.NewServer(h.serve("sink", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONTest(w, http.StatusOK, map[string]any{"resource": "x"})
	}))
	t.Cleanup(h.sink.Close)
	h.res = httptest.NewServer(h.serve("res", h.resource))
	t.Cleanup(h.res.Close)
	h.as = httptest.NewServer(h.serve("as", h.authServer))
	t.Cleanup(h.as.Close)
	return h
}

// set replaces what server answers at path.
func (h *hostile) set(server, path string, fn http.HandlerFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.override[server+" "+path] = fn
}

// redirect makes server answer path with a redirect to target.
func (h *hostile) redirect(server, path, target string, status int) {
	h.set(server, path, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, status)
	})
}

func (h *hostile) serve(name string, def http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.hits = append(h.hits, hit{name, r.Method, r.URL.Path, string(body)})
		fn := h.override[name+" "+r.URL.Path]
		h.mu.Unlock()
		if fn == nil {
			fn = def
		}
		fn(w, r)
	})
}

// hitsOf lists the requests server got.
func (h *hostile) hitsOf(server string) []hit {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hit
	for _, x := range h.hits {
		if x.server == server {
			out = append(out, x)
		}
	}
	return out
}

func (h *hostile) resource(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/oauth-protected-resource" {
		writeJSONTest(w, http.StatusOK, map[string]any{"resource": h.res.URL, "authorization_servers": []string{h.as.URL}})
		return
	}
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+hostileToken {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+h.res.URL+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	writeJSONTest(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

// asMeta is the authorization server's metadata; authorizePath may be
// changed by a test through an override of the metadata.
func (h *hostile) asMeta(authorizePath string) map[string]any {
	return map[string]any{
		"issuer":                                h.as.URL,
		"authorization_endpoint":                h.as.URL + authorizePath,
		"token_endpoint":                        h.as.URL + "/token",
		"registration_endpoint":                 h.as.URL + "/register",
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
	}
}

func (h *hostile) authServer(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/.well-known/oauth-authorization-server":
		writeJSONTest(w, http.StatusOK, h.asMeta("/authorize"))
	case strings.HasPrefix(r.URL.Path, "/authorize"):
		q := r.URL.Query()
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		u.RawQuery = url.Values{"code": {hostileCode}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case r.URL.Path == "/register":
		writeJSONTest(w, http.StatusCreated, map[string]any{"client_id": "hostile-client", "token_endpoint_auth_method": "none"})
	case r.URL.Path == "/token":
		writeJSONTest(w, http.StatusOK, map[string]any{"access_token": hostileToken, "token_type": "Bearer", "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

func writeJSONTest(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (e *env) hostileClient(h *hostile, mod func(*auth.Options)) *auth.Client {
	opts := auth.Options{Server: "remote", URL: h.res.URL, Store: e.store, Logger: e.logs.logger(), Now: e.clock.now}
	if mod != nil {
		mod(&opts)
	}
	c, err := auth.New(opts)
	require.NoError(e.t, err)
	e.t.Cleanup(c.Close)
	return c
}

// TestRedirectsAreNotFollowed: a server or authorization server cannot
// steer the sign-in's requests elsewhere by redirecting them. A redirect
// of a metadata GET to another origin is not followed (the URL counts as
// "no metadata here"); a redirect of a POST to the registration or token
// endpoint is never followed, not even within the origin, as a 307 or
// 308 would send the registration, or the code and the PKCE verifier, on.
func TestRedirectsAreNotFollowed(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(h *hostile)
		redirect bool // the error wraps ErrRedirectRefused
	}{
		{"protected resource metadata to another origin", func(h *hostile) {
			h.redirect("res", "/.well-known/oauth-protected-resource", h.sink.URL+"/prm", http.StatusFound)
		}, false},
		{"authorization server metadata to another origin", func(h *hostile) {
			h.redirect("as", "/.well-known/oauth-authorization-server", h.sink.URL+"/meta", http.StatusFound)
		}, false},
		{"registration 307 to another origin", func(h *hostile) {
			h.redirect("as", "/register", h.sink.URL+"/register", http.StatusTemporaryRedirect)
		}, true},
		{"registration 308 within the origin", func(h *hostile) {
			h.redirect("as", "/register", h.as.URL+"/register2", http.StatusPermanentRedirect)
		}, true},
		{"token 307 to another origin", func(h *hostile) {
			h.redirect("as", "/token", h.sink.URL+"/token", http.StatusTemporaryRedirect)
		}, true},
		{"token 307 within the origin", func(h *hostile) {
			h.redirect("as", "/token", h.as.URL+"/token2", http.StatusTemporaryRedirect)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHostile(t)
			tc.setup(h)
			c := e.hostileClient(h, nil)
			out := &syncBuffer{}
			_, err := c.Login(context.Background(), newBrowser(t).interaction(out))
			require.Error(t, err)
			if tc.redirect {
				require.ErrorIs(t, err, auth.ErrRedirectRefused)
				assert.Contains(t, err.Error(), "FreeCode does not follow redirects of POST requests")
			}
			assert.Empty(t, h.hitsOf("sink"), "a request reached the origin the redirect pointed at")
			for _, x := range h.hitsOf("as") {
				assert.NotContains(t, []string{"/register2", "/token2"}, x.path, "a POST was redirected within the origin")
			}
			all := err.Error() + out.String() + e.logs.String()
			assert.NotContains(t, all, hostileCode)
			st, err := c.Status()
			require.NoError(t, err)
			assert.Equal(t, auth.StateNoCredentials, st.State)
		})
	}
}

// TestMetadataRedirectWithinOrigin: a redirect of a metadata request to
// another path of the same origin is still followed.
func TestMetadataRedirectWithinOrigin(t *testing.T) {
	e := newEnv(t)
	h := newHostile(t)
	h.redirect("as", "/.well-known/oauth-authorization-server", h.as.URL+"/meta/", http.StatusMovedPermanently)
	h.set("as", "/meta/", func(w http.ResponseWriter, _ *http.Request) { writeJSONTest(w, http.StatusOK, h.asMeta("/authorize")) })
	c := e.hostileClient(h, nil)
	_, err := c.Login(context.Background(), newBrowser(t).interaction(io.Discard))
	require.NoError(t, err)
	assert.Empty(t, h.hitsOf("sink"))
}

// TestMetadataLinkLocalRefused: protected resource metadata that
// names an authorization server on a link-local address is refused
// before any request to it.
func TestMetadataLinkLocalRefused(t *testing.T) {
	e := newEnv(t)
	h := newHostile(t)
	h.set("res", "/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONTest(w, http.StatusOK, map[string]any{"resource": h.res.URL, "authorization_servers": []string{"http://169.254.169.254/latest"}})
	})
	c := e.hostileClient(h, nil)
	_, err := c.Login(context.Background(), newBrowser(t).interaction(io.Discard))
	require.ErrorIs(t, err, auth.ErrEndpointRefused)
	assert.Contains(t, err.Error(), "http://169.254.169.254/latest is a link-local, metadata or unspecified address")
}

// TestPrintedURLNeutralized: the authorization URL is the authorization
// server's to choose; what a terminal would act on in it (a bidi
// override, a C1 control) is printed escaped.
func TestPrintedURLNeutralized(t *testing.T) {
	e := newEnv(t)
	h := newHostile(t)
	h.set("as", "/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONTest(w, http.StatusOK, h.asMeta("/authorize\u202egnp.exe\u009b2J"))
	})
	c := e.hostileClient(h, nil)
	out := &syncBuffer{}
	_, err := c.Login(context.Background(), newBrowser(t).interaction(out))
	require.NoError(t, err)
	printed := out.String()
	assert.NotContains(t, printed, "\u202e")
	assert.NotContains(t, printed, "\u009b")
	assert.Contains(t, printed, `/authorize\u202egnp.exe\u009b2J?`)
}

// TestMetadataTimeout: a metadata request that gets no answer is
// reported as that, naming the URL, not as a wait for the browser.
func TestMetadataTimeout(t *testing.T) {
	e := newEnv(t)
	h := newHostile(t)
	h.set("as", "/.well-known/oauth-authorization-server", func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := e.hostileClient(h, func(o *auth.Options) {
		o.HTTPClient = &http.Client{Transport: tr, Timeout: 300 * time.Millisecond}
	})
	_, err := c.Login(context.Background(), newBrowser(t).interaction(io.Discard))
	require.ErrorIs(t, err, auth.ErrNoAnswer)
	require.NotErrorIs(t, err, auth.ErrNoBrowserAnswer)
	assert.Regexp(t, `no answer from `+regexp.QuoteMeta(h.as.URL)+`/\.well-known/oauth-authorization-server within \d+ms`, err.Error())
	assert.NotContains(t, err.Error(), "browser")
}
