package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/require"
)

// A call made with a progress function gets the server's progress notices, in
// order, while it runs, on both revisions. (mcp-go's servers write
// notices on a goroutine of their own, so a notice can come after the
// answer; the call then no longer takes it. Hence the held call here.)
func TestCallProgress(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			flags := []string{"--progress"}
			if protocol == ModernProtocolVersion {
				flags = append(flags, "--modern")
			}
			srv := localServer("steps", flags...)
			srv.Protocol = protocol
			s := connect(t, srv)
			var mu sync.Mutex
			var got []wire.Progress
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			progress := func(p wire.Progress) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, p)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.CallTool(ctx, "progress", json.RawMessage(`{"steps":3,"hold":true}`), progress)
				done <- err
			}()
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == 3
			}, signalWait, 5*time.Millisecond)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			mu.Lock()
			defer mu.Unlock()
			for i, p := range got {
				require.Equal(t, wire.Progress{Progress: float64(i + 1), Total: 3, Message: fmt.Sprintf("step %d of 3", i+1)}, p)
			}
		})
	}
}
