package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closedAddr is an address nothing listens on.
//
// It is port 1, where nothing listens: a port a listener just gave back
// can be handed to the next listener of the same test (it was: a status
// server took it, and "refused" read a 503).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:1")
	if errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal("something listens on 127.0.0.1:1; closedAddr needs a port nothing listens on")
	}
	if err == nil {
		require.NoError(t, ln.Close()) // allowed to listen there (root), and nobody else did
	}
	return "127.0.0.1:1"
}

// closingListener accepts connections and closes them at once, like a host
// whose server is gone behind a port that still accepts.
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// statusServer answers every request with code.
func statusServer(t *testing.T, code int) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, http.StatusText(code), code)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue)
	return ue.Reason
}

// A start that cannot reach the server says so with ErrUnreachable and a
// short reason; an answer of the server's own does not.
func TestConnectUnreachable(t *testing.T) {
	refused := "http://" + closedAddr(t) + "/mcp"
	closing := "http://" + closingListener(t) + "/mcp"
	tests := []struct {
		name        string
		url         string
		transport   Transport
		unreachable bool
		reason      string
	}{
		{"refused, streamable HTTP", refused, TransportStreamableHTTP, true, "connection refused"},
		{"refused, SSE", refused, TransportSSE, true, "connection refused"},
		{"refused, auto", refused, TransportAuto, true, "connection refused"},
		{"closed at once, streamable HTTP", closing, TransportStreamableHTTP, true, ""},
		{"closed at once, SSE", closing, TransportSSE, true, ""},
		{"gateway 502", statusServer(t, http.StatusBadGateway), TransportStreamableHTTP, true, "HTTP 502 Bad Gateway"},
		{"gateway 503, SSE", statusServer(t, http.StatusServiceUnavailable), TransportSSE, true, "HTTP 503 Service Unavailable"},
		{"gateway 504", statusServer(t, http.StatusGatewayTimeout), TransportStreamableHTTP, true, "HTTP 504 Gateway Timeout"},
		{"server error 500", statusServer(t, http.StatusInternalServerError), TransportStreamableHTTP, false, ""},
		{"unauthorized 401", statusServer(t, http.StatusUnauthorized), TransportStreamableHTTP, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := remoteSpec("far", tt.url)
			spec.Transport = tt.transport
			spec.Timeout = 5 * time.Second
			_, err := Connect(context.Background(), spec, Options{Logger: testLogger(t)})
			require.Error(t, err)
			require.ErrorIs(t, err, ErrTransport)
			if !tt.unreachable {
				require.NotErrorIs(t, err, ErrUnreachable)
				return
			}
			require.ErrorIs(t, err, ErrUnreachable)
			reason := reasonOf(t, err)
			if tt.reason != "" {
				require.Equal(t, tt.reason, reason)
			} else {
				require.Contains(t, []string{"the connection was closed", "connection reset"}, reason)
			}
		})
	}
}

// A session whose server dies ends with an error that says it is
// unreachable, for both transports.
func TestSessionLostIsUnreachable(t *testing.T) {
	for _, tt := range []struct {
		name      string
		flags     []string
		transport Transport
	}{
		{"streamable HTTP", nil, TransportStreamableHTTP},
		{"SSE", []string{"--sse"}, TransportSSE},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, cmd := startTestServerHTTP(t, tt.flags...)
			spec := remoteSpec("far", u)
			spec.Transport = tt.transport
			s := connectWith(t, spec, Options{Logger: testLogger(t)})
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
			select {
			case <-s.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the session did not notice its server's end")
			}
			require.ErrorIs(t, s.Err(), ErrUnreachable)
			require.NotEmpty(t, reasonOf(t, s.Err()))
		})
	}
}

// Probe: one OPTIONS, without the configured headers, answered by any
// status but a gateway's; the failures wrap ErrUnreachable and show the
// URL as written.
func TestProbe(t *testing.T) {
	streamable, _ := startTestServerHTTP(t)
	sse, _ := startTestServerHTTP(t, "--sse")

	var mu sync.Mutex
	var seen []*http.Request
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(recorder.Close)

	tests := []struct {
		name   string
		url    string
		reason string // "" for reachable
	}{
		{"streamable HTTP test server", streamable, ""},
		{"SSE test server", sse, ""},
		{"401 still answers", recorder.URL + "/mcp", ""},
		{"404 still answers", statusServer(t, http.StatusNotFound), ""},
		{"refused", "http://" + closedAddr(t) + "/mcp", "connection refused"},
		{"gateway 503", statusServer(t, http.StatusServiceUnavailable), "HTTP 503 Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := remoteSpec("far", tt.url)
			spec.Headers = map[string]string{"Authorization": "Bearer hush"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Probe(ctx, spec, Options{})
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnreachable)
			require.ErrorIs(t, err, ErrTransport)
			require.Equal(t, tt.reason, reasonOf(t, err))
		})
	}
	mu.Lock()
	require.Len(t, seen, 1)
	require.Equal(t, http.MethodOptions, seen[0].Method)
	require.Empty(t, seen[0].Header.Get("Authorization"), "no configured header, no token")
	require.Empty(t, seen[0].Header.Get("Mcp-Session-Id"))
	mu.Unlock()

	// The URL as written, never its expanded secret.
	spec := remoteSpec("far", "http://"+closedAddr(t)+"/v1/s3cr3t/mcp")
	spec.Shown = "http://host/v1/${KEY}/mcp"
	err := Probe(context.Background(), spec, Options{})
	require.ErrorIs(t, err, ErrUnreachable)
	require.NotContains(t, err.Error(), "s3cr3t")

	err = Probe(context.Background(), localServer("here"), Options{})
	require.ErrorContains(t, err, "only a remote server can be probed")
	require.False(t, errors.Is(err, ErrUnreachable))
}
