package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
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
