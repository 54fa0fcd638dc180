package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Roots are offered only when the spec lists them: then roots/list
// answers with a file:// URI per directory; without them the session has
// no roots to give.
func TestRoots(t *testing.T) {
	dir := t.TempDir()
	srv := localServer("rooted", "--client-requests")
	srv.Roots = []string{dir, filepath.Join(dir, "sub dir")}
	s := connect(t, srv)
	res, err := s.CallTool(context.Background(), "roots", json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(t, res))
	var got struct {
		Roots []struct{ URI, Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(textOf(t, res)), &got))
	require.Equal(t, []struct{ URI, Name string }{
		{"file://" + dir, filepath.Base(dir)},
		{"file://" + filepath.ToSlash(filepath.Join(dir, "sub%20dir")), "sub dir"},
	}, got.Roots)

	s = connect(t, localServer("rootless", "--client-requests"))
	res, err = s.CallTool(context.Background(), "roots", json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	require.True(t, res.IsError, "no roots listed, none given: %s", textOf(t, res))
}

// server-filesystem, roots-aware, works in the roots it is given instead
// of the directories on its command line.
func TestFilesystemServerTakesRoots(t *testing.T) {
	cmdDir, rootDir := t.TempDir(), t.TempDir()
	srv := npmLocal("fs", npmServer(t, "@modelcontextprotocol/server-filesystem/dist/index.js", cmdDir))
	srv.Roots = []string{rootDir}
	s := connect(t, srv)
	allowed := func() string {
		res, err := s.CallTool(context.Background(), "list_allowed_directories", json.RawMessage(`{}`), nil)
		require.NoError(t, err)
		return textOf(t, res)
	}
	// The server asks for the roots after initialized, in the background.
	require.Eventually(t, func() bool { return containsLine(allowed(), rootDir) }, signalWait, 20*time.Millisecond, "allowed: %s", allowed())
	require.False(t, containsLine(allowed(), cmdDir), "allowed: %s", allowed())
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}
