package auth_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// TestNoSecretLeaks drives sign-in, use, step-up, refresh, a refused
// refresh, refused client credentials and logout with every log level on,
// and checks that no code, token or client secret the authorization
// server issued appears in any log line, printed output, error or
// formatted result.
func TestNoSecretLeaks(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{
		Revocation:     true,
		IDTokenAccount: "ada@example.com",
		ChallengeScope: []string{"mcp:basic"},
		RequireScopes:  map[string][]string{"tools/call": {"mcp:write"}},
		AuthMethods:    []string{"client_secret_post"},
		Clients:        []testauth.Client{{ID: "svc", Secret: "svc-secret-value", AuthMethod: "client_secret_post"}},
	})
	var seen strings.Builder
	note := func(v ...any) {
		for _, x := range v {
			fmt.Fprintf(&seen, "%v\n%+v\n%#v\n", x, x, x)
		}
	}
	out := &syncBuffer{}
	b := newBrowser(t)

	c := e.client("remote", srv, nil)
	res, err := c.Login(context.Background(), b.interaction(out))
	require.NoError(t, err)
	note(res)
	for _, m := range []string{"tools/list", "tools/call"} {
		_, err := e.call(c, srv.URL, m)
		note(err)
	}
	srv.ExpireAccessTokens()
	_, err = e.call(c, srv.URL, "tools/list")
	note(err)
	srv.FailNextRefresh()
	srv.ExpireAccessTokens()
	_, err = e.call(c, srv.URL, "tools/list")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	note(err)
	st, err := c.Status()
	note(st, err)
	res, err = c.Login(context.Background(), b.interaction(out))
	require.NoError(t, err)
	note(res)

	// A configured client whose secret the server refuses.
	cc := e.client("svc", srv, func(o *auth.Options) {
		o.Config = auth.Config{Grant: auth.GrantClientCredentials, ClientID: "svc", ClientSecret: "wrong-secret-value"}
	})
	_, err = e.call(cc, srv.URL, "tools/list")
	require.Error(t, err)
	note(err)
	_, err = cc.Login(context.Background(), auth.Interaction{Out: io.Discard})
	require.Error(t, err)
	note(err, cc)

	lo, err := c.Logout(context.Background())
	require.NoError(t, err)
	note(lo, c)

	secrets := append(srv.Secrets(), "wrong-secret-value")
	require.NotEmpty(t, secrets)
	all := e.logs.String() + out.String() + seen.String()
	require.Contains(t, e.logs.String(), "renewed the access token", "the logs were captured")
	for _, s := range secrets {
		assert.NotContains(t, all, s)
	}
}
