package controller

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// LastError is the failure a server is in now; a server that is ready
// again shows none, and LastFailure keeps what happened.
func TestLastErrorClearsOnRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDialer(t)
		reg := registry.NewRegistry(nil)
		c := New(Options{Registry: reg, Dial: d.dial, Logger: testLogger(t)})
		stop := runLoop(c)
		defer stop()
		d.fail["s"] = errors.New("boom")
		failedAt := time.Now()
		c.SetDesired([]schema.Server{fakeServer("s")}, time.Hour)
		synctest.Wait()
		st := statusOf(c, "s")
		require.Equal(t, wire.PhaseBackoff, st.Phase)
		require.Equal(t, "boom", st.LastError)
		require.Equal(t, "boom", st.LastFailure)
		require.Equal(t, failedAt, st.LastFailureAt)

		d.set(func() { delete(d.fail, "s") })
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Empty(t, st.LastError, "a ready server shows no stale error")
		require.Equal(t, "boom", st.LastFailure)
		require.Equal(t, failedAt, st.LastFailureAt)

		// A crash is the current error again.
		time.Sleep(time.Second)
		crashedAt := time.Now()
		d.last("s").crash(errors.New("gone"))
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseBackoff, st.Phase)
		require.Equal(t, "gone", st.LastError)
		require.Equal(t, "gone", st.LastFailure)
		require.Equal(t, crashedAt, st.LastFailureAt)
		time.Sleep(time.Until(st.NextRetry))
		synctest.Wait()
		require.Empty(t, statusOf(c, "s").LastError)

		// Tools refused while running are a current error of a ready
		// server, until an accepted set replaces them.
		_, err := reg.ReplaceSource("other", []registry.Tool{{ID: "mcp__s__t9", Call: func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
			return wire.CallResult{}, nil
		}}})
		require.NoError(t, err)
		conn := d.last("s")
		conn.changeTools(t, "t1", "t9")
		synctest.Wait()
		st = statusOf(c, "s")
		require.Equal(t, wire.PhaseReady, st.Phase)
		require.Contains(t, st.LastError, "already provided by other")
		conn.changeTools(t, "t1")
		synctest.Wait()
		st = statusOf(c, "s")
		require.Empty(t, st.LastError)
		require.Contains(t, st.LastFailure, "already provided by other")
	})
}
