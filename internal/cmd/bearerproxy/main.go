// Command bearerproxy is a test-only reverse proxy that adds
// "Authorization: Bearer <token>" to every request it forwards, the token
// read once from a file. It lets a client that cannot send headers of its
// own — the official MCP conformance suite's server runner — reach `freecode
// mcp serve --http`, whose token check stays on, unchanged.
//
// It forwards the request as the client sent it otherwise: the Host and
// Origin headers too (so that the gateway's DNS-rebinding checks see what
// the client sent), and it streams answers as they come (SSE). It listens on
// loopback only, writes the address it listens on to --addr-file, and ends
// on SIGINT or SIGTERM. The token is never printed.
//
// Usage: bearerproxy --target http://127.0.0.1:PORT --token-file FILE --addr-file FILE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bearerproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	target := flag.String("target", "", "the URL to forward to (scheme and host:port)")
	tokenFile := flag.String("token-file", "", "the file holding the bearer token")
	addrFile := flag.String("addr-file", "", "write the address listened on (host:port) to this file")
	listen := flag.String("listen", "127.0.0.1:0", "the loopback address to listen on")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--target %q: want http://HOST:PORT", *target)
	}
	raw, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return fmt.Errorf("token: %s is empty", *tokenFile)
	}
	host, _, err := net.SplitHostPort(*listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: want a loopback host:port", *listen)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("addr file: %w", err)
		}
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // what the client sent, for the Host check
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE: every event as it comes
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "bearerproxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
