package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// authStyle maps a token endpoint authentication method onto x/oauth2's.
// "none" sends client_id in the form and no secret.
func authStyle(method string) oauth2.AuthStyle {
	if method == authBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// secretFor is the client secret to authenticate with: none for a public
// client; a dynamically registered client's own; a pre-registered one's
// from the config (never stored).
func (c *Client) secretFor(cl clientCreds) string {
	switch {
	case cl.AuthMethod == authNone:
		return ""
	case cl.Kind == kindPreregistered && cl.ID == c.cfg.ClientID:
		return c.cfg.ClientSecret
	default:
		return cl.Secret
	}
}

func (c *Client) oauthCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.http)
}

func (c *Client) codeConfig(tokenURL, authURL string, cl clientCreds, redirectURI string, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     cl.ID,
		ClientSecret: c.secretFor(cl),
		Endpoint:     oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: authStyle(cl.AuthMethod)},
		RedirectURL:  redirectURI,
		Scopes:       scopes,
	}
}

// exchange trades an authorization code for tokens (RFC 6749 §4.1.3),
// with the PKCE verifier and the RFC 8707 resource.
func (c *Client) exchange(ctx context.Context, cfg *oauth2.Config, code, verifier, resource string) (*oauth2.Token, error) {
	start := time.Now()
	tok, err := cfg.Exchange(c.oauthCtx(ctx), code,
		oauth2.VerifierOption(verifier),
		oauth2.SetAuthURLParam("resource", resource))
	if na := noAnswer(cfg.Endpoint.TokenURL, start, err); na != nil {
		return nil, fmt.Errorf("token request: %w", na)
	}
	if err != nil {
		return nil, tokenError("token request", err, code, verifier, cfg.ClientSecret)
	}
	return tok, nil
}

// refreshToken uses a refresh token (RFC 6749 §6), with the RFC 8707
// resource. x/oauth2's own refresh (Config.TokenSource) cannot carry extra
// parameters; its client-credentials request builder can, and lets
// grant_type be overridden for exactly such interoperability, so refresh
// goes through it with grant_type=refresh_token.
func (c *Client) refreshToken(ctx context.Context, r *record) (*oauth2.Token, error) {
	secret := c.secretFor(r.Client)
	cc := clientcredentials.Config{
		ClientID:     r.Client.ID,
		ClientSecret: secret,
		TokenURL:     r.TokenEndpoint,
		AuthStyle:    authStyle(r.Client.AuthMethod),
		EndpointParams: url.Values{
			"grant_type":    {"refresh_token"},
			"refresh_token": {r.RefreshToken},
			"resource":      {r.Resource},
		},
	}
	start := time.Now()
	tok, err := cc.Token(c.oauthCtx(ctx))
	if na := noAnswer(r.TokenEndpoint, start, err); na != nil {
		return nil, fmt.Errorf("refresh: %w", na)
	}
	if err != nil {
		return nil, tokenError("refresh", err, r.RefreshToken, r.AccessToken, secret)
	}
	return tok, nil
}

// clientCredentialsToken runs the client credentials grant (RFC 6749
// §4.4) with the RFC 8707 resource.
func (c *Client) clientCredentialsToken(ctx context.Context, tokenURL string, cl clientCreds, scopes []string, resource string) (*oauth2.Token, error) {
	secret := c.secretFor(cl)
	cc := clientcredentials.Config{
		ClientID:       cl.ID,
		ClientSecret:   secret,
		TokenURL:       tokenURL,
		AuthStyle:      authStyle(cl.AuthMethod),
		Scopes:         scopes,
		EndpointParams: url.Values{"resource": {resource}},
	}
	start := time.Now()
	tok, err := cc.Token(c.oauthCtx(ctx))
	if na := noAnswer(tokenURL, start, err); na != nil {
		return nil, fmt.Errorf("client credentials token request: %w", na)
	}
	if err != nil {
		return nil, tokenError("client credentials token request", err, secret)
	}
	return tok, nil
}

// tokenError turns x/oauth2's error into ours. A RetrieveError's text
// quotes the response body, so only its parsed code and description are
// kept, scrubbed.
func tokenError(op string, err error, secrets ...string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return &OAuthError{Op: op, Status: status, Code: shorten(scrub(re.ErrorCode, secrets...)), Description: shorten(scrub(re.ErrorDescription, secrets...))}
	}
	return wrap(op, err, secrets...)
}

// fill copies a token answer into r. requested are the scopes asked for:
// an answer without "scope" grants exactly those (RFC 6749 §5.1).
func (c *Client) fill(r *record, tok *oauth2.Token, requested []string) error {
	if tt := tok.TokenType; tt != "" && !strings.EqualFold(tt, "bearer") {
		return fmt.Errorf("the authorization server issued a %q token; FreeCode sends bearer tokens only", tt)
	}
	now := c.now()
	r.AccessToken = tok.AccessToken
	r.TokenType = "Bearer"
	if tok.RefreshToken != "" {
		r.RefreshToken = tok.RefreshToken // rotated; else the old one stays valid
	}
	switch secs := expiresIn(tok); {
	case secs > 0:
		r.Expiry = now.Add(time.Duration(secs) * time.Second).UTC()
	case !tok.Expiry.IsZero():
		r.Expiry = tok.Expiry.UTC()
	default:
		r.Expiry = time.Time{}
	}
	if s, ok := tok.Extra("scope").(string); ok {
		r.Scopes = strings.Fields(s)
	} else if requested != nil {
		r.Scopes = requested
	}
	if idt, ok := tok.Extra("id_token").(string); ok {
		if a := accountOf(idt); a != "" {
			r.Account = a
		}
	}
	r.ObtainedAt = now.UTC()
	r.NeedsLogin = ""
	return nil
}

// expiresIn is the answer's expires_in in seconds, 0 if absent. x/oauth2
// keeps it in ExpiresIn for some answers only (not for its
// client-credentials request builder, not for form-encoded answers), and
// computes Expiry from the wall clock; reading the raw value lets the
// expiry follow the Client's clock.
func expiresIn(tok *oauth2.Token) int64 {
	if tok.ExpiresIn > 0 {
		return tok.ExpiresIn
	}
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

// accountOf reads who signed in from an ID token's claims, for display.
// The token is not verified: nothing is decided on it.
func accountOf(idToken string) string {
	parts := strings.Split(idToken, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Email             string `json:"email"`
		PreferredUsername string `json:"preferred_username"`
		Sub               string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	for _, s := range []string{claims.Email, claims.PreferredUsername, claims.Sub} {
		if s != "" {
			return shorten(s)
		}
	}
	return ""
}

// revoke revokes one token (RFC 7009 §2.1) as cl.
func (c *Client) revoke(ctx context.Context, endpoint string, cl clientCreds, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	secret := c.secretFor(cl)
	if cl.AuthMethod != authBasic {
		form.Set("client_id", cl.ID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revocation: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cl.AuthMethod == authBasic {
		req.SetBasicAuth(url.QueryEscape(cl.ID), url.QueryEscape(secret))
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if na := noAnswer(endpoint, start, err); na != nil {
			return fmt.Errorf("revocation: %w", na)
		}
		return wrap("revocation", err, token, secret)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if resp.StatusCode != http.StatusOK {
		return oauthErrorFrom("revocation", resp.StatusCode, body, token, secret)
	}
	return nil
}
