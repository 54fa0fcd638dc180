package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Token endpoint client authentication methods (RFC 7591 §2).
const (
	authBasic = "client_secret_basic"
	authPost  = "client_secret_post"
	authNone  = "none"
)

// DefaultClientName is the client_name FreeCode registers under.
const DefaultClientName = "FreeCode"

// resolveClient picks the client to authorize as, in the MCP spec's order:
// the pre-registered client of the config; else FreeCode's Client ID
// Metadata Document, if the authorization server supports them and one is
// configured; else the client registered dynamically with this issuer
// before (stored per issuer); else a new dynamic registration (RFC 7591).
// redirectURI is the loopback callback; it is empty for the client
// credentials grant, which only a pre-registered client can use.
func (c *Client) resolveClient(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURI string, fresh bool) (clientCreds, error) {
	cfg := c.cfg
	if cfg.ClientID != "" {
		m, err := chooseAuthMethod(asm.TokenEndpointAuthMethodsSupported, cfg.ClientSecret != "")
		if err != nil {
			return clientCreds{}, fmt.Errorf("server %q: client %q: %w", c.name, cfg.ClientID, err)
		}
		return clientCreds{ID: cfg.ClientID, Secret: cfg.ClientSecret, AuthMethod: m, Kind: kindPreregistered}, nil
	}
	if c.grant == GrantClientCredentials {
		return clientCreds{}, fmt.Errorf("server %q: the client_credentials grant needs oauth.clientId and oauth.clientSecret", c.name)
	}
	if asm.ClientIDMetadataDocumentSupported && cfg.ClientMetadataURL != "" {
		return clientCreds{ID: cfg.ClientMetadataURL, AuthMethod: authNone, Kind: kindMetadataDocument}, nil
	}
	if asm.RegistrationEndpoint == "" {
		hint := "set oauth.clientId (and oauth.clientSecret) to a client registered with it"
		if asm.ClientIDMetadataDocumentSupported {
			hint += ", or oauth.clientMetadataUrl"
		}
		return clientCreds{}, fmt.Errorf("server %q: authorization server %s offers no dynamic client registration: %s",
			c.name, redactRawURL(asm.Issuer), hint)
	}

	// One registration per issuer at a time, across processes.
	unlock, err := c.store.lockClient(ctx, asm.Issuer, c.log)
	if err != nil {
		return clientCreds{}, err
	}
	defer unlock()
	if !fresh {
		stored, err := c.store.loadClient(asm.Issuer)
		if err != nil {
			return clientCreds{}, err
		}
		if stored != nil && (stored.SecretExpiresAt.IsZero() || stored.SecretExpiresAt.After(c.now())) {
			c.log.V(1).Info("reusing client registration", "issuer", asm.Issuer, "clientID", stored.ClientID)
			return stored.creds(), nil
		}
	}
	reg, err := c.register(ctx, asm, redirectURI)
	if err != nil {
		return clientCreds{}, err
	}
	if err := c.store.saveClient(reg); err != nil {
		return clientCreds{}, err
	}
	return reg.creds(), nil
}

// storedRedirectPort is the loopback port the issuer's stored
// registration was made with, or 0.
func (c *Client) storedRedirectPort(issuer string) int {
	stored, err := c.store.loadClient(issuer)
	if err != nil || stored == nil {
		return 0
	}
	for _, r := range stored.RedirectURIs {
		if p := loopbackPort(r); p != 0 {
			return p
		}
	}
	return 0
}

// forgetClient drops a stored dynamic registration the authorization
// server no longer accepts.
func (c *Client) forgetClient(issuer, clientID string) {
	unlock, err := c.store.lockClient(context.Background(), issuer, c.log)
	if err != nil {
		c.log.Info("cannot drop the stale client registration", "issuer", issuer, "err", err.Error())
		return
	}
	defer unlock()
	if stored, err := c.store.loadClient(issuer); err == nil && stored != nil && stored.ClientID == clientID {
		if err := c.store.removeClient(issuer); err != nil {
			c.log.Info("cannot drop the stale client registration", "issuer", issuer, "err", err.Error())
			return
		}
		c.log.V(1).Info("dropped a client registration the authorization server refused", "issuer", issuer, "clientID", clientID)
	}
}

// chooseAuthMethod picks a token endpoint authentication method among
// those the authorization server supports (RFC 8414: none listed means
// client_secret_basic). With a secret: client_secret_basic, then
// client_secret_post; without: none.
func chooseAuthMethod(supported []string, haveSecret bool) (string, error) {
	if !haveSecret {
		if len(supported) == 0 || slices.Contains(supported, authNone) {
			return authNone, nil
		}
		return "", fmt.Errorf("the authorization server needs client authentication (%s) and no oauth.clientSecret is set", strings.Join(supported, ", "))
	}
	if len(supported) == 0 || slices.Contains(supported, authBasic) {
		return authBasic, nil
	}
	if slices.Contains(supported, authPost) {
		return authPost, nil
	}
	if slices.Contains(supported, authNone) {
		return authNone, nil // a public client after all; the secret is not sent
	}
	return "", fmt.Errorf("the authorization server supports none of %s, %s, %s (it offers %s)", authBasic, authPost, authNone, strings.Join(supported, ", "))
}

// registrationAuthMethod is the method to ask for in a registration:
// none (a native app is a public client, RFC 8252 §8.4) where supported,
// else a secret method.
func registrationAuthMethod(supported []string) string {
	switch {
	case len(supported) == 0:
		return authBasic // RFC 7591's default; the AS said nothing
	case slices.Contains(supported, authNone):
		return authNone
	case slices.Contains(supported, authBasic):
		return authBasic
	case slices.Contains(supported, authPost):
		return authPost
	}
	return authNone
}

// register performs dynamic client registration (RFC 7591) for a native
// application with a loopback redirect.
func (c *Client) register(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURI string) (*clientRecord, error) {
	method := registrationAuthMethod(asm.TokenEndpointAuthMethodsSupported)
	meta := oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{redirectURI},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              c.clientName,
		ApplicationType:         "native",
	}
	body, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("client registration: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client registration: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if na := noAnswer(asm.RegistrationEndpoint, start, err); na != nil {
			return nil, fmt.Errorf("client registration: %w", na)
		}
		return nil, wrap("client registration", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return nil, wrap("client registration", err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil, oauthErrorFrom("client registration", resp.StatusCode, data)
	}
	var reg oauthex.ClientRegistrationResponse
	if err := json.Unmarshal(data, &reg); err != nil || reg.ClientID == "" {
		// The body would hold the secret: never quote it.
		return nil, fmt.Errorf("client registration: %s answered HTTP %d without a client_id", redactRawURL(asm.RegistrationEndpoint), resp.StatusCode)
	}
	got := reg.TokenEndpointAuthMethod
	switch {
	case got == "" && reg.ClientSecret != "" && method == authNone:
		got = authBasic
	case got == "" && reg.ClientSecret == "":
		got = authNone
	case got == "":
		got = method
	}
	if got != authNone && got != authBasic && got != authPost {
		return nil, fmt.Errorf("client registration: the authorization server assigned token_endpoint_auth_method %q, which FreeCode does not support", got)
	}
	c.log.V(1).Info("registered a client", "issuer", asm.Issuer, "clientID", reg.ClientID, "authMethod", got)
	return &clientRecord{
		Issuer:          asm.Issuer,
		ClientID:        reg.ClientID,
		ClientSecret:    reg.ClientSecret,
		AuthMethod:      got,
		RedirectURIs:    meta.RedirectURIs,
		RegisteredAt:    c.now().UTC(),
		SecretExpiresAt: reg.ClientSecretExpiresAt,
	}, nil
}

// oauthErrorFrom builds an OAuthError from an error answer's body (RFC
// 6749 §5.2 JSON, if it is that).
func oauthErrorFrom(op string, status int, body []byte, secrets ...string) *OAuthError {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &e)
	return &OAuthError{Op: op, Status: status, Code: shorten(scrub(e.Error, secrets...)), Description: shorten(scrub(e.Description, secrets...))}
}
