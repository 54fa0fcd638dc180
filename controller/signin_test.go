package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// credentials is a token store as the controller sees it: a sign-in state
// that a test changes, like a login or logout from another terminal.
type credentials struct {
	mu     sync.Mutex // guards signed and stamp
	signed bool
	stamp  int // the access token's "expiry", bumped by every change
	reads  atomic.Int64
}

func (c *credentials) set(signed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.signed = signed
	c.stamp++
}

func (c *credentials) isSigned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signed
}

func (c *credentials) signIn(srv schema.Server) *wire.SignIn {
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.signed {
		return &wire.SignIn{State: wire.SignInNone}
	}
	return &wire.SignIn{State: wire.SignInSignedIn, Issuer: "https://as.example",
		Expiry: time.Date(2026, 1, 1, 0, 0, c.stamp, 0, time.UTC)}
}

// signedConn is a fake session of a server that signs in: a ping finds
// out that the sign-in is gone, and ends the session as mcp's does.
type signedConn struct {
	*fakeConn
	creds *credentials
	pings atomic.Int64
}

var errNeedsLogin = fmt.Errorf("server %q needs sign-in (no stored credentials): run `freecode mcp login remote`: %w", "remote", mcp.ErrNeedsLogin)

func (c *signedConn) Ping(context.Context) error {
	c.pings.Add(1)
	if !c.creds.isSigned() {
		c.crash(errNeedsLogin)
		return errNeedsLogin
	}
	return nil
}

// TestNeedsLoginWaitsForCredentials: a server that needs a sign-in waits
// in wire.PhaseNeedsLogin — no backoff timer, no retries while nothing
// changes — and shows the reason and the stored state; a sign-in starts
// it (no restart of anything), a sign-out ends its session back in
// PhaseNeedsLogin, and a renewal of the token only has the session
// checked.
func TestNeedsLoginWaitsForCredentials(t *testing.T) {
	creds := &credentials{}
	var dials atomic.Int64
	var mu sync.Mutex
	var conns []*signedConn
	dial := func(ctx context.Context, srv schema.Server) (Conn, error) {
		dials.Add(1)
		if !creds.isSigned() {
			return nil, errNeedsLogin
		}
		c := &signedConn{fakeConn: newFakeConn(t, srv.Name, 0, "t1"), creds: creds}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return c, nil
	}
	h := newHarness(t, func(o *Options) {
		o.Dial = dial
		o.SignIn = creds.signIn
		o.LoginReason = func(name string) string { return "run `freecode mcp login " + name + "`" }
	})
	remote := schema.Server{Name: "remote", Type: schema.Remote, URL: "https://mcp.example/mcp", Enabled: true, Timeout: time.Second}
	h.c.SetDesired([]schema.Server{remote}, 20*time.Millisecond)

	st := h.waitPhase("remote", wire.PhaseNeedsLogin)
	assert.Equal(t, "run `freecode mcp login remote`", st.Reason)
	assert.Equal(t, errNeedsLogin.Error(), st.LastError)
	assert.True(t, st.NextRetry.IsZero(), "no backoff timer")
	require.NotNil(t, st.SignIn)
	assert.Equal(t, wire.SignInNone, st.SignIn.State)
	evs := h.phases("remote")
	require.NotEmpty(t, evs)
	assert.Equal(t, wire.PhaseChanged{Server: "remote", Phase: wire.PhaseNeedsLogin, Err: errNeedsLogin.Error()}, evs[len(evs)-1])

	// Polls read the store and start nothing while it does not change.
	reads := creds.reads.Load()
	require.Eventually(t, func() bool { return creds.reads.Load() >= reads+5 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(1), dials.Load(), "a server waiting for a sign-in is not retried")

	// A sign-in from another terminal.
	creds.set(true)
	st = h.waitPhase("remote", wire.PhaseReady)
	assert.Equal(t, int64(2), dials.Load())
	assert.Empty(t, st.Reason)
	assert.Equal(t, wire.SignInSignedIn, st.SignIn.State)
	assert.Equal(t, []string{"mcp__remote__t1"}, h.toolIDs("remote"))

	// A renewal changes the store: the session is checked, and stays.
	mu.Lock()
	first := conns[0]
	mu.Unlock()
	creds.set(true)
	require.Eventually(t, func() bool { return first.pings.Load() == 1 }, 10*time.Second, time.Millisecond)
	reads = creds.reads.Load()
	require.Eventually(t, func() bool { return creds.reads.Load() >= reads+5 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(1), first.pings.Load(), "one check per change")
	assert.Equal(t, wire.PhaseReady, h.server("remote").Phase)

	// A sign-out: the check ends the session, and the server waits again.
	creds.set(false)
	st = h.waitPhase("remote", wire.PhaseNeedsLogin)
	require.True(t, errors.Is(first.Err(), mcp.ErrNeedsLogin))
	assert.Equal(t, int64(2), dials.Load(), "the end of a session that needs sign-in is not followed by a start")
	assert.Equal(t, []string{"mcp__remote__t1"}, h.toolIDs("remote"), "its tools stay, and answer with the session's end")

	creds.set(true)
	h.waitPhase("remote", wire.PhaseReady)
	assert.Equal(t, int64(3), dials.Load())
	require.NoError(t, h.c.Restart("remote"))
}

// TestRefusedTokenBacksOff: a server that refuses a token the store still
// holds as good (its start renewed the token, which changes the store, and
// the server refused the new one too) is retried after backoff, not at
// once on every change its own attempt made — which was a hot loop of
// starts, each a refresh grant — and a sign-in that lands meanwhile is
// tried when the backoff runs out.
func TestRefusedTokenBacksOff(t *testing.T) {
	creds := &credentials{}
	creds.set(true)
	var dials atomic.Int64
	var refuse atomic.Bool
	refuse.Store(true)
	dial := func(ctx context.Context, srv schema.Server) (Conn, error) {
		if srv.Name != "remote" {
			return newFakeConn(t, srv.Name, 0, "t2"), nil
		}
		dials.Add(1)
		if refuse.Load() {
			creds.set(true) // the forced renewal after the 401
			return nil, errNeedsLogin
		}
		return &signedConn{fakeConn: newFakeConn(t, srv.Name, 0, "t1"), creds: creds}, nil
	}
	h := newHarness(t, func(o *Options) {
		o.Dial = dial
		o.SignIn = creds.signIn
		o.Backoff = Backoff{Initial: time.Hour, Max: time.Hour, Factor: 2, StableAfter: time.Minute}
	})
	remote := schema.Server{Name: "remote", Type: schema.Remote, URL: "https://mcp.example/mcp", Enabled: true, Timeout: time.Second}
	h.c.SetDesired([]schema.Server{remote}, 20*time.Millisecond)

	st := h.waitPhase("remote", wire.PhaseBackoff)
	assert.Equal(t, errNeedsLogin.Error(), st.LastError)
	assert.False(t, st.NextRetry.IsZero())
	// Passes of the loop since then (the one that starts "other", and
	// every poll) start nothing.
	other := schema.Server{Name: "other", Type: schema.Local, Command: []string{"x"}, Enabled: true, Timeout: time.Second}
	h.c.SetDesired([]schema.Server{remote, other}, 20*time.Millisecond)
	h.waitPhase("other", wire.PhaseReady)
	assert.Equal(t, int64(1), dials.Load(), "no start before the backoff runs out")
	assert.Equal(t, wire.PhaseBackoff, h.server("remote").Phase)

	// A restart request (as after a login) skips the backoff.
	refuse.Store(false)
	require.NoError(t, h.c.Restart("remote"))
	h.waitPhase("remote", wire.PhaseReady)
	assert.Equal(t, int64(2), dials.Load())
}
