// Package servetest is what tests of a running serve share: waiting on its
// API for a status, a phase or an event, and writing the config files it
// watches. Package serve's tests run the daemon in-process, cmd/freecode's
// as a `freecode serve` process; both drive it through an API client. It is
// imported by tests only.
package servetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/wire"
)

// WaitFor bounds every wait for serve: generous, for a loaded machine.
const WaitFor = 30 * time.Second

// SyncBuffer is a bytes.Buffer safe for concurrent writers (a process, a
// logger) and a reading test.
type SyncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ShortHome is a FreeCode home whose socket path fits the 108-byte limit of
// a unix socket's path; it is removed at the end of the test.
func ShortHome(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fch")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// API is a running serve, seen by a test through its client.
type API struct {
	T      *testing.T
	Client *api.Client
}

// Status returns the live status.
func (a API) Status() wire.Status {
	a.T.Helper()
	st, err := a.Client.Status(a.T.Context())
	require.NoError(a.T, err)
	return st
}

// WaitStatus waits until cond holds for the live status and returns it.
func (a API) WaitStatus(what string, cond func(wire.Status) bool) wire.Status {
	a.T.Helper()
	var last wire.Status
	ok := assert.Eventually(a.T, func() bool {
		st, err := a.Client.Status(a.T.Context())
		if err != nil {
			return false
		}
		last = st
		return cond(st)
	}, WaitFor, 20*time.Millisecond, what)
	if !ok {
		b, _ := json.MarshalIndent(last, "", "  ")
		a.T.Fatalf("waiting for %s; last status:\n%s", what, b)
	}
	return last
}

// WaitPhase waits until server name is in phase and returns its status.
func (a API) WaitPhase(name, phase string) wire.ServerStatus {
	a.T.Helper()
	st := a.WaitStatus(name+" "+phase, func(st wire.Status) bool {
		s, ok := Server(st, name)
		return ok && string(s.Phase) == phase
	})
	s, _ := Server(st, name)
	return s
}

// Events subscribes to /v1/events; events are read from the returned
// channel, which closes when the stream ends. The subscription ends with
// the test.
func (a API) Events() <-chan api.Event {
	a.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := a.Client.Events(ctx)
	require.NoError(a.T, err)
	ch := make(chan api.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			ev, err := s.Next()
			if err != nil {
				return
			}
			ch <- ev
		}
	}()
	a.T.Cleanup(func() {
		cancel()
		s.Close()
		<-done
	})
	return ch
}

// Server returns the named server's status (ok false if absent).
func Server(st wire.Status, name string) (wire.ServerStatus, bool) {
	for _, s := range st.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return wire.ServerStatus{}, false
}

// Until collects events until one satisfies stop (included) and returns
// them all.
func Until(t *testing.T, ch <-chan api.Event, what string, stop func(api.Event) bool) []api.Event {
	t.Helper()
	var got []api.Event
	timeout := time.NewTimer(WaitFor)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "event stream ended while waiting for %s; got %v", what, got)
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-timeout.C:
			t.Fatalf("no %s event; got %v", what, got)
		}
	}
}

// PhaseEvent matches the phase_changed event of server to phase.
func PhaseEvent(server, phase string) func(api.Event) bool {
	return func(ev api.Event) bool {
		var pc struct{ Server, Phase string }
		return ev.Kind == wire.KindPhaseChanged && ev.Decode(&pc) == nil && pc.Server == server && pc.Phase == phase
	}
}

// File is a config file under test.
type File struct {
	T    *testing.T
	Path string
}

// Write replaces the file with v as JSON: in place (truncate and write,
// like many editors' "save") or by renaming a new file over it (like vim
// and most atomic writers).
func (f File) Write(v any, rename bool) {
	f.T.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(f.T, err)
	f.WriteBytes(data, rename)
}

// WriteBytes is Write of raw bytes.
func (f File) WriteBytes(data []byte, rename bool) {
	f.T.Helper()
	if !rename {
		require.NoError(f.T, os.WriteFile(f.Path, data, 0o600))
		return
	}
	tmp := f.Path + ".tmp"
	require.NoError(f.T, os.WriteFile(tmp, data, 0o600))
	require.NoError(f.T, os.Rename(tmp, f.Path))
}

// Local is a local server's config entry.
func Local(name string, command ...string) map[string]any {
	return map[string]any{"name": name, "type": "local", "command": command}
}

// Config is a config file's content with servers (and a provider, and an
// allow rule for the server named a).
func Config(servers ...map[string]any) map[string]any {
	if servers == nil {
		servers = []map[string]any{}
	}
	return map[string]any{
		"model":      "anthropic/claude-sonnet-4-5",
		"providers":  map[string]any{"anthropic": map[string]any{"apiKey": "sk-test"}},
		"mcp":        map[string]any{"servers": servers},
		"permission": map[string]any{"allow": []string{"mcp__a"}},
	}
}

// HasTool reports whether the tool list holds id.
func HasTool(t api.Tools, id string) bool {
	for _, d := range t.Tools {
		if d.Name == id {
			return true
		}
	}
	return false
}
