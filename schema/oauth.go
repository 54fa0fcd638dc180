package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// OAuthGrant is the OAuth grant a remote server's tokens come from.
type OAuthGrant string

const (
	// GrantAuthorizationCode: a user signs in through a browser
	// (`freecode mcp login`); the default.
	GrantAuthorizationCode OAuthGrant = "authorization_code"
	// GrantClientCredentials: a headless client with its own
	// pre-registered credentials.
	GrantClientCredentials OAuthGrant = "client_credentials"
)

// OAuth is a remote server's "oauth" object: how FreeCode signs in to it.
// A remote server without one (and without an Authorization header) is
// still signed in to when it asks, with what discovery finds.
type OAuth struct {
	// ClientID and ClientSecret are a client registered in advance with
	// the server's authorization server; both are expanded like headers.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is a secret: never shown unless asked for, never
	// serialized.
	ClientSecret string `json:"-"`
	// Scopes replace the discovered ones.
	Scopes []string `json:"scopes,omitempty"`
	// Grant is GrantAuthorizationCode unless the file says otherwise.
	Grant OAuthGrant `json:"grant,omitempty"`
	// CallbackPort is the loopback port of the sign-in redirect; 0 is any
	// free port.
	CallbackPort int `json:"callbackPort,omitempty"`
	// ClientMetadataURL is the https URL of FreeCode's Client ID Metadata
	// Document.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
}

// oauthSpec is what SpecHash covers of an oauth object: all of it, the
// secret included (as it covers header values).
type oauthSpec struct {
	ClientID, ClientSecret string
	Scopes                 []string
	Grant                  OAuthGrant
	CallbackPort           int
	ClientMetadataURL      string
}

func (o *OAuth) spec() *oauthSpec {
	if o == nil {
		return nil
	}
	return &oauthSpec{o.ClientID, o.ClientSecret, o.Scopes, o.Grant, o.CallbackPort, o.ClientMetadataURL}
}

// rawOAuth is the "oauth" object as the file has it.
type rawOAuth struct {
	ClientID          string     `json:"clientId"`
	ClientSecret      string     `json:"clientSecret"`
	Scopes            []string   `json:"scopes"`
	Grant             OAuthGrant `json:"grant"`
	CallbackPort      int        `json:"callbackPort"`
	ClientMetadataURL string     `json:"clientMetadataUrl"`
}

// resolve applies the defaults; nil stays nil (no oauth object).
func (r *rawOAuth) resolve() *OAuth {
	if r == nil {
		return nil
	}
	o := &OAuth{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes, Grant: r.Grant,
		CallbackPort: r.CallbackPort, ClientMetadataURL: r.ClientMetadataURL}
	if o.Grant == "" {
		o.Grant = GrantAuthorizationCode
	}
	return o
}

// HeaderAuthorization is the header whose presence means a remote server
// takes a static token: FreeCode then does not sign in to it with OAuth.
// Header names are matched without regard to case.
const HeaderAuthorization = "Authorization"

// AuthorizationHeader returns the key of s's Authorization header, as the
// file spells it, and whether it has one.
func (s Server) AuthorizationHeader() (string, bool) {
	for k := range s.Headers {
		if strings.EqualFold(k, HeaderAuthorization) {
			return k, true
		}
	}
	return "", false
}

// SignsIn reports whether FreeCode signs in to s with OAuth when it asks:
// a remote server that sends no Authorization header of its own.
func (s Server) SignsIn() bool {
	_, static := s.AuthorizationHeader()
	return s.Type == Remote && !static
}

// oauthChecks reports what config.cue does not say about the oauth
// object of s, the file's server i, positioned at the object:
//
//   - an oauth object beside an Authorization header: FreeCode would not
//     know which credentials to send. Any other header may go with oauth
//     (a tenant or API version header, say). Header names are matched
//     without regard to case, which config.cue cannot do;
//   - a clientSecret without its clientId, and the client_credentials
//     grant without both (a comprehension saying so in config.cue would
//     make CUE v0.17 accept an oauth value that is not an object).
//
// It looks at the values after ${VAR} expansion: a variable that expands
// to nothing leaves the field empty. The errors are the server's own (an
// invalid server, held alone; see Parse).
func oauthChecks(file string, lines *lineIndex, root *node, i int, s Server) Errors {
	if s.OAuth == nil {
		return nil
	}
	var errs Errors
	add := func(msg string) {
		e := &Error{File: file, Path: []string{"mcp", "servers", strconv.Itoa(i), "oauth"}, Msg: msg}
		locate(e, lines, root)
		errs = append(errs, e)
	}
	if k, static := s.AuthorizationHeader(); static {
		add(fmt.Sprintf("oauth and the header %q are both set: remove headers.%s to sign in with OAuth (`freecode mcp login %s`), or the oauth object to send that static token", k, k, s.Name))
	}
	switch {
	case s.OAuth.Grant == GrantClientCredentials && (s.OAuth.ClientID == "" || s.OAuth.ClientSecret == ""):
		add(`oauth.grant "client_credentials" needs oauth.clientId and oauth.clientSecret (a client registered in advance with the server's authorization server)`)
	case s.OAuth.ClientSecret != "" && s.OAuth.ClientID == "":
		add("oauth.clientSecret needs oauth.clientId: a secret belongs to a client registered in advance; set its id too")
	}
	return errs
}

// oauthField reports whether path points into a server's "oauth" object,
// the field of it the path names ("" for the object itself), and the path
// up to that field.
func oauthField(path []string) (name string, fieldPath []string, ok bool) {
	if len(path) < 4 || path[0] != "mcp" || path[1] != "servers" || path[3] != "oauth" {
		return "", nil, false
	}
	if len(path) == 4 {
		return "", path, true
	}
	return path[4], path[:5], true
}

// oauthFields are the keys of an "oauth" object.
var oauthFields = []string{"clientId", "clientSecret", "scopes", "grant", "callbackPort", "clientMetadataUrl"}

// oauthMessage explains what a field of an "oauth" object must be ("":
// the object itself).
func oauthMessage(name string) string {
	switch name {
	case "clientId", "clientSecret":
		return "oauth." + name + " must be a non-empty string (normally a ${VAR} reference)"
	case "scopes":
		return `oauth.scopes must be a list of scope tokens: printable ASCII without spaces, quotes or backslashes ("mcp:tools")`
	case "grant":
		return fmt.Sprintf("oauth.grant must be %q (a user signs in in a browser, the default) or %q (headless, with oauth.clientId and oauth.clientSecret)", GrantAuthorizationCode, GrantClientCredentials)
	case "callbackPort":
		return "oauth.callbackPort must be a port from 1024 to 65535 (leave it out for any free port)"
	case "clientMetadataUrl":
		return "oauth.clientMetadataUrl must be an https:// URL with a path (the Client ID Metadata Document), without a fragment"
	}
	return `oauth must be an object with any of "` + strings.Join(oauthFields, `", "`) + `"`
}
