// Package testauth is an in-process OAuth 2.1 authorization server and an
// OAuth-protected MCP resource, for tests (and benchmarks) of FreeCode's
// remote authorization. Both run on httptest servers on 127.0.0.1.
//
// The resource serves its protected resource metadata (RFC 9728, at the
// path-based or the root location, or none for a 2025-03-26 server) and
// the MCP endpoint behind [Server.Protect]: 401 with a WWW-Authenticate
// challenge (resource_metadata, scope) without a valid token, 403
// insufficient_scope for the JSON-RPC methods and tools that need more
// scope. The authorization server publishes RFC 8414 or OpenID metadata
// (or none: the 2025-03-26 default endpoints), registers clients
// dynamically (RFC 7591), approves every authorization request at once
// (redirecting with code, state and, as configured, iss), and runs the
// token endpoint: authorization code with PKCE S256 and resource checks,
// one-use rotating refresh tokens, client credentials, and revocation
// (RFC 7009). Counters and request logs let tests assert what a client did.
//
// The server is deliberately strict where a client can be wrong (PKCE,
// redirect URI, resource indicator, client authentication method,
// refresh token reuse) so that a client passing against it follows the
// specs, not this server's leniency.
package testauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// PRMLocation is where the resource publishes its metadata.
type PRMLocation int

const (
	// PRMPath is /.well-known/oauth-protected-resource/<endpoint path>.
	PRMPath PRMLocation = iota
	// PRMRoot is /.well-known/oauth-protected-resource.
	PRMRoot
	// PRMNone: no metadata, a 2025-03-26 server whose origin is its own
	// authorization server.
	PRMNone
)

// MetadataKind is how the authorization server publishes its metadata.
type MetadataKind int

const (
	// MetadataOAuth is RFC 8414, /.well-known/oauth-authorization-server
	// (with path insertion for an issuer with a path).
	MetadataOAuth MetadataKind = iota
	// MetadataOIDC is OpenID Connect Discovery,
	// <issuer>/.well-known/openid-configuration (path appending).
	MetadataOIDC
	// MetadataNone publishes nothing: clients use the 2025-03-26 default
	// endpoints /authorize, /token and /register at the origin.
	MetadataNone
)

// IssMode is what the authorization response says about its issuer
// (RFC 9207).
type IssMode int

const (
	// IssOmitted: no iss, and none advertised.
	IssOmitted IssMode = iota
	// IssSent: iss in the redirect, not advertised in the metadata.
	IssSent
	// IssAdvertised: advertised and sent.
	IssAdvertised
	// IssAdvertisedMissing: advertised, but the redirect has none.
	IssAdvertisedMissing
	// IssWrong: a wrong iss in the redirect (a mix-up attack).
	IssWrong
)

// Client is a pre-registered client.
type Client struct {
	ID     string
	Secret string
	// AuthMethod is client_secret_basic, client_secret_post or none;
	// empty means client_secret_basic with a secret, none without.
	AuthMethod string
	// Grants it may use; nil means authorization_code and refresh_token,
	// plus client_credentials if it has a secret.
	Grants []string
	// RedirectURIs; nil admits any loopback URI.
	RedirectURIs []string
}

// Options configure a Server. The zero value is a streamable-HTTP style
// resource at /mcp with path-based metadata and a separate RFC 8414
// authorization server that supports dynamic registration and the auth
// methods none, client_secret_basic and client_secret_post.
type Options struct {
	// Path of the MCP endpoint; default "/mcp".
	Path string
	// Handler is the protected MCP endpoint; nil answers every JSON-RPC
	// request with {"ok": true, "method": ...}.
	Handler http.Handler

	PRM PRMLocation
	// PRMResource replaces the resource the metadata names (to test a
	// mismatch).
	PRMResource string
	// NoMetadataURLInChallenge leaves resource_metadata out of the 401
	// challenge.
	NoMetadataURLInChallenge bool
	// PRMScopes is the metadata's scopes_supported.
	PRMScopes []string
	// ChallengeScope is the 401 challenge's scope.
	ChallengeScope []string
	// RequireScopes maps a JSON-RPC method ("tools/list"), a tool
	// ("tools/call:<name>") or "*" (every request) to the scopes it
	// needs; a token without them gets 403 insufficient_scope.
	RequireScopes map[string][]string

	// SameOrigin serves the authorization server on the resource's origin
	// (always so with PRMNone).
	SameOrigin bool
	Metadata   MetadataKind
	// IssuerPath is the issuer's path, e.g. "/tenant1".
	IssuerPath string
	Iss        IssMode
	// ScopesSupported is the authorization server's scopes_supported.
	ScopesSupported []string
	// AuthMethods is token_endpoint_auth_methods_supported; nil means
	// none, client_secret_basic, client_secret_post.
	AuthMethods []string
	// CIMD advertises client_id_metadata_document_supported and accepts
	// https URLs as client IDs of public clients. The document is not
	// fetched.
	CIMD           bool
	NoRegistration bool
	Revocation     bool
	// NoPKCE leaves code_challenge_methods_supported out of the metadata.
	NoPKCE bool
	// AccessTokenTTL is the access tokens' lifetime; default one hour.
	AccessTokenTTL  time.Duration
	NoRefreshTokens bool
	Clients         []Client
	// DenyScopes are never granted, whatever is asked (so a step-up for
	// them never succeeds).
	DenyScopes []string
	// IDTokenAccount, if set, adds an (unsigned) ID token for this email.
	IDTokenAccount string
	// OnRefresh, if set, runs in the token endpoint after a refresh token
	// was accepted (and spent) and before the new tokens are issued.
	OnRefresh func()
}

// Counts are what the servers have seen.
type Counts struct {
	Registrations     int
	Authorizations    int // authorization requests
	CodeExchanges     int // successful authorization_code grants
	Refreshes         int // successful refresh_token grants
	ClientCredentials int // successful client_credentials grants
	InvalidGrants     int
	InvalidClients    int
	Revocations       int
	Unauthorized      int // 401 answers of the resource
	InsufficientScope int // 403 answers of the resource
	Authorized        int // requests the resource let through
}

// AuthorizeRequest is one request to the authorization endpoint.
type AuthorizeRequest struct {
	ClientID, RedirectURI, Scope, Resource, CodeChallengeMethod string
}

// TokenRequest is one request to the token endpoint.
type TokenRequest struct {
	Grant      string
	ClientID   string
	AuthMethod string // as the client authenticated
	Resource   string
	Scope      string
}

// Registration is one dynamic registration request's metadata.
type Registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	ApplicationType         string   `json:"application_type"`
	Scope                   string   `json:"scope"`
}

type client struct {
	Client
	issuer string
}

type code struct {
	clientID, redirectURI, challenge, resource, issuer string
	scopes                                             []string
	expires                                            time.Time
}

type token struct {
	clientID, resource, issuer string
	scopes                     []string
	expires                    time.Time
	spent                      bool // a refresh token that was used
}

// Server is a running resource and authorization server.
type Server struct {
	// URL is the MCP endpoint.
	URL string

	opts     Options
	resource *httptest.Server
	as       *httptest.Server // == resource when same-origin

	mu         sync.Mutex // guards everything below
	issuerPath string
	clients    map[string]*client
	codes      map[string]*code
	access     map[string]*token
	refresh    map[string]*token
	counts     Counts
	authLog    []AuthorizeRequest
	tokenLog   []TokenRequest
	regLog     []Registration
	failNext   bool     // the next refresh answers invalid_grant
	secrets    []string // every code, token and client secret issued
}

// New starts a Server; it is closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if opts.PRM == PRMNone {
		opts.SameOrigin = true
	}
	if opts.AccessTokenTTL == 0 {
		opts.AccessTokenTTL = time.Hour
	}
	if opts.AuthMethods == nil {
		opts.AuthMethods = []string{"none", "client_secret_basic", "client_secret_post"}
	}
	s := &Server{
		opts:       opts,
		issuerPath: opts.IssuerPath,
		clients:    map[string]*client{},
		codes:      map[string]*code{},
		access:     map[string]*token{},
		refresh:    map[string]*token{},
	}
	s.resource = httptest.NewServer(http.HandlerFunc(s.serveResource))
	s.as = s.resource
	if !opts.SameOrigin {
		s.as = httptest.NewServer(http.HandlerFunc(s.serveAS))
	}
	s.URL = s.resource.URL + opts.Path
	for _, c := range opts.Clients {
		s.clients[c.ID] = &client{Client: c, issuer: ""} // any issuer
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops both servers.
func (s *Server) Close() {
	s.resource.Close()
	if s.as != s.resource {
		s.as.Close()
	}
}

// Issuer is the authorization server's issuer identifier.
func (s *Server) Issuer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuerLocked()
}

func (s *Server) issuerLocked() string { return s.as.URL + s.issuerPath }

// ResourceID is the resource identifier the metadata names (what a client
// must send as RFC 8707 resource).
func (s *Server) ResourceID() string {
	switch {
	case s.opts.PRMResource != "":
		return s.opts.PRMResource
	case s.opts.PRM == PRMRoot:
		return s.resource.URL
	default:
		return s.URL
	}
}

// PRMURL is where the protected resource metadata is ("" for PRMNone).
func (s *Server) PRMURL() string {
	switch s.opts.PRM {
	case PRMPath:
		return s.resource.URL + "/.well-known/oauth-protected-resource" + s.opts.Path
	case PRMRoot:
		return s.resource.URL + "/.well-known/oauth-protected-resource"
	}
	return ""
}

// Counts returns the counters.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// AuthorizeRequests returns the authorization requests seen, in order.
func (s *Server) AuthorizeRequests() []AuthorizeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authLog)
}

// TokenRequests returns the token requests seen, in order.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokenLog)
}

// Registrations returns the dynamic registrations seen, in order.
func (s *Server) Registrations() []Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.regLog)
}

// Secrets returns every authorization code, access and refresh token and
// client secret the server issued, and the pre-registered clients'
// secrets: what must never appear in a client's output or logs.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.secrets)
	for _, c := range s.opts.Clients {
		if c.Secret != "" {
			out = append(out, c.Secret)
		}
	}
	return out
}

// SetIssuerPath moves the authorization server to another issuer (the
// same origin, another path). Clients registered dynamically with the old
// issuer, and tokens it issued, are no longer accepted.
func (s *Server) SetIssuerPath(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issuerPath = p
}

// ForgetClients drops every dynamically registered client, as a server
// that lost or expired its registrations does.
func (s *Server) ForgetClients() {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.clients, func(_ string, c *client) bool { return c.issuer != "" })
}

// ExpireAccessTokens makes every access token issued so far invalid.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// FailNextRefresh makes the next refresh answer invalid_grant (the user
// revoked the grant, or the refresh token expired).
func (s *Server) FailNextRefresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = true
}

// Valid reports whether an access token is currently accepted.
func (s *Server) Valid(accessToken string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.validLocked(accessToken)
	return ok
}

func (s *Server) validLocked(accessToken string) (*token, bool) {
	t, ok := s.access[accessToken]
	if !ok || time.Now().After(t.expires) || t.issuer != s.issuerLocked() || t.resource != s.ResourceID() {
		return nil, false
	}
	return t, true
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == s.opts.Path:
		s.Protect(s.endpoint()).ServeHTTP(w, r)
	case s.opts.PRM != PRMNone && r.Method == http.MethodGet && r.URL.Path == strings.TrimPrefix(s.PRMURL(), s.resource.URL):
		s.mu.Lock()
		doc := map[string]any{
			"resource":                 s.ResourceID(),
			"authorization_servers":    []string{s.issuerLocked()},
			"bearer_methods_supported": []string{"header"},
		}
		s.mu.Unlock()
		if s.opts.PRMScopes != nil {
			doc["scopes_supported"] = s.opts.PRMScopes
		}
		writeJSON(w, http.StatusOK, doc)
	case s.opts.SameOrigin:
		s.serveAS(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) endpoint() http.Handler {
	if s.opts.Handler != nil {
		return s.opts.Handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "bad JSON-RPC", http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"ok": true, "method": msg.Method}})
	})
}

// Protect guards next as an OAuth protected resource of this server.
func (s *Server) Protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		bearer, hasBearer := strings.CutPrefix(auth, "Bearer ")
		s.mu.Lock()
		tok, ok := s.validLocked(bearer)
		if !hasBearer || !ok {
			s.counts.Unauthorized++
			s.mu.Unlock()
			params := []string{`realm="testauth"`}
			if s.opts.PRM != PRMNone && !s.opts.NoMetadataURLInChallenge {
				params = append(params, fmt.Sprintf("resource_metadata=%q", s.PRMURL()))
			}
			if len(s.opts.ChallengeScope) > 0 {
				params = append(params, fmt.Sprintf("scope=%q", strings.Join(s.opts.ChallengeScope, " ")))
			}
			if hasBearer {
				params = append(params, `error="invalid_token"`)
			}
			w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
			return
		}
		granted := slices.Clone(tok.scopes)
		s.mu.Unlock()

		need := s.opts.RequireScopes["*"]
		if r.Body != nil && len(s.opts.RequireScopes) > 0 {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			_ = r.Body.Close()
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				need = append(slices.Clone(need), s.opts.RequireScopes[msg.Method]...)
				if msg.Params.Name != "" {
					need = append(need, s.opts.RequireScopes[msg.Method+":"+msg.Params.Name]...)
				}
			}
		}
		for _, sc := range need {
			if !slices.Contains(granted, sc) {
				s.mu.Lock()
				s.counts.InsufficientScope++
				s.mu.Unlock()
				params := []string{`error="insufficient_scope"`, fmt.Sprintf("scope=%q", strings.Join(need, " "))}
				if s.opts.PRM != PRMNone {
					params = append(params, fmt.Sprintf("resource_metadata=%q", s.PRMURL()))
				}
				w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
				return
			}
		}
		s.mu.Lock()
		s.counts.Authorized++
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) serveAS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.issuerPath
	s.mu.Unlock()
	path := r.URL.Path
	switch {
	case s.opts.Metadata != MetadataNone && r.Method == http.MethodGet && path == s.metadataPath(p):
		s.metadata(w, p)
	case path == p+"/authorize" && r.Method == http.MethodGet:
		s.authorize(w, r)
	case path == p+"/token" && r.Method == http.MethodPost:
		s.token(w, r)
	case path == p+"/register" && r.Method == http.MethodPost && !s.opts.NoRegistration:
		s.register(w, r)
	case path == p+"/revoke" && r.Method == http.MethodPost && s.opts.Revocation:
		s.revoke(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) metadataPath(p string) string {
	switch {
	case s.opts.Metadata == MetadataOIDC:
		return p + "/.well-known/openid-configuration"
	case s.opts.PRM == PRMNone:
		// 2025-03-26: the metadata is at the origin's root whatever the
		// issuer's path.
		return "/.well-known/oauth-authorization-server"
	default:
		return "/.well-known/oauth-authorization-server" + p
	}
}

func (s *Server) metadata(w http.ResponseWriter, p string) {
	s.mu.Lock()
	iss := s.issuerLocked()
	s.mu.Unlock()
	doc := map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                iss + "/authorize",
		"token_endpoint":                        iss + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported": s.opts.AuthMethods,
	}
	if !s.opts.NoRegistration {
		doc["registration_endpoint"] = iss + "/register"
	}
	if s.opts.Revocation {
		doc["revocation_endpoint"] = iss + "/revoke"
	}
	if !s.opts.NoPKCE {
		doc["code_challenge_methods_supported"] = []string{"S256"}
	}
	if s.opts.ScopesSupported != nil {
		doc["scopes_supported"] = s.opts.ScopesSupported
	}
	if s.opts.CIMD {
		doc["client_id_metadata_document_supported"] = true
	}
	if s.opts.Iss == IssAdvertised || s.opts.Iss == IssAdvertisedMissing {
		doc["authorization_response_iss_parameter_supported"] = true
	}
	if s.opts.Metadata == MetadataOIDC {
		doc["jwks_uri"] = iss + "/jwks"
		doc["subject_types_supported"] = []string{"public"}
		doc["id_token_signing_alg_values_supported"] = []string{"RS256"}
	}
	writeJSON(w, http.StatusOK, doc)
}

// lookupLocked finds a client by id for the current issuer.
func (s *Server) lookupLocked(id string) *client {
	if c, ok := s.clients[id]; ok && (c.issuer == "" || c.issuer == s.issuerLocked()) {
		return c
	}
	if s.opts.CIMD && strings.HasPrefix(id, "https://") {
		return &client{Client: Client{ID: id, AuthMethod: "none", Grants: []string{"authorization_code", "refresh_token"}}}
	}
	return nil
}

func (c *client) method() string {
	switch {
	case c.AuthMethod != "":
		return c.AuthMethod
	case c.Secret != "":
		return "client_secret_basic"
	}
	return "none"
}

func (c *client) may(grant string) bool {
	if c.Grants != nil {
		return slices.Contains(c.Grants, grant)
	}
	return grant == "authorization_code" || grant == "refresh_token" || (grant == "client_credentials" && c.Secret != "")
}

func (c *client) redirectOK(uri string) bool {
	if c.RedirectURIs == nil {
		return isLoopbackURI(uri)
	}
	for _, r := range c.RedirectURIs {
		if r == uri || (isLoopbackURI(r) && sameButPort(r, uri)) {
			return true // RFC 8252 §7.3: any port for a loopback redirect
		}
	}
	return false
}

func isLoopbackURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Scheme == "http" && (u.Hostname() == "127.0.0.1" || u.Hostname() == "::1" || u.Hostname() == "localhost")
}

func sameButPort(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Hostname() == ub.Hostname() && ua.Path == ub.Path
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Authorizations++
	s.authLog = append(s.authLog, AuthorizeRequest{
		ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), Scope: q.Get("scope"),
		Resource: q.Get("resource"), CodeChallengeMethod: q.Get("code_challenge_method"),
	})
	redirectURI := q.Get("redirect_uri")
	c := s.lookupLocked(q.Get("client_id"))
	if c == nil {
		s.counts.InvalidClients++
		if isLoopbackURI(redirectURI) {
			redirectWith(w, r, redirectURI, url.Values{"error": {"invalid_client"}, "error_description": {"unknown client"}, "state": {q.Get("state")}})
			return
		}
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	}
	if !c.redirectOK(redirectURI) {
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	}
	fail := func(code, desc string) {
		redirectWith(w, r, redirectURI, url.Values{"error": {code}, "error_description": {desc}, "state": {q.Get("state")}})
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only code")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE S256 is required")
		return
	case !c.may("authorization_code"):
		fail("unauthorized_client", "grant not allowed")
		return
	}
	cd := rand.Text()
	s.secrets = append(s.secrets, cd)
	s.codes[cd] = &code{
		clientID: c.ID, redirectURI: redirectURI, challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), issuer: s.issuerLocked(), scopes: strings.Fields(q.Get("scope")),
		expires: time.Now().Add(time.Minute),
	}
	v := url.Values{"code": {cd}, "state": {q.Get("state")}}
	switch s.opts.Iss {
	case IssSent, IssAdvertised:
		v.Set("iss", s.issuerLocked())
	case IssWrong:
		v.Set("iss", "https://attacker.example")
	}
	redirectWith(w, r, redirectURI, v)
}

func redirectWith(w http.ResponseWriter, r *http.Request, uri string, v url.Values) {
	u, _ := url.Parse(uri)
	q := u.Query()
	for k, vs := range v {
		if len(vs) > 0 && vs[0] != "" {
			q.Set(k, vs[0])
		}
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// tokenError answers the token endpoint's error (RFC 6749 §5.2).
func tokenError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// authenticate identifies the client of a token or revocation request and
// checks that it authenticates the way it registered.
func (s *Server) authenticateLocked(r *http.Request) (*client, string, bool) {
	id, secret, method := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), "none"
	if u, p, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(p)
		method = "client_secret_basic"
	} else if secret != "" {
		method = "client_secret_post"
	}
	c := s.lookupLocked(id)
	if c == nil || c.method() != method || (method != "none" && secret != c.Secret) {
		s.counts.InvalidClients++
		return nil, method, false
	}
	return c, method, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	f := r.PostForm
	s.mu.Lock()
	c, method, ok := s.authenticateLocked(r)
	s.tokenLog = append(s.tokenLog, TokenRequest{Grant: f.Get("grant_type"), ClientID: f.Get("client_id"), AuthMethod: method, Resource: f.Get("resource"), Scope: f.Get("scope")})
	if c != nil {
		s.tokenLog[len(s.tokenLog)-1].ClientID = c.ID
	}
	if !ok {
		s.mu.Unlock()
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	grant := f.Get("grant_type")
	if !c.may(grant) {
		s.mu.Unlock()
		tokenError(w, http.StatusBadRequest, "unauthorized_client", "grant not allowed for this client")
		return
	}
	switch grant {
	case "authorization_code":
		cd, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		switch {
		case !ok || time.Now().After(cd.expires) || cd.clientID != c.ID || cd.issuer != s.issuerLocked():
			s.counts.InvalidGrants++
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown or spent code")
			return
		case f.Get("redirect_uri") != cd.redirectURI:
			s.counts.InvalidGrants++
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs")
			return
		case s256(f.Get("code_verifier")) != cd.challenge:
			s.counts.InvalidGrants++
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		case f.Get("resource") != cd.resource:
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request")
			return
		}
		s.counts.CodeExchanges++
		resp := s.issueLocked(c, cd.scopes, cd.resource, !s.opts.NoRefreshTokens && c.may("refresh_token"))
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, resp)
	case "refresh_token":
		rt, ok := s.refresh[f.Get("refresh_token")]
		switch {
		case s.failNext || !ok || rt.spent || rt.clientID != c.ID || rt.issuer != s.issuerLocked() || time.Now().After(rt.expires):
			s.failNext = false
			s.counts.InvalidGrants++
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "refresh token is not valid")
			return
		case f.Get("resource") != "" && f.Get("resource") != rt.resource:
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant")
			return
		}
		rt.spent = true // one use
		s.mu.Unlock()
		if s.opts.OnRefresh != nil {
			s.opts.OnRefresh()
		}
		s.mu.Lock()
		s.counts.Refreshes++
		resp := s.issueLocked(c, rt.scopes, rt.resource, true)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, resp)
	case "client_credentials":
		if c.method() == "none" {
			s.mu.Unlock()
			tokenError(w, http.StatusUnauthorized, "invalid_client", "client credentials need a confidential client")
			return
		}
		s.counts.ClientCredentials++
		resp := s.issueLocked(c, strings.Fields(f.Get("scope")), f.Get("resource"), false)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, resp)
	default:
		s.mu.Unlock()
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", grant)
	}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s *Server) issueLocked(c *client, scopes []string, resource string, withRefresh bool) map[string]any {
	scopes = slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return slices.Contains(s.opts.DenyScopes, sc) })
	at := "at-" + rand.Text()
	s.secrets = append(s.secrets, at)
	t := &token{clientID: c.ID, resource: resource, issuer: s.issuerLocked(), scopes: scopes, expires: time.Now().Add(s.opts.AccessTokenTTL)}
	s.access[at] = t
	resp := map[string]any{
		"access_token": at,
		"token_type":   "Bearer",
		"expires_in":   max(1, int(s.opts.AccessTokenTTL/time.Second)),
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	if withRefresh {
		rt := "rt-" + rand.Text()
		s.secrets = append(s.secrets, rt)
		rtt := *t
		rtt.expires = time.Now().Add(30 * 24 * time.Hour)
		s.refresh[rt] = &rtt
		resp["refresh_token"] = rt
	}
	if s.opts.IDTokenAccount != "" {
		claims, _ := json.Marshal(map[string]string{"sub": "user-1", "email": s.opts.IDTokenAccount, "aud": c.ID})
		resp["id_token"] = "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + "."
	}
	return resp
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var reg Registration
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&reg); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "bad JSON"})
		return
	}
	method := reg.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if !slices.Contains(s.opts.AuthMethods, method) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "unsupported token_endpoint_auth_method"})
		return
	}
	if len(reg.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri", "error_description": "redirect_uris required"})
		return
	}
	c := &client{Client: Client{ID: "dcr-" + rand.Text(), AuthMethod: method, RedirectURIs: reg.RedirectURIs, Grants: reg.GrantTypes}}
	if method != "none" {
		c.Secret = "dcr-secret-" + rand.Text()
	}
	s.mu.Lock()
	if c.Secret != "" {
		s.secrets = append(s.secrets, c.Secret)
	}
	c.issuer = s.issuerLocked()
	s.clients[c.ID] = c
	s.counts.Registrations++
	s.regLog = append(s.regLog, reg)
	s.mu.Unlock()
	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        time.Now().Unix(),
		"redirect_uris":              reg.RedirectURIs,
		"token_endpoint_auth_method": method,
		"grant_types":                reg.GrantTypes,
		"response_types":             reg.ResponseTypes,
		"client_name":                reg.ClientName,
	}
	if c.Secret != "" {
		resp["client_secret"] = c.Secret
		resp["client_secret_expires_at"] = 0
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _, ok := s.authenticateLocked(r)
	if !ok {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	tok := r.PostForm.Get("token")
	if t, ok := s.access[tok]; ok && t.clientID == c.ID {
		delete(s.access, tok)
	}
	if t, ok := s.refresh[tok]; ok && t.clientID == c.ID {
		delete(s.refresh, tok)
	}
	s.counts.Revocations++
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Follow is a browser whose user approves: it GETs authURL and follows
// every redirect, through the authorization server to the loopback
// callback of the client that printed authURL, and fails unless the last
// page answered 200. It works with any authorization server that
// approves without a user (this package's, or another's demo server).
func Follow(ctx context.Context, authURL string) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the browser ended on HTTP %d at %s%s", resp.StatusCode, resp.Request.URL.Host, resp.Request.URL.Path)
	}
	return nil
}
