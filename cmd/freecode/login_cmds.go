package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
	"github.com/freecode/freecode/wire"
)

// tokenStore is the home's token store (serve.TokenDir). Commands that
// connect create it (0700); commands that only show the state pass
// create false and get nil while there is none, so that reading the
// status writes nothing.
func (a *app) tokenStore(create bool) (*auth.Store, error) {
	home, err := a.home()
	if err != nil {
		return nil, err
	}
	dir := serve.TokenDir(home)
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	return auth.OpenStore(dir)
}

// signInOf is s's stored sign-in for display, nil for a server that does
// not sign in; it writes nothing.
func (a *app) signInOf(s schema.Server) *wire.SignIn {
	if !s.SignsIn() {
		return nil
	}
	store, err := a.tokenStore(false)
	if err != nil {
		return &wire.SignIn{State: wire.SignInNeedsLogin, Reason: err.Error()}
	}
	if store == nil {
		return &wire.SignIn{State: wire.SignInNone}
	}
	return serve.SignIn(store, s)
}

// signingIn is the sign-in of the configured server name, or why it has
// none (a local server, a static Authorization header).
func (a *app) signingIn(name string) (schema.Server, *mcp.SignIn, error) {
	_, srv, err := a.configuredServer(name)
	if err != nil {
		return srv, nil, err
	}
	if srv.Type != schema.Remote {
		return srv, nil, fmt.Errorf("server %q is a local server; only remote servers sign in", name)
	}
	if k, static := srv.AuthorizationHeader(); static {
		return srv, nil, fmt.Errorf("server %q sends a static token (headers.%s); remove that header to sign in with OAuth", name, k)
	}
	if !srv.Enabled {
		// A disabled server's ${VAR}s are not expanded: its URL and client
		// secret are not what it would use.
		return srv, nil, fmt.Errorf("server %q is disabled; run `freecode mcp enable %s` first, then sign in", name, name)
	}
	store, err := a.tokenStore(true)
	if err != nil {
		return srv, nil, err
	}
	si, err := mcp.NewSignIn(controller.MCPSpec(srv), mcp.Options{Tokens: store, Logger: logr.Discard()})
	return srv, si, err
}

func (a *app) loginCmd() *cobra.Command {
	var noBrowser bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "login <name>",
		Short: "Sign in to a remote server (OAuth): opens the browser, stores the tokens",
		Long: `Sign in to a remote server with OAuth 2.1: discover its authorization server,
register FreeCode with it if needed, print the authorization URL (and open it in
a browser when one is available), wait for the redirect to a listener on
127.0.0.1, and store the tokens in $FREECODE_HOME/auth. A running freecode serve
connects the server as soon as the tokens are there.

Without a browser on this machine (--no-browser, or over ssh), open the URL
anywhere; if the browser cannot reach this machine's 127.0.0.1, paste the
address it ended on here. The wait is bounded by --timeout; Ctrl-C ends it.
A server with oauth.grant "client_credentials" signs in without a browser.`,
		Args: exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			_, si, err := a.signingIn(name)
			if err != nil {
				return err
			}
			defer si.Close()
			in := auth.Interaction{Out: a.stdout, Paste: a.stdin}
			if !noBrowser {
				in.Open = browserOpener(a.getenv)
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			res, err := si.Login(ctx, in)
			if err != nil {
				if c.Context().Err() != nil {
					return fmt.Errorf("sign-in to %q interrupted; nothing was stored", name)
				}
				if errors.Is(err, auth.ErrNoBrowserAnswer) && errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("sign-in to %q: no answer from the browser within %s; nothing was stored (run `freecode mcp login %s` again, or raise --timeout)", name, timeout, name)
				}
				return err
			}
			a.audit(c.Context(), audit.Record{Kind: audit.KindSignIn, Server: name, Issuer: res.Issuer, Status: audit.StatusOK})
			fmt.Fprintln(a.stdout, signedInLine(res))
			if a.serveRunning() {
				fmt.Fprintf(a.stdout, "freecode serve connects %q now; see `freecode mcp status`.\n", name)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "do not open a browser; only print the URL")
	c.Flags().DurationVar(&timeout, "timeout", auth.DefaultLoginTimeout, "how long to wait for the browser")
	return c
}

// signedInLine is "Signed in to <name> (<issuer>), scopes …".
func signedInLine(res *auth.LoginResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Signed in to %s (%s)", res.Server, termtext.Neutralize(res.Issuer))
	if res.Account != "" {
		fmt.Fprintf(&b, " as %s", termtext.Neutralize(res.Account))
	}
	if len(res.Scopes) > 0 {
		fmt.Fprintf(&b, ", scopes %s", termtext.Neutralize(strings.Join(res.Scopes, " ")))
	} else {
		b.WriteString(", no scopes")
	}
	switch {
	case res.Refreshable:
		b.WriteString("; FreeCode renews the token by itself")
	case !res.Expiry.IsZero():
		fmt.Fprintf(&b, "; until %s (then sign in again)", res.Expiry.Local().Format(time.DateTime))
	}
	return b.String() + "."
}

func (a *app) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout <name>",
		Short: "Delete a remote server's stored tokens (and revoke them where the server offers it)",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			_, si, err := a.signingIn(name)
			if err != nil {
				return err
			}
			defer si.Close()
			ctx, cancel := context.WithTimeout(c.Context(), auth.DefaultHTTPTimeout)
			defer cancel()
			res, err := si.Logout(ctx)
			if err != nil {
				return err
			}
			if res.Removed {
				a.audit(c.Context(), audit.Record{Kind: audit.KindSignOut, Server: name, Status: audit.StatusOK})
			}
			switch {
			case !res.Removed:
				fmt.Fprintf(a.stdout, "Not signed in to %s; nothing to delete.\n", name)
			case res.Revoked:
				fmt.Fprintf(a.stdout, "Signed out of %s: the tokens are deleted and revoked.\n", name)
			case res.RevokeErr != nil:
				fmt.Fprintf(a.stdout, "Signed out of %s: the tokens are deleted.\n", name)
				fmt.Fprintf(a.stderr, "warning: revoking them failed: %s\n", termtext.Neutralize(res.RevokeErr.Error()))
			default:
				fmt.Fprintf(a.stdout, "Signed out of %s: the tokens are deleted (the authorization server offers no revocation).\n", name)
			}
			return nil
		},
	}
}

// browserOpener opens a URL in the user's browser: $BROWSER (a list
// separated by ":", each a command, "%s" standing for the URL), else
// `open` on macOS, else `xdg-open` when a display is there. It fails
// when none is available; the URL is printed anyway. The command runs
// until it returns or ctx ends (a browser that xdg-open starts outlives
// it, as it should). The URL it gets is login's one-shot local address
// (see auth.Interaction.Open), never the authorization URL: a command
// line is readable by every user of the machine.
func browserOpener(getenv func(string) string) func(ctx context.Context, browserURL string) error {
	return func(ctx context.Context, browserURL string) error {
		var cmds [][]string
		for _, b := range strings.Split(getenv("BROWSER"), ":") {
			if f := strings.Fields(b); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
		switch {
		case runtime.GOOS == "darwin":
			cmds = append(cmds, []string{"open"})
		case getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "":
			cmds = append(cmds, []string{"xdg-open"})
		}
		if len(cmds) == 0 {
			return errors.New("no browser here: set $BROWSER, or open the URL on any machine")
		}
		var errs []error
		for _, argv := range cmds {
			argv = withURL(argv, browserURL)
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			err := cmd.Run()
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", argv[0], err))
		}
		return errors.Join(errs...)
	}
}

// withURL puts u in place of "%s" in argv, or after it.
func withURL(argv []string, u string) []string {
	out := make([]string, 0, len(argv)+1)
	replaced := false
	for _, a := range argv {
		if strings.Contains(a, "%s") {
			a, replaced = strings.ReplaceAll(a, "%s", u), true
		}
		out = append(out, a)
	}
	if !replaced {
		out = append(out, u)
	}
	return out
}

// signInText is a server's sign-in for `get` and `status`: who, until
// when, or what to do. It never holds a token.
func signInText(name string, si *wire.SignIn) string {
	switch si.State {
	case wire.SignInSignedIn:
		var b strings.Builder
		b.WriteString("signed in")
		if si.Account != "" {
			b.WriteString(" as " + si.Account)
		}
		if si.Issuer != "" {
			b.WriteString(" (" + si.Issuer + ")")
		}
		if len(si.Scopes) > 0 {
			b.WriteString(", scopes " + strings.Join(si.Scopes, " "))
		}
		switch {
		case si.Grant == string(schema.GrantClientCredentials):
			b.WriteString("; client credentials, renewed by FreeCode")
		case si.Refreshable:
			b.WriteString("; renewed by FreeCode")
			if !si.Expiry.IsZero() {
				b.WriteString(" (token until " + si.Expiry.Local().Format(time.DateTime) + ")")
			}
		case !si.Expiry.IsZero():
			b.WriteString("; until " + si.Expiry.Local().Format(time.DateTime))
		}
		return termtext.Neutralize(b.String())
	case wire.SignInNeedsLogin:
		msg := "needs sign-in"
		if si.Reason != "" {
			msg += " (" + si.Reason + ")"
		}
		return termtext.Neutralize(msg) + ": " + loginRemedy(name)
	}
	return "not signed in"
}
