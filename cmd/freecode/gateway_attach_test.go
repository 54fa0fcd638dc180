package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// The gateway attaches only to a serve that runs what it would: the same
// config file and project, and with --builtins the same directory.
func TestUnlikeGateway(t *testing.T) {
	st := wire.Status{ServePID: 7, ConfigPath: "/h/config.json", Project: "/p/.freecode/settings.json", Root: "/p"}
	src := schema.Sources{User: "/h/config.json", Project: "/p/.freecode/settings.json"}
	in := func(dir string) func() (string, error) { return func() (string, error) { return dir, nil } }
	for _, tc := range []struct {
		name     string
		src      schema.Sources
		builtins bool
		wd       func() (string, error)
		want     string
	}{
		{"same", src, false, in("/elsewhere"), ""},
		{"same with builtins", src, true, in("/p/"), ""},
		{"other config", schema.Sources{User: "/other.json", Project: src.Project}, false, in("/p"), "freecode serve (pid 7) watches another config file, /h/config.json"},
		{"other project", schema.Sources{User: src.User, Project: "/q/.freecode/settings.json"}, false, in("/q"), "freecode serve (pid 7) reads the project settings /p/.freecode/settings.json"},
		{"no project here", schema.Sources{User: src.User}, false, in("/x"), "freecode serve (pid 7) reads the project settings /p/.freecode/settings.json"},
		{"builtins elsewhere", src, true, in("/p/sub"), "freecode serve (pid 7) runs the built-in tools in /p"},
		{"builtins, no working directory", src, true, func() (string, error) { return "", errors.New("gone") }, "freecode serve (pid 7) runs the built-in tools in /p"},
	} {
		assert.Equal(t, tc.want, unlikeGateway(st, tc.src, tc.builtins, tc.wd), tc.name)
	}
	none := st
	none.Project = ""
	assert.Equal(t, "freecode serve (pid 7) reads no project settings, this directory's are /p/.freecode/settings.json", unlikeGateway(none, src, false, in("/p")))
}

// A directory reached through a symlink is the same directory.
func TestUnlikeGatewayFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	st := wire.Status{ConfigPath: "/h/config.json", Root: dir}
	src := schema.Sources{User: "/h/config.json"}
	assert.Empty(t, unlikeGateway(st, src, true, func() (string, error) { return link, nil }))
	assert.NotEmpty(t, unlikeGateway(st, src, true, func() (string, error) { return t.TempDir(), nil }))
}
