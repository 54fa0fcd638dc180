package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxMetadataBytes bounds a metadata document or token endpoint answer.
const maxMetadataBytes = 1 << 20

// challenge is what a 401 or 403 answer's WWW-Authenticate Bearer
// challenge says (RFC 6750 §3, RFC 9728 §5.1).
type challenge struct {
	status           int
	resourceMetadata string
	scopes           []string
	errCode          string
}

// stepUp reports whether the answer asks for more scope.
func (ch challenge) stepUp() bool {
	return ch.status == http.StatusForbidden && ch.errCode == CodeInsufficientScope
}

func parseChallenge(resp *http.Response) challenge {
	ch := challenge{status: resp.StatusCode}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return ch
	}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		if ch.resourceMetadata == "" {
			ch.resourceMetadata = c.Params["resource_metadata"]
		}
		if ch.scopes == nil && c.Params["scope"] != "" {
			ch.scopes = strings.Fields(c.Params["scope"])
		}
		if ch.errCode == "" {
			ch.errCode = c.Params["error"]
		}
	}
	return ch
}

// discovery is what FreeCode learned about a server's authorization.
type discovery struct {
	resource string                             // RFC 8707 resource indicator to request
	prm      *oauthex.ProtectedResourceMetadata // nil: the server has none (2025-03-26)
	asm      *oauthex.AuthServerMeta            // synthesized for the 2025-03-26 fallback
	// defaults is set when the authorization server publishes no metadata
	// and the 2025-03-26 default endpoints are used.
	defaults bool
}

// discover finds the protected resource metadata and the authorization
// server's metadata, as the MCP authorization spec orders it:
//
//  1. the challenge's resource_metadata, else the path-based
//     /.well-known/oauth-protected-resource/<path>, else the root one; the
//     metadata's resource must cover the server URL ([resourceCovers]);
//  2. for its first authorization server, RFC 8414 and OIDC discovery
//     URLs (path insertion, then OIDC path appending), with the issuer
//     check;
//  3. without protected resource metadata (a 2025-03-26 server): the
//     server origin's /.well-known/oauth-authorization-server, else the
//     default /authorize, /token and /register endpoints at the origin.
//
// A 4xx (or a 200 that is not JSON) moves on to the next URL; a network
// error or 5xx stops discovery, so that a transient failure never reads
// as "this server has no metadata". sawChallenge says whether the server
// asked for authorization: without it the default endpoints are not
// guessed.
func (c *Client) discover(ctx context.Context, ch challenge, sawChallenge bool) (*discovery, error) {
	prm, err := c.findResourceMetadata(ctx, ch)
	if err != nil {
		return nil, err
	}
	if prm != nil {
		issuer := prm.AuthorizationServers[0]
		asm, err := c.findAuthServerMeta(ctx, issuer)
		if err != nil {
			return nil, err
		}
		if asm == nil {
			return nil, fmt.Errorf("authorization server %s of server %q publishes no metadata (RFC 8414 or OpenID discovery)", redactRawURL(issuer), c.name)
		}
		return &discovery{resource: prm.Resource, prm: prm, asm: asm}, nil
	}

	// 2025-03-26: the server's origin is the authorization server.
	origin := originOf(c.resourceURL)
	metaURL := origin + "/.well-known/oauth-authorization-server"
	var asm oauthex.AuthServerMeta
	found, err := c.getJSON(ctx, metaURL, &asm)
	if err != nil {
		return nil, err
	}
	if found {
		// No issuer identifier was known beforehand here: the URL was
		// derived from the server's origin, not from an issuer. The
		// metadata may name an issuer with a path (e.g. <origin>/oauth);
		// it is accepted when it is on the server's own origin, so it
		// cannot redirect trust elsewhere.
		iu, perr := url.Parse(asm.Issuer)
		if perr != nil || !sameOrigin(iu, c.resourceURL) {
			return nil, fmt.Errorf("authorization server metadata at %s names issuer %q, not on the server's origin", metaURL, asm.Issuer)
		}
		if err := c.checkASMURLs(&asm); err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", metaURL, err)
		}
		if len(asm.CodeChallengeMethodsSupported) == 0 {
			// 2025-03-26 made PKCE mandatory without asking servers to
			// advertise it; the later rule (refuse unless advertised) is
			// for servers of the later revisions.
			asm.CodeChallengeMethodsSupported = []string{"S256"}
		}
		return &discovery{resource: c.canonicalResource(), asm: &asm}, nil
	}
	if !sawChallenge {
		return nil, fmt.Errorf("server %q: %w, and publishes no authorization metadata", c.name, ErrNotProtected)
	}
	c.log.V(1).Info("no authorization metadata; using the default endpoints", "origin", origin)
	return &discovery{
		resource: c.canonicalResource(),
		defaults: true,
		asm: &oauthex.AuthServerMeta{
			Issuer:                        origin,
			AuthorizationEndpoint:         origin + "/authorize",
			TokenEndpoint:                 origin + "/token",
			RegistrationEndpoint:          origin + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}, // 2025-03-26 makes PKCE mandatory
		},
	}, nil
}

// prmURLs lists where protected resource metadata may be, in order.
func prmURLs(fromChallenge string, server *url.URL) []string {
	var urls []string
	if fromChallenge != "" {
		urls = append(urls, fromChallenge)
	}
	origin := originOf(server)
	if p := strings.Trim(server.EscapedPath(), "/"); p != "" {
		urls = append(urls, origin+"/.well-known/oauth-protected-resource/"+p)
	}
	root := origin + "/.well-known/oauth-protected-resource"
	if !slices.Contains(urls, root) {
		urls = append(urls, root)
	}
	return urls
}

func (c *Client) findResourceMetadata(ctx context.Context, ch challenge) (*oauthex.ProtectedResourceMetadata, error) {
	for _, u := range prmURLs(ch.resourceMetadata, c.resourceURL) {
		if err := c.checkEndpointURL(u); err != nil {
			return nil, fmt.Errorf("resource_metadata %s: %w", redactRawURL(u), err)
		}
		var prm oauthex.ProtectedResourceMetadata
		found, err := c.getJSON(ctx, u, &prm)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		ru, err := url.Parse(prm.Resource)
		if err != nil || prm.Resource == "" || !resourceCovers(ru, c.resourceURL) {
			return nil, fmt.Errorf("server %q: %w: %s describes %q, not %s",
				c.name, ErrResourceMismatch, redactRawURL(u), redactRawURL(prm.Resource), redactURL(c.resourceURL))
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("server %q: protected resource metadata at %s names no authorization server", c.name, redactRawURL(u))
		}
		for i, as := range prm.AuthorizationServers {
			if err := c.checkEndpointURL(as); err != nil {
				return nil, fmt.Errorf("protected resource metadata at %s: authorization_servers[%d]: %w", redactRawURL(u), i, err)
			}
		}
		c.log.V(1).Info("found protected resource metadata", "url", redactRawURL(u), "resource", redactRawURL(prm.Resource), "authorizationServer", redactRawURL(prm.AuthorizationServers[0]))
		return &prm, nil
	}
	return nil, nil
}

// asmURLs lists an issuer's metadata URLs in the MCP spec's order.
func asmURLs(issuer *url.URL) []string {
	origin := originOf(issuer)
	p := strings.Trim(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server/" + p,
		origin + "/.well-known/openid-configuration/" + p,
		origin + "/" + p + "/.well-known/openid-configuration",
	}
}

// findAuthServerMeta fetches issuer's metadata; nil if it publishes none.
func (c *Client) findAuthServerMeta(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" || iu.RawQuery != "" || iu.Fragment != "" {
		return nil, fmt.Errorf("authorization server %q is not an issuer URL", redactRawURL(issuer))
	}
	for _, u := range asmURLs(iu) {
		var asm oauthex.AuthServerMeta
		found, err := c.getJSON(ctx, u, &asm)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		// RFC 8414 §3.3 (and OIDC Discovery §4.3): the issuer must be the
		// one the URL was built from. A single trailing slash is
		// tolerated, as issuers are written both ways in practice.
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("authorization server metadata at %s names issuer %q, not %q (RFC 8414 §3.3)", u, asm.Issuer, issuer)
		}
		if err := c.checkASMURLs(&asm); err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", u, err)
		}
		c.log.V(1).Info("found authorization server metadata", "url", u, "issuer", asm.Issuer)
		return &asm, nil
	}
	return nil, nil
}

func (c *Client) checkASMURLs(asm *oauthex.AuthServerMeta) error {
	if asm.TokenEndpoint == "" {
		return errors.New("no token_endpoint")
	}
	for _, f := range []struct{ name, u string }{
		{"authorization_endpoint", asm.AuthorizationEndpoint},
		{"token_endpoint", asm.TokenEndpoint},
		{"registration_endpoint", asm.RegistrationEndpoint},
		{"revocation_endpoint", asm.RevocationEndpoint},
	} {
		if f.u == "" {
			continue
		}
		if err := c.checkEndpointURL(f.u); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// getJSON GETs u into v. found is false for a 4xx answer or a body that is
// not a JSON object; err is set for a network error or a 5xx.
func (c *Client) getJSON(ctx context.Context, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("fetch %s: %w", redactRawURL(u), err)
	}
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if na := noAnswer(u, start, err); na != nil {
			return false, na
		}
		return false, wrap("fetch "+redactRawURL(u), err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		_ = resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode >= 500:
		return false, fmt.Errorf("fetch %s: HTTP %d", redactRawURL(u), resp.StatusCode)
	default:
		c.log.V(1).Info("no metadata", "url", redactRawURL(u), "status", resp.StatusCode)
		return false, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return false, wrap("fetch "+redactRawURL(u), err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		// A catch-all page answering 200 for every path is not metadata.
		c.log.V(1).Info("not a metadata document", "url", redactRawURL(u))
		return false, nil
	}
	return true, nil
}

// resourceCovers reports whether the protected resource identifier r
// (from protected resource metadata) covers the server URL s: the same
// origin, no query or fragment, and a path that is s's path or one of its
// parent paths by whole segments. RFC 9728 §3.3 asks for the identifier
// the metadata URL was derived from; servers commonly publish their
// origin (or "/") for an endpoint at /mcp, which this admits, while a
// resource on any other origin is refused.
func resourceCovers(r, s *url.URL) bool {
	if !sameOrigin(r, s) || r.RawQuery != "" || r.Fragment != "" || r.User != nil {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// sameOrigin compares scheme, host and port (with default ports).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + u.Host
}

// canonicalResource is the server URL as an RFC 8707 resource indicator:
// lower-case scheme and host, no fragment, no userinfo.
func (c *Client) canonicalResource() string {
	u := *c.resourceURL
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
