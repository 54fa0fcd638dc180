package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is where the bearer token of the HTTP endpoint is kept, in
// the home: a 0600 file in a 0700 directory.
func TokenFile(home string) string { return filepath.Join(home, "gateway", "token") }

// tokenBytes is the token's length before hex encoding.
const tokenBytes = 32

// LoadToken returns the HTTP endpoint's bearer token, made (random, and
// kept in TokenFile) the first time. The directory is made private, and a
// token file that others can read is refused rather than used.
func LoadToken(home string) (string, error) {
	path := TokenFile(home)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("make %s private: %w", dir, err)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("%s can be read by others (mode %o): remove it, and a new token is made", path, fi.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		if tok := strings.TrimSpace(string(b)); len(tok) >= 2*tokenBytes {
			return tok, nil
		}
		return "", fmt.Errorf("%s holds no token: remove it, and a new token is made", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tok, nil
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
				"$FREECODE_HOME/gateway/token (see `freecode mcp serve --print-config`)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
