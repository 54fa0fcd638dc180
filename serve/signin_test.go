package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// protected is the Go test server's streamable HTTP endpoint behind an
// OAuth authorization server and protected resource.
func protected(t *testing.T, opts testauth.Options) *testauth.Server {
	ts, err := testserver.New(testserver.Config{Name: "protected"})
	require.NoError(t, err)
	h, closeSessions := ts.StreamableHandler()
	t.Cleanup(func() {
		closeSessions(context.Background())
		_ = ts.Close()
	})
	opts.Handler = h
	return testauth.New(t, opts)
}

func remoteServer(name, url string) map[string]any {
	return map[string]any{"name": name, "type": "remote", "url": url, "transport": "streamable-http"}
}

// login signs in to the server name at url as `freecode mcp login` does
// from another terminal: into the home's token store, with a browser that
// approves.
func login(t *testing.T, home, name, url string) *auth.LoginResult {
	t.Helper()
	store, err := auth.OpenStore(TokenDir(home))
	require.NoError(t, err)
	si, err := mcp.NewSignIn(controller.MCPSpec(schema.MCP{}.Resolve(schema.Server{Name: name, Type: schema.Remote, URL: url})), mcp.Options{Tokens: store})
	require.NoError(t, err)
	defer si.Close()
	res, err := si.Login(context.Background(), auth.Interaction{Out: io.Discard, Open: testauth.Follow})
	require.NoError(t, err)
	return res
}

func echo(t *testing.T, d *daemon, server, text string) (api.CallResponse, error) {
	return d.Client.Call(t.Context(), "mcp__"+server+"__echo", json.RawMessage(`{"text":"`+text+`"}`))
}

func requireEcho(t *testing.T, d *daemon, server, text string) {
	t.Helper()
	res, err := echo(t, d, server, text)
	require.NoError(t, err)
	require.NotEmpty(t, res.Result.Content)
	assert.Contains(t, res.Result.Content[0].Text, text)
}

// TestRunSignIn runs serve with OAuth-protected remote servers: each
// waits in needs-login (no round of 401s), connects once a sign-in lands
// in the store from elsewhere — noticed by the store's file events, the
// poll being an hour away — and then renews its token by itself, before
// expiry and on a 401; a refused refresh (invalid_grant) returns it to
// needs-login, and a call of its tools answers with that reason. No token
// reaches serve's log, the API, or any file of the home but the store's.
func TestRunSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	// Tokens that live 4 s are renewed 2 s before they expire (half their
	// life: auth.DefaultRefreshMargin is longer).
	fast := protected(t, testauth.Options{AccessTokenTTL: 4 * time.Second})
	slow := protected(t, testauth.Options{})
	home := servetest.ShortHome(t)
	c := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
	cfg := servetest.Config(remoteServer("fast", fast.URL), remoteServer("slow", slow.URL))
	cfg["mcp"].(map[string]any)["pollInterval"] = int(time.Hour / time.Millisecond)
	c.Write(cfg, false)
	d := start(t, options(home))

	for _, name := range []string{"fast", "slow"} {
		st := d.WaitPhase(name, "needs-login")
		assert.Equal(t, "needs sign-in", st.Reason, "serve's default; the CLI phrases its own")
		assert.Equal(t, `server "`+name+`" needs sign-in (no stored credentials): run `+"`freecode mcp login "+name+"`", st.LastError)
		assert.True(t, st.NextRetry.IsZero())
		require.NotNil(t, st.SignIn)
		assert.Equal(t, wire.SignInNone, st.SignIn.State)
	}
	res, err := echo(t, d, "slow", "before")
	require.Error(t, err, "no tools yet")
	assert.Equal(t, api.KindUnknownTool, res.Kind)
	unauthorized := slow.Counts().Unauthorized

	// Sign-ins from another terminal. Each asks the server for its
	// challenge first: one 401.
	login(t, home, "slow", slow.URL)
	login(t, home, "fast", fast.URL)
	for _, name := range []string{"fast", "slow"} {
		st := d.WaitPhase(name, "ready")
		assert.Equal(t, wire.SignInSignedIn, st.SignIn.State)
		assert.Empty(t, st.LastError)
	}
	assert.Equal(t, unauthorized+1, slow.Counts().Unauthorized, "no 401 while it waited, and none once signed in")
	requireEcho(t, d, "slow", "hello")

	// Renewal before expiry: fast's token is renewed without a 401.
	fastUnauthorized, fastRefreshes := fast.Counts().Unauthorized, fast.Counts().Refreshes
	require.Eventually(t, func() bool {
		requireEcho(t, d, "fast", "tick")
		return fast.Counts().Refreshes > fastRefreshes
	}, servetest.WaitFor, 100*time.Millisecond)
	requireEcho(t, d, "fast", "after")
	assert.Equal(t, fastUnauthorized, fast.Counts().Unauthorized, "renewed before it expired")

	// Renewal on a 401: the server stopped accepting the token.
	slow.ExpireAccessTokens()
	requireEcho(t, d, "slow", "renewed")
	assert.Equal(t, 1, slow.Counts().Refreshes)
	assert.Equal(t, "ready", string(d.WaitPhase("slow", "ready").Phase))

	// A refused refresh: back to needs-login, and its tools say why.
	slow.ExpireAccessTokens()
	slow.FailNextRefresh()
	res, err = echo(t, d, "slow", "refused")
	require.Error(t, err)
	assert.Contains(t, res.Error, "run `freecode mcp login slow`")
	st := d.WaitPhase("slow", "needs-login")
	assert.Contains(t, st.LastError, "the authorization server refused the refresh token (invalid_grant)")
	require.NotNil(t, st.SignIn)
	assert.Equal(t, wire.SignInNeedsLogin, st.SignIn.State)
	assert.Contains(t, st.SignIn.Reason, "invalid_grant")
	res, err = echo(t, d, "slow", "later")
	require.Error(t, err)
	assert.Contains(t, res.Error, "needs sign-in")
	assert.Contains(t, res.Error, "run `freecode mcp login slow`")
	assert.Equal(t, "ready", string(d.WaitPhase("fast", "ready").Phase), "the other server is unaffected")

	// Signed in again, it comes back.
	login(t, home, "slow", slow.URL)
	d.WaitPhase("slow", "ready")
	requireEcho(t, d, "slow", "back")

	secrets := append(fast.Secrets(), slow.Secrets()...)
	require.NotEmpty(t, secrets)
	raw, err := json.Marshal(d.Status())
	require.NoError(t, err)
	requireNoToken(t, secrets, "serve's log", d.log.String())
	requireNoToken(t, secrets, "the API's status", string(raw))
	requireStoreOnly(t, home, secrets)
}

func requireNoToken(t *testing.T, secrets []string, what, text string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, text, s, "%s holds a token or secret", what)
	}
}

// requireStoreOnly checks every file under home: tokens and secrets are
// only in the token store's files, which are 0600 in 0700 directories.
func requireStoreOnly(t *testing.T, home string, secrets []string) {
	t.Helper()
	store := TokenDir(home)
	seen := 0
	err := filepath.WalkDir(home, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		inStore := p == store || strings.HasPrefix(p, store+string(filepath.Separator))
		if e.IsDir() {
			if inStore {
				assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "%s", p)
			}
			return nil
		}
		if info.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		require.NoError(t, err)
		if inStore {
			assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "%s", p)
			seen++
			return nil
		}
		requireNoToken(t, secrets, p, string(data))
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, seen, "no token store under %s", home)
}
