package auth_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

// BenchmarkRoundTrip compares a request through the auth Transport (token
// from the store, file change check) with the same request carrying the
// same token as a static header, on one local protected server: what the
// Transport adds to every call.
func BenchmarkRoundTrip(b *testing.B) {
	srv := testauth.New(b, testauth.Options{})
	st, err := auth.OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c, err := auth.New(auth.Options{Server: "remote", URL: srv.URL, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	browserTransport := &http.Transport{}
	b.Cleanup(browserTransport.CloseIdleConnections)
	br := &browser{hc: &http.Client{Transport: browserTransport}}
	if _, err := c.Login(context.Background(), br.interaction(io.Discard)); err != nil {
		b.Fatal(err)
	}
	base := &http.Transport{}
	b.Cleanup(base.CloseIdleConnections)
	var header string
	capture := c.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		header = r.Header.Get("Authorization")
		return base.RoundTrip(r)
	}))

	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	send := func(b *testing.B, rt http.RoundTripper, header string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	send(b, capture, "")
	b.Run("transport", func(b *testing.B) {
		rt := c.Transport(base)
		for b.Loop() {
			send(b, rt, "")
		}
	})
	b.Run("static-header", func(b *testing.B) {
		for b.Loop() {
			send(b, base, header)
		}
	})
}
