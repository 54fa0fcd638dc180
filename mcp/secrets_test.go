package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

// pathSecret stands for a key that a hosted server takes in its URL's
// path, configured as https://host/v1/${TOKEN}/mcp.
const pathSecret = "tok-PATH-S3CRET-5d1c"

// logCapture collects every line a logger writes, at any verbosity.
type logCapture struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (c *logCapture) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (c *logCapture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// withSecretPath is a remote server whose configured URL has ${TOKEN} in
// its path: rawURL is served under /v1/<pathSecret>, and rawURL with that
// segment written as ${TOKEN} is the URL as written.
func withSecretPath(name, rawURL string, tr Transport) Spec {
	srv := remoteServer(name, rawURL, tr)
	srv.Shown = strings.Replace(rawURL, "/v1/"+pathSecret+"/", "/v1/${TOKEN}/", 1)
	return srv
}

// requireNoSecret fails if pathSecret (also percent-encoded or cut short)
// appears in any of texts.
func requireNoSecret(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		require.NotContains(t, s, pathSecret, what)
		require.NotContains(t, s, pathSecret[4:], what)
	}
}

// A key in the URL's path shows in no error and no log line of a remote
// session, whether the connect fails (401, 404, connection refused), the
// server goes away mid-session, or a call fails after that; for each
// transport. The URL shows as written.
func TestRemoteSecretInPathShownNowhere(t *testing.T) {
	// A hosted server that refuses the key with 401 and echoes the path.
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such key in "+r.URL.Path, http.StatusUnauthorized)
	}))
	defer refuse.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := l.Addr().String()
	require.NoError(t, l.Close())

	for _, tr := range []Transport{TransportAuto, TransportStreamableHTTP, TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			flags := []string{"--base-path", "/v1/" + pathSecret}
			if tr == TransportSSE {
				flags = append(flags, "--sse")
			}
			u, cmd := startTestServerHTTP(t, flags...)
			require.Contains(t, u, pathSecret)
			endpoint := strings.TrimSuffix(strings.TrimSuffix(u, "/mcp"), "/sse")

			failures := map[string]string{
				"401":                refuse.URL + "/v1/" + pathSecret + "/mcp",
				"404":                endpoint + "/nothing-here",
				"connection refused": "http://" + closedAddr + "/v1/" + pathSecret + "/mcp",
			}
			for what, raw := range failures {
				t.Run(what, func(t *testing.T) {
					var logs logCapture
					srv := withSecretPath("hosted", raw, tr)
					_, err := Connect(context.Background(), srv, Options{Logger: logs.logger()})
					require.Error(t, err)
					t.Log(err)
					requireNoSecret(t, "connect error", err.Error())
					requireNoSecret(t, "log", logs.text())
					require.Contains(t, err.Error(), "/v1/${TOKEN}/", "the URL as written")
				})
			}

			t.Run("lost", func(t *testing.T) {
				var logs logCapture
				srv := withSecretPath("hosted", u, tr)
				s, err := Connect(context.Background(), srv, Options{Logger: logs.logger()})
				require.NoError(t, err)
				defer s.Close()
				res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`), nil)
				require.NoError(t, err)
				require.Equal(t, "hi", textOf(t, res))

				// The server goes away: the session ends, a call fails.
				killGroup(cmd)
				_, callErr := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"again"}`), nil)
				require.Error(t, callErr)
				waitClosed(t, s.Done(), "Done after the server died")
				require.ErrorIs(t, s.Err(), ErrTransport)
				_, closedErr := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"after"}`), nil)
				require.Error(t, closedErr)
				require.NoError(t, s.Close())
				t.Logf("lost: %v\ncall: %v\nafter: %v", s.Err(), callErr, closedErr)
				requireNoSecret(t, "errors", s.Err().Error(), callErr.Error(), closedErr.Error())
				requireNoSecret(t, "log", logs.text())
				require.Contains(t, logs.text(), "session ended")
			})
		})
	}
}

// A secret in the host (which DNS errors name without the URL) shows as
// written too.
func TestRemoteSecretInHostShownAsWritten(t *testing.T) {
	var logs logCapture
	srv := remoteServer("hosted", "http://"+pathSecret+".invalid/mcp", TransportAuto)
	srv.Shown = "http://${HOST}/mcp"
	_, err := Connect(context.Background(), srv, Options{Logger: logs.logger()})
	require.Error(t, err)
	t.Log(err)
	requireNoSecret(t, "unknown host", err.Error(), logs.text())
	require.Contains(t, err.Error(), fmt.Sprintf("cannot reach %s", srv.Shown))
}
