package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TokenFile is where the bearer token of the HTTP endpoint is kept, in
// the home: a 0600 file in a 0700 directory.
func TokenFile(home string) string { return filepath.Join(home, "gateway", "token") }

// tokenBytes is the token's length before hex encoding.
const tokenBytes = 32

// LoadToken returns the HTTP endpoint's bearer token, made (random, and
// kept in TokenFile) the first time. The directory is made private, and a
// token file that others can read, or that is not the user's, is refused
// rather than used.
//
// A new token is written whole to a private temporary file first and then
// linked into place, which fails if a token is there already: gateways
// started at once all get the one token that won, and none reads a file
// half written.
func LoadToken(home string) (string, error) {
	path := TokenFile(home)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("make %s private: %w", dir, err)
	}
	tok, err := readToken(path)
	if !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	tok = hex.EncodeToString(raw)
	if err := writeNew(path, tok+"\n"); errors.Is(err, os.ErrExist) {
		// Another gateway made one meanwhile: that is the token.
		return readToken(path)
	} else if err != nil {
		return "", err
	}
	return tok, nil
}

// readToken reads the token in path, refusing a file others can read or
// that belongs to another user; the error wraps os.ErrNotExist when there
// is none.
func readToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w (remove it, and a new token is made)", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (mode %s): remove it, and a new token is made", path, fi.Mode())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s can be read by others (mode %o): remove it, and a new token is made", path, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("%s belongs to user %d, not to you: remove it, and a new token is made", path, st.Uid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w (make it readable by you alone, chmod 600, or remove it and a new token is made)", path, err)
	}
	if tok := strings.TrimSpace(string(b)); len(tok) >= 2*tokenBytes {
		return tok, nil
	}
	return "", fmt.Errorf("%s holds no token: remove it, and a new token is made", path)
}

// writeNew makes path hold data, whole, unless path exists: an error
// wrapping os.ErrExist then. The data goes to a 0600 temporary file in
// path's directory, which is then hard-linked as path; on a file system
// without hard links, path is created exclusively and written (a reader
// could then see it before it is whole, and says it holds no token).
func writeNew(path, data string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	err = os.Link(tmp, path)
	if err == nil || errors.Is(err, os.ErrExist) {
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		return nil
	}
	// No hard links here (some FUSE and network file systems).
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := out.WriteString(data); err != nil {
		out.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// requireToken lets through only requests with "Authorization: Bearer
// token" (the scheme in any case, as RFC 7235 has it); the others get 401
// with a WWW-Authenticate challenge that names no token.
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if token == "" || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="freecode mcp serve"`)
			http.Error(w, "a bearer token is required: the token of `freecode mcp serve --http` is in "+
				"$FREECODE_HOME/gateway/token (`freecode mcp serve --http ADDR --print-config HOST` says how a host reads it)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardOrigin refuses, with 403 and before any token is looked at, the
// requests a web page could have made a browser send (DNS rebinding, a
// cross-origin fetch): on a connection to a loopback address, a Host
// header that names no loopback host; on any connection, an Origin header
// whose host is neither a loopback host nor the Host header's. A host
// application sends no Origin, or its own. On a listener other hosts can
// reach (--allow-remote) a rebound name comes as both the Origin and the
// Host, and passes: there the bearer token, which no web page can read,
// is what keeps a page out.
func guardOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil && loopbackHost(local.String()) && !loopbackHost(r.Host) {
			http.Error(w, "forbidden: the Host header names no loopback host, and the gateway listens on loopback", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || (!loopbackHost(u.Host) && !strings.EqualFold(hostOnly(u.Host), hostOnly(r.Host))) {
				http.Error(w, "forbidden: the Origin header is neither a loopback origin nor the gateway's own", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is addr (host or host:port, IPv6 in brackets or not) without
// its port and brackets.
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.Trim(addr, "[]")
}

// loopbackHost reports whether addr names a loopback host: localhost (or a
// name under .localhost), or a loopback IP address.
func loopbackHost(addr string) bool {
	h := strings.ToLower(strings.TrimSuffix(hostOnly(addr), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
