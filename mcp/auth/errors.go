package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"
)

// Sentinels callers branch on with errors.Is.
var (
	// ErrNeedsLogin means the server needs a user to sign in: no usable
	// credentials are stored (none yet, or the authorization server refused
	// the refresh token) and no interactive authorization is configured. The
	// error that carries it says "run `freecode mcp login <name>`".
	ErrNeedsLogin = errors.New("needs sign-in")

	// ErrInsufficientScope means the server kept answering 403
	// insufficient_scope after MaxStepUps re-authorizations.
	ErrInsufficientScope = errors.New("insufficient scope")

	// ErrNotProtected means Login found a server that does not ask for
	// authorization and publishes no authorization metadata.
	ErrNotProtected = errors.New("server does not ask for authorization")

	// ErrResourceMismatch means the protected resource metadata describes
	// another resource than the configured server URL; FreeCode refuses to
	// authorize against it (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("protected resource metadata is for another resource")

	// ErrEndpointRefused means a URL the server or its authorization
	// server named (metadata, an endpoint) points where FreeCode sends no
	// request: not https, on this machine for a server that is not, or a
	// link-local or cloud metadata address.
	ErrEndpointRefused = errors.New("endpoint refused")

	// ErrRedirectRefused means an authorization server or metadata
	// endpoint answered with a redirect FreeCode does not follow: any
	// redirect of a token, registration or revocation request, or of the
	// probe to another origin (a *RedirectError says which).
	ErrRedirectRefused = errors.New("redirect refused")

	// ErrNoAnswer means a request to an authorization server or metadata
	// endpoint got no answer in time (a *NoAnswerError names the URL).
	ErrNoAnswer = errors.New("no answer in time")

	// ErrNoBrowserAnswer means the authorization code flow ended (its
	// context did) before the browser brought the redirect back.
	ErrNoBrowserAnswer = errors.New("no answer from the browser")

	// ErrBrowserLinkReused means the one-shot address handed to the
	// browser was requested twice: someone else on this machine may have
	// read it (from the browser's command line) and with it the flow's
	// state, so the sign-in is abandoned.
	ErrBrowserLinkReused = errors.New("the sign-in link for the browser was opened twice")
)

// OAuth error codes FreeCode acts on (RFC 6749 §5.2, RFC 6750 §3.1).
const (
	CodeInvalidGrant      = "invalid_grant"
	CodeInvalidClient     = "invalid_client"
	CodeUnauthorized      = "unauthorized_client"
	CodeInsufficientScope = "insufficient_scope"
)

// LoginRequiredError is the error behind ErrNeedsLogin: it names the
// server, says why a sign-in is needed and what to run.
type LoginRequiredError struct {
	Server string
	Reason string // short, lower case: "no stored credentials", ...
	Err    error  // the cause, if any (e.g. the refused refresh); may be nil
	// StepUp: a 403 insufficient_scope is why (Reason names the scope
	// asked for); the stored sign-in still serves other requests.
	StepUp bool
}

func (e *LoginRequiredError) Error() string {
	msg := fmt.Sprintf("server %q needs sign-in", e.Server)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg + fmt.Sprintf(": run `freecode mcp login %s`", e.Server)
}

// Is makes errors.Is(err, ErrNeedsLogin) true.
func (e *LoginRequiredError) Is(target error) bool { return target == ErrNeedsLogin }

func (e *LoginRequiredError) Unwrap() error { return e.Err }

// OAuthError is an error answer of an authorization server: an HTTP error
// of the token, registration or revocation endpoint, or an error redirect
// of the authorization endpoint (Status 0). Description is the server's
// error_description, shortened and scrubbed of every secret FreeCode holds
// for the flow.
type OAuthError struct {
	Op          string // "token request", "refresh", "client registration", "authorization", "revocation"
	Status      int    // HTTP status; 0 for an authorization redirect
	Code        string // RFC 6749 error code, if the server sent one
	Description string
}

func (e *OAuthError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(": ")
	switch {
	case e.Code != "":
		b.WriteString("the authorization server answered " + e.Code)
		if e.Status != 0 {
			fmt.Fprintf(&b, " (HTTP %d)", e.Status)
		}
	case e.Status != 0:
		fmt.Fprintf(&b, "the authorization server answered HTTP %d", e.Status)
	default:
		b.WriteString("the authorization server refused")
	}
	if e.Description != "" {
		b.WriteString(": " + e.Description)
	}
	return b.String()
}

// scrubbedError carries a message already cleaned of secrets, and unwraps
// to the original error so that errors.Is (context.Canceled, net errors)
// keeps working. Its own text never includes the original's.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// wrap returns err with a lower-case context, its text scrubbed of the
// given secrets and of URL queries (authorization codes and states travel
// there). A nil err stays nil.
func wrap(context string, err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	var le *LoginRequiredError
	var oe *OAuthError
	if errors.As(err, &le) || errors.As(err, &oe) {
		// Already built from scrubbed parts.
		return fmt.Errorf("%s: %w", context, err)
	}
	var re *RedirectError
	if errors.As(err, &re) {
		// Built from redacted URLs; net/http's wrapping would only repeat
		// the target.
		return fmt.Errorf("%s: %w", context, re)
	}
	return &scrubbedError{msg: context + ": " + scrub(err.Error(), secrets...), err: err}
}

// maxDescription bounds an authorization server's error_description in
// our messages.
const maxDescription = 200

var (
	urlQuery    = regexp.MustCompile(`(?i)(https?://[^\s"'?#]*)\?[^\s"']*`)
	urlUserinfo = regexp.MustCompile(`(?i)(https?://)[^\s"'/?#@]*@`)
)

// scrub removes every non-empty secret from s, and the userinfo and query
// of every URL in it.
func scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 { // shorter values would shred ordinary words
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = urlUserinfo.ReplaceAllString(s, "$1")
	return urlQuery.ReplaceAllString(s, "$1?[redacted]")
}

func shorten(s string) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "?")
	if r := []rune(s); len(r) > maxDescription {
		s = string(r[:maxDescription]) + "…"
	}
	return s
}

// FlowError is an error of the authorization itself, from a request that
// [Client.Transport] authorizes: getting or renewing its token, or the
// recovery from a 401/403 (a request to an authorization server or a
// metadata endpoint that failed, or the flow's verdict, such as a
// *LoginRequiredError). It is not an error of the request to the server:
// a network error inside it says nothing about the server's connection.
// It unwraps to the error it carries.
type FlowError struct{ Err error }

func (e *FlowError) Error() string { return e.Err.Error() }
func (e *FlowError) Unwrap() error { return e.Err }

// flowError wraps err, if any, as a *FlowError (once).
func flowError(err error) error {
	var fe *FlowError
	if err == nil || errors.As(err, &fe) {
		return err
	}
	return &FlowError{Err: err}
}

// NoAnswerError is a request to an authorization server or metadata
// endpoint that timed out (the HTTP client's timeout, or the deadline of
// the sign-in). It matches ErrNoAnswer and unwraps to the HTTP error
// (so context.DeadlineExceeded matches too); its text is its own.
type NoAnswerError struct {
	URL    string // without userinfo, query and fragment
	Within time.Duration
	Err    error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("no answer from %s within %s", e.URL, e.Within)
}

// Is makes errors.Is(err, ErrNoAnswer) true.
func (e *NoAnswerError) Is(target error) bool { return target == ErrNoAnswer }

func (e *NoAnswerError) Unwrap() error { return e.Err }

// noAnswer is the *NoAnswerError for err, the failure of a request to
// rawURL sent at start, if err is a timeout; else nil.
func noAnswer(rawURL string, start time.Time, err error) error {
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		return nil
	}
	within := time.Since(start)
	if within >= time.Second {
		within = within.Round(time.Second)
	} else {
		within = within.Round(time.Millisecond)
	}
	return &NoAnswerError{URL: redactRawURL(rawURL), Within: within, Err: err}
}
