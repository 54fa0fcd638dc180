package auth

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/freecode/freecode/internal/termtext"
	"golang.org/x/oauth2"
)

// CallbackPath is the path of the loopback redirect URI,
// http://127.0.0.1:<port>/callback.
const CallbackPath = "/callback"

// BrowserPathPrefix begins the path of the one-shot address handed to the
// browser, http://127.0.0.1:<port>/signin/<random>, which redirects to the
// authorization URL (see Interaction.Open).
const BrowserPathPrefix = "/signin/"

// Interaction is how an authorization reaches the user. Out is required:
// the authorization URL is always printed there, whatever else happens.
type Interaction struct {
	// Out receives the authorization URL and the prompts.
	Out io.Writer
	// Open, if set, opens a URL in a browser (the conformance client:
	// a GET that follows redirects). It is not the authorization URL but a
	// one-shot address on the callback listener that redirects to it
	// (http://127.0.0.1:<port>/signin/<random>): a browser's command line
	// is readable by every user of the machine, and the authorization
	// URL's state and PKCE challenge would let one of them sign the user
	// in to an account of theirs. A second request for that address ends
	// the sign-in with ErrBrowserLinkReused. Open runs while the callback
	// listener waits; its error is reported and the wait goes on, since
	// the user can still open the printed URL.
	Open func(ctx context.Context, browserURL string) error
	// Paste, if set, is read for the URL the browser was redirected to,
	// for when the browser cannot reach the loopback listener (it runs on
	// another machine). A reader with SetReadDeadline (an *os.File such as
	// os.Stdin) is stopped when the wait ends; any other reader is left
	// to its next line or EOF.
	Paste io.Reader
	// Reregister registers a new client even if one is stored for the
	// issuer (for an authorization server that forgot FreeCode's
	// registration and says so only on an error page).
	Reregister bool
}

// lockedWriter serializes writes to an Interaction's Out.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// callbackResult is what the redirect (or a pasted URL) brought.
type callbackResult struct {
	code, iss string
	err       error
}

// authorizeCode runs one authorization code flow with PKCE (RFC 6749
// §4.1, RFC 7636 S256, RFC 8707 resource, RFC 9207 iss) through a
// loopback redirect (RFC 8252 §7.3) and returns the new tokens. It waits
// until the redirect arrives, a valid URL is pasted, or ctx ends; the
// listener and every goroutine it started are gone when it returns.
func (c *Client) authorizeCode(ctx context.Context, d *discovery, scopes []string, in *Interaction) (*record, error) {
	asm := d.asm
	if asm.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("server %q: authorization server %s has no authorization_endpoint", c.name, redactRawURL(asm.Issuer))
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		// MCP authorization: a client must refuse to proceed without PKCE.
		return nil, fmt.Errorf("server %q: authorization server %s does not advertise PKCE S256 (code_challenge_methods_supported); FreeCode will not sign in without it", c.name, redactRawURL(asm.Issuer))
	}
	out := &lockedWriter{w: in.Out} // the opener's and the paste reader's goroutines write too
	fresh := in.Reregister
	for attempt := 0; ; attempt++ {
		rec, err := c.authorizeOnce(ctx, d, scopes, in, out, fresh)
		var oe *OAuthError
		if attempt == 0 && errors.As(err, &oe) && (oe.Code == CodeInvalidClient || oe.Code == CodeUnauthorized) && c.cfg.ClientID == "" {
			// A stored registration the server no longer knows: register
			// again and ask once more.
			fmt.Fprintf(out, "The authorization server refused FreeCode's client registration (%s); registering again.\n", termtext.Neutralize(oe.Code))
			fresh = true
			continue
		}
		return rec, err
	}
}

func (c *Client) authorizeOnce(ctx context.Context, d *discovery, scopes []string, in *Interaction, out io.Writer, fresh bool) (*record, error) {
	asm := d.asm
	ln, err := c.listen(asm.Issuer, fresh)
	if err != nil {
		return nil, err
	}
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d%s", ln.Addr().(*net.TCPAddr).Port, CallbackPath)
	cl, err := c.resolveClient(ctx, asm, redirectURI, fresh)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}

	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	cfg := c.codeConfig(asm.TokenEndpoint, asm.AuthorizationEndpoint, cl, redirectURI, scopes)
	authURL := cfg.AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", d.resource))

	res, err := c.waitForCallback(ctx, ln, authURL, state, in, out)
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		if oe := (*OAuthError)(nil); errors.As(res.err, &oe) && cl.Kind == kindDynamic && (oe.Code == CodeInvalidClient || oe.Code == CodeUnauthorized) {
			c.forgetClient(asm.Issuer, cl.ID)
		}
		return nil, fmt.Errorf("server %q: %w", c.name, res.err)
	}
	if err := checkIss(res.iss, asm); err != nil {
		return nil, fmt.Errorf("server %q: %w", c.name, err)
	}
	tok, err := c.exchange(ctx, cfg, res.code, verifier, d.resource)
	if err != nil {
		var oe *OAuthError
		if errors.As(err, &oe) && oe.Code == CodeInvalidClient && cl.Kind == kindDynamic {
			c.forgetClient(asm.Issuer, cl.ID)
		}
		return nil, fmt.Errorf("server %q: %w", c.name, err)
	}
	rec := c.newRecord(d, cl, GrantAuthorizationCode)
	if err := c.fill(rec, tok, scopes); err != nil {
		return nil, fmt.Errorf("server %q: %w", c.name, err)
	}
	return rec, nil
}

// checkIss applies RFC 9207: an iss that is present must equal the
// issuer (simple string comparison), whether or not the server advertises
// authorization_response_iss_parameter_supported — a match proves what the
// check is for, that the answer comes from the server the request went to.
// An absent iss is refused only when the server advertises sending it.
func checkIss(iss string, asm *oauthex.AuthServerMeta) error {
	if iss == "" {
		if asm.AuthorizationResponseIssParameterSupported {
			return fmt.Errorf("the authorization response has no iss though %s advertises it (RFC 9207): possible mix-up attack, sign-in refused", redactRawURL(asm.Issuer))
		}
		return nil
	}
	if iss != asm.Issuer {
		return fmt.Errorf("the authorization response comes from issuer %q, not %q (RFC 9207): possible mix-up attack, sign-in refused", shorten(iss), asm.Issuer)
	}
	return nil
}

// listen opens the loopback redirect listener on 127.0.0.1: the
// configured callbackPort; else the port of the issuer's stored
// registration, if it is free (an authorization server that matches
// redirect URIs exactly, against RFC 8252 §7.3, keeps working); else any.
func (c *Client) listen(issuer string, fresh bool) (net.Listener, error) {
	if p := c.cfg.CallbackPort; p != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return nil, fmt.Errorf("server %q: oauth.callbackPort %d: %w", c.name, p, err)
		}
		return ln, nil
	}
	if !fresh {
		if p := c.storedRedirectPort(issuer); p != 0 {
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("server %q: open the sign-in callback listener: %w", c.name, err)
	}
	return ln, nil
}

func loopbackPort(redirectURI string) int {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return 0
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// waitForCallback serves the redirect on ln, prints authURL, opens it and
// reads pasted URLs, until a result with the right state arrives or ctx
// ends. A request with another state (a stale tab, a forged request) is
// answered 400 and the wait goes on. ln is closed, and the goroutines
// started here have ended, when it returns.
func (c *Client) waitForCallback(ctx context.Context, ln net.Listener, authURL, state string, in *Interaction, out io.Writer) (callbackResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan callbackResult, 1)
	deliver := func(r callbackResult) {
		select {
		case results <- r:
		default: // the first answer wins
		}
	}
	browserURL, browserPath := "", ""
	if in.Open != nil {
		browserPath = BrowserPathPrefix + rand.Text()
		browserURL = "http://" + ln.Addr().String() + browserPath
	}
	srv := &http.Server{
		Handler:           c.callbackHandler(state, deliver, browserPath, authURL),
		ReadHeaderTimeout: 10 * time.Second,
	}
	var wg sync.WaitGroup
	var over atomic.Bool // the wait has ended: later errors are moot
	stopPaste := func() {}
	defer func() {
		over.Store(true)
		stopPaste()
		// Let the page of the redirect reach the browser, then close.
		sctx, scancel := context.WithTimeout(context.Background(), callbackGrace)
		_ = srv.Shutdown(sctx)
		scancel()
		_ = srv.Close()
		cancel()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln) // ends with Shutdown/Close above
	}()

	// The URL is the authorization server's to choose: what a terminal
	// would act on (bidi overrides, C1 controls) is shown escaped.
	fmt.Fprintf(out, "To sign in to %s, open this URL in a browser:\n\n  %s\n\n", c.name, termtext.Neutralize(authURL))
	if in.Open != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.Open(ctx, browserURL); err != nil && !over.Load() {
				msg := scrub(err.Error())
				c.log.V(1).Info("could not open the authorization URL", "err", msg)
				fmt.Fprintf(out, "Could not open a browser (%s); open the URL above yourself.\n", msg)
			}
		}()
	}
	if in.Paste != nil {
		fmt.Fprintf(out, "Waiting for the browser. If it cannot reach this machine, paste the address it ended on here.\n")
		stopPaste = c.readPasted(in.Paste, state, deliver, out, &wg)
	} else {
		fmt.Fprintf(out, "Waiting for the browser…\n")
	}

	select {
	case r := <-results:
		return r, nil
	case <-ctx.Done():
		return callbackResult{}, fmt.Errorf("server %q: %w: %w", c.name, ErrNoBrowserAnswer, context.Cause(ctx))
	}
}

// callbackGrace bounds how long the listener waits for the redirect's
// page to be delivered once the flow has its answer.
const callbackGrace = 2 * time.Second

// callbackHandler answers the redirect: only the request that carries the
// state of this flow counts. It also serves browserPath, if set, once: a
// redirect to authURL; a second request for it ends the flow.
func (c *Client) callbackHandler(state string, deliver func(callbackResult), browserPath, authURL string) http.Handler {
	var used atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if browserPath != "" && r.URL.Path == browserPath {
			if used.Swap(true) {
				page(w, http.StatusGone, "This sign-in link was already used, so someone else may have it. FreeCode stopped the sign-in; start it again.")
				deliver(callbackResult{err: fmt.Errorf("%w: someone else on this machine may have read it and the sign-in's state with it; nothing was stored, sign in again", ErrBrowserLinkReused)})
				return
			}
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			http.Redirect(w, r, authURL, http.StatusFound)
			return
		}
		if r.URL.Path != CallbackPath {
			http.NotFound(w, r)
			return
		}
		res, ok := parseCallback(r.URL.Query(), state)
		if !ok {
			page(w, http.StatusBadRequest, "This sign-in link is not the one FreeCode is waiting for. Start the sign-in again.")
			return
		}
		if res.err != nil {
			page(w, http.StatusOK, "Sign-in to "+c.name+" failed: "+res.err.Error()+". You can close this window.")
		} else {
			page(w, http.StatusOK, "Signed in to "+c.name+". You can close this window.")
		}
		deliver(res)
	})
}

func page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>FreeCode</title><p>%s</p>\n", html.EscapeString(msg))
}

// parseCallback reads an authorization response (RFC 6749 §4.1.2). ok is
// false when it does not carry state.
func parseCallback(q url.Values, state string) (callbackResult, bool) {
	if q.Get("state") != state {
		return callbackResult{}, false
	}
	res := callbackResult{code: q.Get("code"), iss: q.Get("iss")}
	if e := q.Get("error"); e != "" {
		res.err = &OAuthError{Op: "authorization", Code: shorten(e), Description: shorten(q.Get("error_description"))}
	} else if res.code == "" {
		res.err = errors.New("authorization: the redirect carries no code")
	}
	return res, true
}

// readPasted reads lines from r until one is the redirected URL of this
// flow. The returned stop ends the reader if r can be given a deadline
// (the goroutine is counted in wg then); any other reader's goroutine ends
// at its next line or EOF.
func (c *Client) readPasted(r io.Reader, state string, deliver func(callbackResult), out io.Writer, wg *sync.WaitGroup) (stop func()) {
	type deadliner interface{ SetReadDeadline(time.Time) error }
	dl, canStop := r.(deadliner)
	if canStop && dl.SetReadDeadline(time.Time{}) != nil {
		canStop = false // not pollable (a regular file, a blocking tty)
	}
	if canStop {
		wg.Add(1)
	}
	var done atomic.Bool
	// mu orders the deadline changes: stop sets one only while the reader
	// runs, and the reader clears it when it ends, so r is left without a
	// deadline for whoever reads it next.
	var mu sync.Mutex
	exited := false
	go func() {
		if canStop {
			defer wg.Done()
			defer func() {
				mu.Lock()
				exited = true
				_ = dl.SetReadDeadline(time.Time{})
				mu.Unlock()
			}()
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			if done.Load() {
				return
			}
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			q, ok := pastedQuery(line)
			if !ok {
				fmt.Fprintln(out, "That is not the address the browser ended on (it starts with http://127.0.0.1 and carries code= and state=). Try again.")
				continue
			}
			res, ok := parseCallback(q, state)
			if !ok {
				fmt.Fprintln(out, "That address belongs to another sign-in attempt. Paste the one from this attempt.")
				continue
			}
			deliver(res)
			return
		}
	}()
	return func() {
		done.Store(true)
		if canStop {
			mu.Lock()
			if !exited {
				_ = dl.SetReadDeadline(time.Now())
			}
			mu.Unlock()
		}
	}
}

// pastedQuery takes a full redirect URL or just its query.
func pastedQuery(line string) (url.Values, bool) {
	if u, err := url.Parse(line); err == nil && u.RawQuery != "" {
		q := u.Query()
		return q, q.Get("state") != ""
	}
	q, err := url.ParseQuery(strings.TrimPrefix(line, "?"))
	if err != nil {
		return nil, false
	}
	return q, q.Get("state") != ""
}
