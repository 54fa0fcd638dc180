package mcpregistry

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func serveBytes(t *testing.T, b []byte) (string, string) {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(b) }))
	t.Cleanup(ts.Close)
	sum := sha256.Sum256(b)
	return ts.URL + "/b.mcpb", hex.EncodeToString(sum[:])
}

const manifestJSON = `{"manifest_version":"0.2","name":"b","version":"1.0.0","server":{"type":"node","entry_point":"server/index.js",
	"mcp_config":{"command":"node","args":["${__dirname}/server/index.js","--root","${user_config.root}"],"env":{"API_KEY":"${user_config.api_key}","MODE":"${user_config.mode}","X":"$${OPENAI_API_KEY}"}}},
	"user_config":{"root":{"type":"directory","required":true},"api_key":{"type":"string","sensitive":true,"description":"key"},"mode":{"type":"string","default":"fast"}}}`

func TestInstallBundle(t *testing.T) {
	data := zipOf(t, map[string]string{"manifest.json": manifestJSON, "server/index.js": "console.log(1)\n"})
	u, sum := serveBytes(t, data)
	dir := filepath.Join(t.TempDir(), "mcpb", "b", "1.0.0")
	res, err := InstallBundle(t.Context(), nil, Bundle{URL: u, SHA256: sum}, dir, map[string]string{"root": "/data"})
	require.NoError(t, err)
	assert.Equal(t, []string{"node", dir + "/server/index.js", "--root", "/data"}, res.Command)
	assert.Equal(t, map[string]string{"API_KEY": "${API_KEY}", "MODE": "fast", "X": "$$$${OPENAI_API_KEY}"}, res.Env)
	assert.Equal(t, []Secret{{Var: "API_KEY", For: "bundle setting api_key", Description: "key"}}, res.Secrets)
	got, err := os.ReadFile(filepath.Join(dir, "server", "index.js"))
	require.NoError(t, err)
	assert.Equal(t, "console.log(1)\n", string(got))
}

func TestInstallBundleRefuses(t *testing.T) {
	good := zipOf(t, map[string]string{"manifest.json": manifestJSON})
	cases := []struct {
		name string
		data []byte
		sum  string
		vars map[string]string
		want error
	}{
		{"digest mismatch", good, "0000000000000000000000000000000000000000000000000000000000000000", map[string]string{"root": "/"}, ErrDigest},
		{"not a zip", []byte("hello"), "", nil, ErrBadBundle},
		{"no manifest", zipOf(t, map[string]string{"x": "y"}), "", nil, ErrBadBundle},
		{"zip slip", zipOf(t, map[string]string{"manifest.json": manifestJSON, "../evil": "x"}), "", map[string]string{"root": "/"}, ErrBadBundle},
		{"required setting missing", good, "", nil, ErrMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, sum := serveBytes(t, tc.data)
			if tc.sum != "" {
				sum = tc.sum
			}
			parent := t.TempDir()
			_, err := InstallBundle(t.Context(), nil, Bundle{URL: u, SHA256: sum}, filepath.Join(parent, "b"), tc.vars)
			assert.ErrorIs(t, err, tc.want)
			left, _ := os.ReadDir(parent)
			assert.Empty(t, left, "nothing is written")
		})
	}
}
