package controller

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// A remote server that cannot be reached waits for its endpoint: its
// tries are reconnects, not restarts after crashes, and its log says why
// each failed (it has no stderr). A local server that fails is crashing.
// Disabled, a server is in no failure any more (its last one is kept).
func TestStateUnreachableCrashingDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		d.fail["r"] = unreachableErr("connection refused")
		d.fail["l"] = errors.New(`server "l" exited with status 3 before initialize`)
		every := Backoff{Initial: time.Second, Max: time.Second, Factor: 2, Jitter: -1, StableAfter: time.Minute}
		c := New(Options{Dial: d.dial, Backoff: every, ProbeInterval: -1, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		l := fakeServer("l")
		c.SetDesired([]schema.Server{fakeRemote("r"), l}, time.Hour)
		synctest.Wait()
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()

		r := statusOf(c, "r")
		require.Equal(t, wire.PhaseBackoff, r.Phase)
		require.Equal(t, 0, r.Restarts, "reaching again is not a restart")
		require.Equal(t, 0, r.Crashes)
		require.Equal(t, 3, r.Reconnects)
		require.False(t, r.UnreachableSince.IsZero())
		logs, err := c.Logs("r", wire.LogCursor{})
		require.NoError(t, err)
		require.Len(t, logs.Lines, 1)
		require.Contains(t, logs.Lines[0], "connection refused")
		require.Empty(t, r.StderrTail, "the error is a log line, not stderr")

		ls := statusOf(c, "l")
		require.Equal(t, 3, ls.Restarts)
		require.Equal(t, 3, ls.Crashes)
		require.Zero(t, ls.Reconnects)
		require.True(t, ls.UnreachableSince.IsZero())
		require.NotEmpty(t, ls.LastError)

		l.Enabled = false
		c.SetDesired([]schema.Server{fakeRemote("r"), l}, time.Hour)
		synctest.Wait()
		ls = statusOf(c, "l")
		require.Equal(t, wire.PhaseDisabled, ls.Phase)
		require.Empty(t, ls.LastError, "a disabled server is not failing")
		require.True(t, strings.HasPrefix(ls.LastFailure, `server "l" exited`), "its last failure is kept: %q", ls.LastFailure)
	})
}

// A remote server is shown as "not signed in" only when it uses OAuth:
// it has an oauth object, something is stored, or it asked for a sign-in.
func TestShownSignIn(t *testing.T) {
	none := &wire.SignIn{State: wire.SignInNone}
	plain := fakeRemote("r")
	require.Nil(t, ShownSignIn(plain, wire.PhaseReady, none))
	require.Nil(t, ShownSignIn(plain, wire.PhaseBackoff, none))
	require.Same(t, none, ShownSignIn(plain, wire.PhaseNeedsLogin, none))
	withOAuth := plain
	withOAuth.OAuth = &schema.OAuth{}
	require.Same(t, none, ShownSignIn(withOAuth, "", none))
	in := &wire.SignIn{State: wire.SignInSignedIn}
	require.Same(t, in, ShownSignIn(plain, wire.PhaseReady, in))
	require.Nil(t, ShownSignIn(plain, wire.PhaseReady, nil))
}
