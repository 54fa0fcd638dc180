package auth_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// TestRefreshBeforeExpiry: within the refresh margin of its expiry the
// token is renewed before the request is sent; before it, not.
func TestRefreshBeforeExpiry(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	e.login(c)

	e.clock.advance(time.Hour - 2*auth.DefaultRefreshMargin)
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Zero(t, srv.Counts().Refreshes, "outside the margin")

	e.clock.advance(auth.DefaultRefreshMargin + auth.DefaultRefreshMargin/2)
	code, err = e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	n := srv.Counts()
	assert.Equal(t, 1, n.Refreshes)
	assert.Equal(t, 1, n.Unauthorized, "only the first unauthenticated request of Login's probe")
	tr := srv.TokenRequests()
	assert.Equal(t, "refresh_token", tr[len(tr)-1].Grant)
	assert.Equal(t, srv.ResourceID(), tr[len(tr)-1].Resource, "RFC 8707 resource in the refresh request")

	st, err := c.Status()
	require.NoError(t, err)
	assert.Equal(t, auth.StateSignedIn, st.State)
	assert.True(t, st.Expiry.After(e.clock.now().Add(50*time.Minute)), "the new token's expiry")
}

// TestRefreshOn401: a token the server no longer accepts is renewed and
// the request sent again, once, with its body.
func TestRefreshOn401(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	e.login(c)
	for i := 1; i <= 3; i++ {
		srv.ExpireAccessTokens()
		code, err := e.call(c, srv.URL, "tools/list")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		n := srv.Counts()
		assert.Equal(t, i, n.Refreshes)
		assert.Equal(t, i, n.Authorized)
	}
}

// TestRenewedTokenRefusedToo: when the server refuses even the token just
// renewed for its 401, renewing again cannot help: the next 401 asks for a
// sign-in instead of spending refresh tokens on every request.
func TestRenewedTokenRefusedToo(t *testing.T) {
	e := newEnv(t)
	var srv *testauth.Server
	srv = testauth.New(t, testauth.Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+srv.PRMURL()+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	})})
	c := e.client("remote", srv, nil)
	e.login(c)
	code, err := e.call(c, srv.URL, "tools/list")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "renewed once, refused again: the answer is handed back")
	_, err = e.call(c, srv.URL, "tools/list")
	require.ErrorIs(t, err, auth.ErrNeedsLogin)
	assert.Contains(t, err.Error(), "refused the stored token")
	assert.Equal(t, 1, srv.Counts().Refreshes)
}

// TestInvalidGrantNeedsLogin: a refused refresh token is a sign-in the
// user must do; the Transport says so, and then does not bother the
// server again until tokens appear.
func TestInvalidGrantNeedsLogin(t *testing.T) {
	for _, proactive := range []bool{false, true} {
		t.Run(fmt.Sprintf("proactive=%t", proactive), func(t *testing.T) {
			e := newEnv(t)
			srv := testauth.New(t, testauth.Options{})
			c := e.client("remote", srv, nil)
			e.login(c)
			srv.FailNextRefresh()
			if proactive {
				e.clock.advance(2 * time.Hour)
			} else {
				srv.ExpireAccessTokens()
			}

			_, err := e.call(c, srv.URL, "tools/list")
			require.ErrorIs(t, err, auth.ErrNeedsLogin)
			assert.Contains(t, err.Error(), "run `freecode mcp login remote`")
			assert.Contains(t, err.Error(), "invalid_grant")
			st, err := c.Status()
			require.NoError(t, err)
			assert.Equal(t, auth.StateNeedsLogin, st.State)
			assert.Contains(t, st.Reason, "refused the refresh token")

			before := srv.Counts()
			_, err = e.call(c, srv.URL, "tools/list")
			require.ErrorIs(t, err, auth.ErrNeedsLogin)
			assert.Equal(t, before, srv.Counts(), "no request to either server")

			// A sign-in from another process is picked up by the next request.
			other := e.client("remote", srv, nil)
			e.clock.offset.Store(0)
			e.login(other)
			code, err := e.call(c, srv.URL, "tools/list")
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)
		})
	}
}

// TestSingleFlight: many requests that all get 401 run one authorization.
func TestSingleFlight(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	b := newBrowser(t)
	in := b.interaction(io.Discard)
	c := e.client("remote", srv, func(o *auth.Options) { o.Interaction = &in })

	const n = 16
	var wg sync.WaitGroup
	codes := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { codes[i], errs[i] = e.call(c, srv.URL, "tools/list") })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, http.StatusOK, codes[i])
	}
	cnt := srv.Counts()
	assert.Equal(t, 1, cnt.Authorizations)
	assert.Equal(t, 1, cnt.CodeExchanges)
	assert.Equal(t, 1, cnt.Registrations)
	assert.Equal(t, int32(1), b.opens.Load())
	assert.Equal(t, n, cnt.Authorized)
}

// TestSingleFlightRefresh: many requests with an expired token spend the
// one-use refresh token once.
func TestSingleFlightRefresh(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	c := e.client("remote", srv, nil)
	e.login(c)
	srv.ExpireAccessTokens()

	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = e.call(c, srv.URL, "tools/list") })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	cnt := srv.Counts()
	assert.Equal(t, 1, cnt.Refreshes)
	assert.Zero(t, cnt.InvalidGrants)
	assert.Equal(t, n, cnt.Authorized)
}

const (
	childEnv      = "FREECODE_AUTH_TEST_CHILD"
	childDir      = "FREECODE_AUTH_TEST_DIR"
	childURL      = "FREECODE_AUTH_TEST_URL"
	childReady    = "child ready"
	childAdvance  = 59*time.Minute + 30*time.Second
	childTokenTag = "token-sha256="
)

// TestRefreshRaceBetweenProcesses runs this test binary twice against one
// store and one authorization server whose refresh tokens are one-use.
// Both children see the token about to expire. The first refreshes and is
// held inside the token endpoint until the second is waiting for the
// token lock; then both finish. Exactly one refresh happens and both use
// the same, valid, token.
func TestRefreshRaceBetweenProcesses(t *testing.T) {
	refreshing := make(chan struct{}, 4)
	release := make(chan struct{})
	var releaseOnce sync.Once
	srv := testauth.New(t, testauth.Options{OnRefresh: func() {
		refreshing <- struct{}{}
		select {
		case <-release:
		case <-time.After(time.Minute): // never hang the server
		}
	}})
	e := newEnv(t)
	e.login(e.client("remote", srv, nil))

	a := startChild(t, e.dir, srv.URL)
	b := startChild(t, e.dir, srv.URL)
	// Registered after the children's cleanups, so it runs before them: a
	// failing test does not leave the first child stuck in the server.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	a.waitFor(t, childReady)
	b.waitFor(t, childReady)

	a.go_(t)
	select {
	case <-refreshing:
	case <-time.After(30 * time.Second):
		t.Fatalf("first child never refreshed; its log:\n%s", a.log())
	}
	b.go_(t)
	b.waitFor(t, "waiting for the token lock")
	releaseOnce.Do(func() { close(release) })

	ha, hb := a.result(t), b.result(t)
	assert.Equal(t, ha, hb, "both children use the one renewed token")
	n := srv.Counts()
	assert.Equal(t, 1, n.Refreshes)
	assert.Zero(t, n.InvalidGrants)
	assert.Equal(t, 2, n.Authorized)
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *strings.Builder
	mu     sync.Mutex
	lines  []string
	cond   chan struct{} // closed and replaced on every new line
	done   chan struct{} // closed when the child has exited; then err is set
	err    error
}

func startChild(t *testing.T, dir, url string) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=refresh", childDir+"="+dir, childURL+"="+url)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	ch := &child{cmd: cmd, stdin: stdin, stdout: &strings.Builder{}, cond: make(chan struct{}), done: make(chan struct{})}
	cmd.Stdout = ch.stdout
	require.NoError(t, cmd.Start())
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			ch.mu.Lock()
			ch.lines = append(ch.lines, sc.Text())
			close(ch.cond)
			ch.cond = make(chan struct{})
			ch.mu.Unlock()
		}
	}()
	go func() {
		<-scanned
		ch.err = cmd.Wait()
		close(ch.done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-ch.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-ch.done
		}
	})
	return ch
}

func (c *child) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

func (c *child) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		for _, l := range c.lines {
			if strings.Contains(l, s) {
				c.mu.Unlock()
				return
			}
		}
		cond := c.cond
		c.mu.Unlock()
		select {
		case <-cond:
		case <-c.done:
			t.Fatalf("child exited (%v) without logging %q; its log:\n%s", c.err, s, c.log())
		case <-deadline:
			t.Fatalf("child never logged %q; its log:\n%s", s, c.log())
		}
	}
}

func (c *child) go_(t *testing.T) {
	_, err := io.WriteString(c.stdin, "go\n")
	require.NoError(t, err)
}

func (c *child) result(t *testing.T) string {
	t.Helper()
	select {
	case <-c.done:
		require.NoError(t, c.err, "child failed; its log:\n%s", c.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not finish; its log:\n%s", c.log())
	}
	out := c.stdout.String()
	_, after, ok := strings.Cut(out, childTokenTag)
	require.True(t, ok, "child printed no token hash: %q", out)
	return strings.TrimSpace(after)
}

// refreshChild is the child of TestRefreshRaceBetweenProcesses: it waits
// for "go" on stdin, makes one request with a clock childAdvance ahead
// (the token is within the refresh margin) and prints a hash of the token
// it sent.
func refreshChild() int {
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1})
	store, err := auth.OpenStore(os.Getenv(childDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := auth.New(auth.Options{
		Server: "remote", URL: os.Getenv(childURL), Store: store, Logger: log,
		Now: func() time.Time { return time.Now().Add(childAdvance) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	fmt.Fprintln(os.Stderr, childReady)
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || line != "go\n" {
		fmt.Fprintln(os.Stderr, "no go:", err)
		return 1
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	var sent string
	hc := &http.Client{Transport: c.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		return base.RoundTrip(r)
	}))}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, os.Getenv(childURL),
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "request:", err)
		return 1
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "status", resp.StatusCode)
		return 1
	}
	sum := sha256.Sum256([]byte(sent))
	fmt.Println(childTokenTag + hex.EncodeToString(sum[:8]))
	return 0
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLoginWaitsForInBandAuthorization: a Login while the Transport's
// in-band authorization runs waits for it and reports its outcome rather
// than starting a second flow.
func TestLoginWaitsForInBandAuthorization(t *testing.T) {
	e := newEnv(t)
	srv := testauth.New(t, testauth.Options{})
	b := newBrowser(t)
	started, release := make(chan struct{}), make(chan struct{})
	in := auth.Interaction{Out: io.Discard, Open: func(ctx context.Context, u string) error {
		close(started)
		<-release
		return b.open(ctx, u)
	}}
	c := e.client("remote", srv, func(o *auth.Options) { o.Interaction = &in })
	callErr := make(chan error, 1)
	go func() {
		_, err := e.call(c, srv.URL, "tools/list")
		callErr <- err
	}()
	<-started
	loginRes := make(chan *auth.LoginResult, 1)
	loginErr := make(chan error, 1)
	go func() {
		res, err := c.Login(context.Background(), auth.Interaction{Out: io.Discard, Open: func(context.Context, string) error {
			return fmt.Errorf("a second flow was started")
		}})
		loginRes <- res
		loginErr <- err
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(e.logs.String(), "waiting for the authorization in progress")
	}, 10*time.Second, 5*time.Millisecond)
	close(release)
	require.NoError(t, <-callErr)
	require.NoError(t, <-loginErr)
	assert.Equal(t, srv.Issuer(), (<-loginRes).Issuer)
	assert.Equal(t, 1, srv.Counts().Authorizations)
}
