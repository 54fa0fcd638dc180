package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
)

// limitedServer serves the API on a fresh socket with the given connection
// options and returns the socket's path.
func limitedServer(t *testing.T, mod func(*ServerOptions)) string {
	t.Helper()
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	require.NoError(t, registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: t.TempDir()}))
	e := newTestEngine(bus, reg, orchestrator.Rules{}, time.Minute)
	var opts ServerOptions
	mod(&opts)
	dir, err := os.MkdirTemp("", "fclim")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", socket)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(e, opts).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return socket
}

// slowBody opens a connection that sends a call's headers and one byte of
// a 1000-byte body, then nothing more.
func slowBody(t *testing.T, socket string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST /v1/tools/read/call HTTP/1.1\r\nHost: freecode\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	return c
}

// status makes one GET /v1/status on its own connection.
func status(ctx context.Context, socket string) error {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://freecode/v1/status", nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// closedByServer reads c until the server closes it (a generous bound
// later than any read timeout of these tests) and returns what it sent.
func closedByServer(c net.Conn) (string, error) {
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// 500 connections that send their body one byte and stall no longer hold
// the server: it answers a normal client meanwhile and closes every one of
// them once its read timeout has passed.
func TestSlowBodiesAreCutOff(t *testing.T) {
	// The read timeout runs from each accept, and the test must have sent
	// every connection's first bytes before it ends: opening 500 takes well
	// over half a second on a loaded machine, where 500 ms made the server
	// close connections the test had not written to yet.
	socket := limitedServer(t, func(o *ServerOptions) { o.ReadTimeout = 3 * time.Second })
	slow := make([]net.Conn, 500)
	for i := range slow {
		slow[i] = slowBody(t, socket)
	}
	require.NoError(t, status(t.Context(), socket), "a normal request is answered while the slow ones are open")

	var wg sync.WaitGroup
	errs := make([]error, len(slow))
	answers := make([]string, len(slow))
	for i, c := range slow {
		wg.Go(func() { answers[i], errs[i] = closedByServer(c) })
	}
	wg.Wait()
	for i := range slow {
		require.NoError(t, errs[i], "connection %d was not closed by the server", i)
		require.Contains(t, answers[i], "400 Bad Request", "connection %d", i)
		require.Contains(t, answers[i], "read arguments", "connection %d", i)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	socket := limitedServer(t, func(o *ServerOptions) { o.IdleTimeout = 200 * time.Millisecond })
	c, err := net.Dial("unix", socket)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: freecode\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	// Kept alive, then closed once idle.
	rest, err := closedByServer(c)
	require.NoError(t, err)
	require.Empty(t, rest)
}

// With MaxConns connections open, the next one waits to be accepted until
// one of them closes.
func TestConnectionsAreCapped(t *testing.T) {
	socket := limitedServer(t, func(o *ServerOptions) { o.MaxConns = 4 })
	held := make([]net.Conn, 4)
	for i := range held {
		// A request answered on it proves the server accepted it; kept
		// alive, it holds its place.
		c, err := net.Dial("unix", socket)
		require.NoError(t, err)
		defer c.Close()
		_, err = fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: freecode\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		held[i] = c
	}
	done := make(chan error, 1)
	go func() { done <- status(context.Background(), socket) }()
	require.Never(t, func() bool { return len(done) > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"a fifth connection was served while four were open")
	held[0].Close()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting connection was not served after one closed")
	}
}
