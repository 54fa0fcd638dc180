package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequireTokenScheme: the bearer scheme is matched in any case (RFC
// 7235); the token itself exactly.
func TestRequireTokenScheme(t *testing.T) {
	token := strings.Repeat("ab", tokenBytes)
	srv := httptest.NewServer(requireToken(token, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()
	for _, c := range []struct {
		auth string
		want int
	}{
		{"Bearer " + token, http.StatusNoContent},
		{"bearer " + token, http.StatusNoContent},
		{"BEARER " + token, http.StatusNoContent},
		{"Bearer " + strings.ToUpper(token), http.StatusUnauthorized},
		{"Basic " + token, http.StatusUnauthorized},
		{"Bearer", http.StatusUnauthorized},
		{token, http.StatusUnauthorized},
		{"", http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.want, resp.StatusCode, "Authorization: %.12s…", c.auth)
	}
}

// TestConcurrentFirstRunsShareOneToken: gateways started at once in a new
// home all get the same token, whole; none fails, and the file is 0600.
func TestConcurrentFirstRunsShareOneToken(t *testing.T) {
	const runs = 8
	for round := range 20 {
		home := t.TempDir()
		start := make(chan struct{})
		toks := make([]string, runs)
		errs := make([]error, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				<-start
				toks[i], errs[i] = LoadToken(home)
			})
		}
		close(start)
		wg.Wait()
		for i := range runs {
			require.NoError(t, errs[i], "round %d, run %d", round, i)
			require.Len(t, toks[i], 2*tokenBytes)
			require.Equal(t, toks[0], toks[i], "round %d: run %d got another token", round, i)
		}
		b, err := os.ReadFile(TokenFile(home))
		require.NoError(t, err)
		require.Equal(t, toks[0]+"\n", string(b))
		fi, err := os.Stat(TokenFile(home))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		entries, err := os.ReadDir(filepath.Dir(TokenFile(home)))
		require.NoError(t, err)
		require.Len(t, entries, 1, "temporary files are left in the token's directory")
	}
}

// TestBadTokenFilesSayWhatToDo: a token file others can read, one that is
// not a file, or one that holds no token is refused, saying what to do;
// the token in it is not used.
func TestBadTokenFilesSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"readable by others", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("ab", tokenBytes)), 0o644) },
			"can be read by others (mode 644): remove it"},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o700) }, "is not a regular file"},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }, "holds no token: remove it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			path := TokenFile(home)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, c.make(path))
			require.NoError(t, os.Chmod(filepath.Dir(path), 0o700))
			_, err := LoadToken(home)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
