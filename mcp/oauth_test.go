package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// protectedHandler is a real mcp-go streamable HTTP server with one tool,
// for testauth to protect.
func protectedHandler(t *testing.T) http.Handler {
	s := server.NewMCPServer("protected", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

// protectedServer is an OAuth-protected MCP server and its authorization
// server.
func protectedServer(t *testing.T, opts testauth.Options) *testauth.Server {
	opts.Handler = protectedHandler(t)
	return testauth.New(t, opts)
}

func tokenStore(t *testing.T) *auth.Store {
	st, err := auth.OpenStore(t.TempDir() + "/auth")
	require.NoError(t, err)
	return st
}

// signIn signs in to srv with a browser that approves at once.
func signIn(t *testing.T, srv Spec, opts Options) *auth.LoginResult {
	t.Helper()
	si, err := NewSignIn(srv, opts)
	require.NoError(t, err)
	defer si.Close()
	res, err := si.Login(context.Background(), auth.Interaction{Out: io.Discard, Open: testauth.Follow})
	require.NoError(t, err)
	return res
}

// waitEnded waits, with a generous bound, for s to end.
func waitEnded(t *testing.T, s *Session) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end after its sign-in was gone")
	}
}

func echo(t *testing.T, s *Session) error {
	t.Helper()
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`), nil)
	if err == nil {
		require.Len(t, res.Content, 1)
		assert.JSONEq(t, `{"type":"text","text":"echo: hi"}`, string(blockOf(t, res.Content[0])))
	}
	return err
}

// TestRemoteNeedsSignIn: a protected server with no stored tokens fails
// the connect with ErrNeedsLogin, naming the command to run, not as an
// HTTP error or a lost connection; after a sign-in the session connects,
// lists and calls; after a sign-out, a ping ends it with ErrNeedsLogin and
// calls answer with that reason.
func TestRemoteNeedsSignIn(t *testing.T) {
	as := protectedServer(t, testauth.Options{})
	logs := &logCapture{}
	opts := Options{Logger: logs.logger(), Tokens: tokenStore(t)}
	srv := remoteSpec("remote", as.URL)

	_, err := Connect(context.Background(), srv, opts)
	require.ErrorIs(t, err, ErrNeedsLogin)
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	assert.NotErrorIs(t, err, ErrTransport)
	assert.Equal(t, "server \"remote\" needs sign-in (no stored credentials): run `freecode mcp login remote`", err.Error())
	assert.Equal(t, 0, as.Counts().Authorizations, "no browser flow without an Interaction")

	res := signIn(t, srv, opts)
	assert.Equal(t, as.Issuer(), res.Issuer)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Len(t, s.Tools(), 1)
	require.NoError(t, echo(t, s))
	require.NoError(t, s.Ping(context.Background()))

	// A sign-out from another process: the next request finds no token.
	si, err := NewSignIn(srv, opts)
	require.NoError(t, err)
	t.Cleanup(si.Close)
	_, err = si.Logout(context.Background())
	require.NoError(t, err)
	err = s.Ping(context.Background())
	require.ErrorIs(t, err, ErrNeedsLogin)
	waitEnded(t, s)
	require.ErrorIs(t, s.Err(), ErrNeedsLogin)
	assert.NotErrorIs(t, s.Err(), ErrTransport, "needing sign-in is not a lost connection")
	assert.Contains(t, s.Err().Error(), "run `freecode mcp login remote`")
	err = echo(t, s)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, ErrNeedsLogin)
	assert.Contains(t, err.Error(), "needs sign-in")
	requireNoSecret(t, "logs and errors", logs.text(), err.Error(), s.Err().Error())
	for _, secret := range as.Secrets() {
		assert.NotContains(t, logs.text(), secret)
	}
}

// TestRemoteRenewsMidSession: an access token the server stops accepting
// is renewed with the refresh token on the 401 and the call goes through;
// a refresh the authorization server refuses (invalid_grant) ends the
// session with ErrNeedsLogin, and the store says so.
func TestRemoteRenewsMidSession(t *testing.T) {
	as := protectedServer(t, testauth.Options{})
	opts := Options{Logger: testLogger(t), Tokens: tokenStore(t)}
	srv := remoteSpec("remote", as.URL)
	signIn(t, srv, opts)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	as.ExpireAccessTokens()
	require.NoError(t, echo(t, s))
	assert.Equal(t, 1, as.Counts().Refreshes)

	as.ExpireAccessTokens()
	as.FailNextRefresh()
	err = echo(t, s)
	require.ErrorIs(t, err, ErrNeedsLogin)
	assert.Contains(t, err.Error(), "the authorization server refused the refresh token (invalid_grant)")
	waitEnded(t, s)
	require.ErrorIs(t, s.Err(), ErrNeedsLogin)

	si, err := NewSignIn(srv, opts)
	require.NoError(t, err)
	t.Cleanup(si.Close)
	st, err := si.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateNeedsLogin, st.State)
	// The next connect says so without a round of 401s.
	before := as.Counts().Unauthorized
	_, err = Connect(context.Background(), srv, opts)
	require.ErrorIs(t, err, ErrNeedsLogin)
	assert.Contains(t, err.Error(), "invalid_grant")
	assert.Equal(t, before, as.Counts().Unauthorized)
}

// TestRemoteAuthServerDown: an authorization server that cannot be
// reached when a token needs renewing fails that call, saying it was the
// authorization, and leaves the session be: it is no lost connection of
// the MCP server (which would restart it, and probe an endpoint that
// answers). A connect then says the same, not the endpoint's 401.
func TestRemoteAuthServerDown(t *testing.T) {
	as := protectedServer(t, testauth.Options{})
	opts := Options{Logger: testLogger(t), Tokens: tokenStore(t)}
	srv := remoteSpec("remote", as.URL)
	signIn(t, srv, opts)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	as.ExpireAccessTokens()
	as.CloseAS()
	err = echo(t, s)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUnreachable)
	assert.NotErrorIs(t, err, ErrTransport)
	assert.Contains(t, err.Error(), `server "remote": tools/call "echo": authorization: `)
	select {
	case <-s.Done():
		t.Fatalf("the session ended: %v", s.Err())
	default:
	}

	_, err = Connect(context.Background(), srv, opts)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUnreachable)
	assert.NotContains(t, err.Error(), "HTTP 401")
	assert.Contains(t, err.Error(), `server "remote": initialize: authorization: `)
}

// TestRemoteStaticAuthorizationHeader: a server configured with its own
// Authorization header is never signed in to: its 401 is an HTTP error,
// and the header goes out unchanged.
func TestRemoteStaticAuthorizationHeader(t *testing.T) {
	as := protectedServer(t, testauth.Options{})
	srv := remoteSpec("static", as.URL)
	srv.Headers = map[string]string{"authorization": "Bearer not-a-token-of-this-server"}
	require.False(t, srv.SignsIn())
	_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), Tokens: tokenStore(t)})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNeedsLogin)
	assert.Contains(t, err.Error(), `server "static": initialize: HTTP 401 Unauthorized`)
	assert.Zero(t, as.Counts().Registrations)

	_, err = NewSignIn(srv, Options{Tokens: tokenStore(t)})
	require.ErrorIs(t, err, ErrNoSignIn)
	_, err = NewSignIn(localServer("l"), Options{Tokens: tokenStore(t)})
	require.ErrorIs(t, err, ErrNoSignIn)
}

// TestRemoteSignInSecretPathShownNowhere: a server whose URL holds a
// ${VAR} secret in its path, signed in to with OAuth: the needs-login
// error, the sign-in's messages and every log line show the URL as
// written.
func TestRemoteSignInSecretPathShownNowhere(t *testing.T) {
	as := protectedServer(t, testauth.Options{Path: "/v1/" + pathSecret + "/mcp"})
	logs := &logCapture{}
	opts := Options{Logger: logs.logger(), Tokens: tokenStore(t)}
	srv := remoteSpec("hosted", as.URL)
	srv.Shown = strings.Replace(as.URL, pathSecret, "${TOKEN}", 1)

	_, err := Connect(context.Background(), srv, opts)
	require.ErrorIs(t, err, ErrNeedsLogin)
	si, err := NewSignIn(srv, opts)
	require.NoError(t, err)
	defer si.Close()
	var out strings.Builder
	_, err = si.Login(context.Background(), auth.Interaction{Out: &out, Open: testauth.Follow})
	require.NoError(t, err)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	require.NoError(t, echo(t, s))
	require.NoError(t, s.Close())

	// A server that is gone: the sign-in's error masks the URL too.
	as.Close()
	_, err = NewSignIn(srv, opts)
	require.NoError(t, err)
	_, loginErr := si.Login(context.Background(), auth.Interaction{Out: io.Discard, Open: testauth.Follow})
	require.Error(t, loginErr)
	assert.Contains(t, loginErr.Error(), "${TOKEN}")
	requireNoSecret(t, "logs and errors", logs.text(), loginErr.Error())
}

// TestRemoteStepUpFailsOneCall: a tool that needs more scope than the
// sign-in has fails that call with ErrNeedsLogin, naming the scope; the
// session goes on serving the rest, and a new sign-in asks for the
// scope, after which the call goes through on the same session.
func TestRemoteStepUpFailsOneCall(t *testing.T) {
	as := protectedServer(t, testauth.Options{ChallengeScope: []string{"mcp:read"},
		RequireScopes: map[string][]string{"tools/call:echo": {"mcp:write"}}})
	opts := Options{Logger: testLogger(t), Tokens: tokenStore(t)}
	srv := remoteSpec("remote", as.URL)
	res := signIn(t, srv, opts)
	require.Equal(t, []string{"mcp:read"}, res.Scopes)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	err = echo(t, s)
	require.ErrorIs(t, err, ErrNeedsLogin)
	assert.NotErrorIs(t, err, ErrTransport, "the authorization's answer, not a transport failure")
	assert.NotContains(t, err.Error(), "transport error")
	assert.NotContains(t, err.Error(), "failed to send request")
	assert.Contains(t, err.Error(), `it asks for scope "mcp:write"`)
	assert.Contains(t, err.Error(), "run `freecode mcp login remote`")
	require.NoError(t, s.Ping(context.Background()), "the session goes on")
	select {
	case <-s.Done():
		t.Fatalf("the session ended: %v", s.Err())
	default:
	}

	res = signIn(t, srv, opts)
	assert.ElementsMatch(t, []string{"mcp:read", "mcp:write"}, res.Scopes)
	require.NoError(t, echo(t, s))
}
