package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func srvJSON(name, version string) string {
	return fmt.Sprintf(`{"server":{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":%q,"description":"d","version":%q,"packages":[{"registryType":"npm","identifier":"x","version":%q,"transport":{"type":"stdio"}}]},"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","publishedAt":"2025-09-16T16:43:44.243434Z","updatedAt":"2025-09-16T16:43:44.243434Z","isLatest":true}}}`, name, version, version)
}

func newClient(t *testing.T, h http.HandlerFunc, l Limits) *Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, ts.Client(), l)
	require.NoError(t, err)
	return c
}

func TestSearchPages(t *testing.T) {
	var queries []string
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/v0.1/servers", r.URL.Path)
		queries = append(queries, r.URL.RawQuery)
		switch r.URL.Query().Get("cursor") {
		case "":
			fmt.Fprintf(w, `{"servers":[%s,%s],"metadata":{"nextCursor":"c2","count":2}}`, srvJSON("io.github.a/mem", "1.0.0"), srvJSON("io.github.b/mem", "2.0.0"))
		case "c2":
			fmt.Fprintf(w, `{"servers":[%s],"metadata":{"count":1}}`, srvJSON("io.github.c/mem", "3.0.0"))
		}
	}, Limits{PageSize: 2})
	es, err := c.Search(t.Context(), " mem ", SearchOptions{})
	require.NoError(t, err)
	require.Len(t, es, 3)
	assert.Equal(t, "io.github.c/mem", es[2].Server.Name)
	assert.Equal(t, StatusActive, es[0].Official.Status)
	assert.True(t, es[0].Official.IsLatest)
	assert.Equal(t, c.Base(), es[0].Registry)
	assert.Equal(t, []string{"limit=2&search=mem&version=latest", "cursor=c2&limit=2&search=mem&version=latest"}, queries)
}

func TestGet(t *testing.T) {
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/v0.1/servers/io.github.a%2Fmem/versions/1.0.0":
			fmt.Fprint(w, srvJSON("io.github.a/mem", "1.0.0"))
		case "/v0.1/servers/io.github.a%2Fother/versions/latest":
			fmt.Fprint(w, srvJSON("io.github.z/mem", "1.0.0"))
		default:
			http.Error(w, `{"title":"Not Found","status":404,"detail":"Server not found"}`, http.StatusNotFound)
		}
	}, Limits{})
	e, err := c.Get(t.Context(), "io.github.a/mem", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", e.Server.Version)
	assert.Regexp(t, `^sha256:`, e.Digest)
	_, err = c.Get(t.Context(), "io.github.a/none", "")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = c.Get(t.Context(), "io.github.a/other", "")
	assert.ErrorIs(t, err, ErrBadAnswer, "an answer for another server")
}

// TestHostile: a registry that is down, slow, or answers garbage or too
// much gets a clear error within a bound.
func TestHostile(t *testing.T) {
	big := strings.Repeat(" ", 2<<10)
	cases := []struct {
		name string
		h    http.HandlerFunc
		l    Limits
		want error
		sub  string
	}{
		{"garbage", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>hi</html>") }, Limits{}, ErrBadAnswer, ""},
		{"wrong shape", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"servers":[{"server":"x"}]}`) }, Limits{}, ErrBadAnswer, ""},
		{"huge body", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"servers":[]`+big+`}`) }, Limits{MaxBodyBytes: 1 << 10}, ErrTooLarge, "over 1024 bytes"},
		{"too many on a page", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"servers":[%s,%s],"metadata":{}}`, srvJSON("a.b/c", "1"), srvJSON("a.b/d", "1"))
		}, Limits{PageSize: 1}, ErrBadAnswer, "a page of 2 servers"},
		{"cursor loop", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"servers":[%s],"metadata":{"nextCursor":"same"}}`, srvJSON("a.b/c", "1"))
		}, Limits{}, ErrBadAnswer, "does not advance"},
		{"endless pages", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"servers":[%s],"metadata":{"nextCursor":"c%s"}}`, srvJSON("a.b/c", "1"), r.URL.Query().Get("cursor"))
		}, Limits{MaxPages: 3}, ErrTooLarge, "more than 3 pages"},
		{"too many servers", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"servers":[%s,%s],"metadata":{}}`, srvJSON("a.b/c", "1"), srvJSON("a.b/d", "1"))
		}, Limits{MaxServers: 1}, ErrTooLarge, "more than 1 servers"},
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"title":"Internal Server Error","detail":"db down"}`, 500)
		}, Limits{}, ErrUnavailable, "db down"},
		{"slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, Limits{Timeout: 200 * time.Millisecond}, ErrUnavailable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.h, tc.l)
			start := time.Now()
			_, err := c.Search(t.Context(), "x", SearchOptions{})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.sub)
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

func TestDown(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	base := ts.URL
	ts.Close()
	c, err := New(base, nil, Limits{})
	require.NoError(t, err)
	_, err = c.Search(t.Context(), "x", SearchOptions{})
	assert.ErrorIs(t, err, ErrUnavailable)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Search(ctx, "x", SearchOptions{})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

func TestNewRefuses(t *testing.T) {
	for _, b := range []string{"ftp://x", "registry.example.com", "https://x/?q=1", "https://"} {
		_, err := New(b, nil, Limits{})
		assert.Error(t, err, b)
	}
}
