package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// Grant is the OAuth grant a server's tokens come from.
type Grant string

const (
	// GrantAuthorizationCode is a user signing in through a browser
	// (authorization code with PKCE); the default.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials is a headless client with its own
	// pre-registered credentials: no user, no browser (RFC 6749 §4.4).
	GrantClientCredentials Grant = "client_credentials"
)

// Config is one remote server's OAuth settings, as FreeCode's config
// `oauth` object holds them. The zero Config means "discover on 401 and
// register dynamically".
type Config struct {
	// ClientID of a client pre-registered with the server's authorization
	// server. Tried first; required for GrantClientCredentials.
	ClientID string
	// ClientSecret of that client, if it is confidential. A secret: it is
	// never printed, logged or serialized by this package.
	ClientSecret string
	// Scopes to request instead of the discovered ones (the challenge's
	// scope, else the protected resource's scopes_supported).
	Scopes []string
	// Grant is GrantAuthorizationCode (also when empty) or
	// GrantClientCredentials.
	Grant Grant
	// CallbackPort is the loopback port of the redirect listener; 0 picks
	// one (the port of a stored registration if it is free, else any).
	CallbackPort int
	// ClientMetadataURL is the https URL of FreeCode's Client ID Metadata
	// Document, used as client_id where the authorization server
	// advertises client_id_metadata_document_supported.
	ClientMetadataURL string
}

// grant is c.Grant with its default applied.
func (c Config) grant() Grant {
	if c.Grant == "" {
		return GrantAuthorizationCode
	}
	return c.Grant
}

// Validate reports every bad field, each named as in the config file
// (oauth.<field>).
func (c Config) Validate() error {
	var errs []error
	switch c.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if c.ClientID == "" || c.ClientSecret == "" {
			errs = append(errs, errors.New("oauth.grant: client_credentials needs oauth.clientId and oauth.clientSecret"))
		}
	default:
		errs = append(errs, fmt.Errorf("oauth.grant: %q is not %q or %q", c.Grant, GrantAuthorizationCode, GrantClientCredentials))
	}
	if c.ClientSecret != "" && c.ClientID == "" {
		errs = append(errs, errors.New("oauth.clientSecret: set oauth.clientId too (a secret belongs to a pre-registered client)"))
	}
	if c.CallbackPort < 0 || c.CallbackPort > 65535 {
		errs = append(errs, fmt.Errorf("oauth.callbackPort: %d is not a port (1-65535, or 0 for any free port)", c.CallbackPort))
	}
	for i, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			errs = append(errs, fmt.Errorf("oauth.scopes[%d]: %q is not a scope token (no spaces, quotes or backslashes)", i, s))
		}
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		switch {
		case err != nil || u.Scheme != "https" || u.Host == "":
			errs = append(errs, fmt.Errorf("oauth.clientMetadataUrl: %q is not an https URL", redactRawURL(c.ClientMetadataURL)))
		case u.Path == "" || u.Path == "/" || u.Fragment != "":
			errs = append(errs, fmt.Errorf("oauth.clientMetadataUrl: %q needs a path and no fragment (a client ID metadata document URL)", redactRawURL(c.ClientMetadataURL)))
		}
	}
	return errors.Join(errs...)
}

// String shows c without its secret.
func (c Config) String() string {
	return fmt.Sprintf("auth.Config{ClientID:%q ClientSecret:%s Scopes:%q Grant:%q CallbackPort:%d ClientMetadataURL:%q}",
		c.ClientID, redacted(c.ClientSecret), c.Scopes, c.Grant, c.CallbackPort, redactRawURL(c.ClientMetadataURL))
}

// GoString is String, so that %#v hides the secret too.
func (c Config) GoString() string { return c.String() }

// LogValue is c for log/slog, without its secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalLog is c for logr, without its secret.
func (c Config) MarshalLog() any { return c.String() }

// MarshalJSON writes c without its secret: Config is not meant to be
// serialized, and a secret must not leak if it is.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ClientID          string   `json:"clientId,omitempty"`
		ClientSecret      string   `json:"clientSecret,omitempty"`
		Scopes            []string `json:"scopes,omitempty"`
		Grant             Grant    `json:"grant,omitempty"`
		CallbackPort      int      `json:"callbackPort,omitempty"`
		ClientMetadataURL string   `json:"clientMetadataUrl,omitempty"`
	}{c.ClientID, redactedOrEmpty(c.ClientSecret), c.Scopes, c.Grant, c.CallbackPort, redactRawURL(c.ClientMetadataURL)})
}

// redacted shows whether a secret is set, never its value.
func redacted(secret string) string {
	if secret == "" {
		return `""`
	}
	return "[redacted]"
}

func redactedOrEmpty(secret string) string {
	if secret == "" {
		return ""
	}
	return "[redacted]"
}

// redactURL drops userinfo, query and fragment from a URL shown to people.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// redactRawURL is redactURL for a URL string that may not parse.
func redactRawURL(raw string) string {
	if raw == "" {
		return ""
	}
	if u, err := url.Parse(raw); err == nil {
		return redactURL(u)
	}
	s, _, _ := strings.Cut(raw, "?")
	s, _, _ = strings.Cut(s, "#")
	if i := strings.Index(s, "://"); i >= 0 {
		start := i + len("://")
		end := len(s)
		if j := strings.IndexByte(s[start:], '/'); j >= 0 {
			end = start + j
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			s = s[:start] + s[start+at+1:]
		}
	}
	return s
}
