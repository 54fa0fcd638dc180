package mcpregistry

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorded serves answers recorded from the real registry server
// (github.com/modelcontextprotocol/registry v1.5.0 on PostgreSQL, seeded
// as TestRegistryE2E in cmd/freecode seeds it), at the paths they were
// asked at.
func recorded(t *testing.T) *Client {
	t.Helper()
	file := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "v0.1", name))
		require.NoError(t, err)
		return b
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/v0.1/servers" && q.Get("cursor") == "":
			w.Write(file("servers-page1.json"))
		case r.URL.Path == "/v0.1/servers" && q.Get("cursor") == "io.github.modelcontextprotocol/server-memory:1.1.0":
			w.Write(file("servers-page2.json"))
		case r.URL.EscapedPath() == "/v0.1/servers/io.github.modelcontextprotocol%2Fserver-memory/versions":
			w.Write(file("memory-versions.json"))
		case r.URL.EscapedPath() == "/v0.1/servers/io.github.modelcontextprotocol%2Fserver-memory/versions/1.0.0":
			w.Write(file("memory-1.0.0.json"))
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			w.Write(file("notfound.json"))
		}
	}))
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, ts.Client(), Limits{PageSize: 2})
	require.NoError(t, err)
	return c
}

func TestRecorded(t *testing.T) {
	c := recorded(t)
	es, err := c.Search(t.Context(), "", SearchOptions{})
	require.NoError(t, err, "the last page is empty and has no cursor")
	require.Len(t, es, 2)
	assert.Equal(t, "com.example/weather-remote", es[0].Server.Name)
	assert.Equal(t, "1.1.0", es[1].Server.Version)
	assert.True(t, es[1].Official.IsLatest)
	assert.False(t, es[1].Official.PublishedAt.IsZero())

	vs, err := c.Versions(t.Context(), "io.github.modelcontextprotocol/server-memory")
	require.NoError(t, err)
	require.Len(t, vs, 2)

	e, err := c.Get(t.Context(), "io.github.modelcontextprotocol/server-memory", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", e.Server.Version)
	assert.Equal(t, "src/memory", e.Server.Repository.Subfolder)
	plan, err := Map(e.Server, Options{LookPath: lookAll})
	require.NoError(t, err)
	assert.Equal(t, []string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"}, plan.Command)

	_, err = c.Get(t.Context(), "io.example/none", "")
	assert.ErrorIs(t, err, ErrNotFound)
}
