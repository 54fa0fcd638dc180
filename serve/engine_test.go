package serve

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
)

// The controller's refusals reach the API as what they mean: an unknown
// server is a 404, a disabled or held one a 409, each with the
// controller's message.
func TestRunRestartRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	repo := filepath.Join(home, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".freecode"), 0o755))
	project := servetest.File{T: t, Path: filepath.Join(repo, ".freecode", "settings.json")}
	project.Write(map[string]any{"mcp": map[string]any{"servers": []any{servetest.Local("proj", testServerBin)}}}, false)
	off := servetest.Local("off", testServerBin)
	off["enabled"] = false
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(servetest.Config(off), true)
	opts := options(home)
	opts.Sources.Project = project.Path
	d := start(t, opts)
	d.WaitPhase("off", "disabled")
	held := d.WaitPhase("proj", "untrusted")

	for name, want := range map[string]struct {
		code int
		msg  string
	}{
		"off":  {http.StatusConflict, `restart "off": server is disabled (enable it first)`},
		"proj": {http.StatusConflict, `restart "proj": server is held: ` + held.Reason},
		"nope": {http.StatusNotFound, `restart "nope": unknown server`},
	} {
		err := d.Client.Restart(t.Context(), name)
		var apiErr *api.Error
		require.ErrorAs(t, err, &apiErr, name)
		assert.Equal(t, want.code, apiErr.Status, name)
		assert.Equal(t, want.msg, apiErr.Message, name)
	}
	_, err := d.Client.Logs(t.Context(), "nope")
	require.ErrorIs(t, err, api.ErrNotFound)
	_, err = d.Client.FollowLogs(t.Context(), "nope")
	require.ErrorIs(t, err, api.ErrNotFound)
	lines, err := d.Client.Logs(t.Context(), "off")
	require.NoError(t, err)
	assert.Empty(t, lines.Lines)
}

// One Run per home: a second one returns at once, naming the first, which
// goes on unaffected.
func TestRunRefusesASecondOnTheHome(t *testing.T) {
	home := servetest.ShortHome(t)
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(servetest.Config(), false)
	d := start(t, options(home))
	err := Run(t.Context(), options(home))
	require.ErrorContains(t, err, "freecode serve is already running for "+home)
	st := d.Status()
	assert.Equal(t, os.Getpid(), st.ServePID)
	assert.Equal(t, filepath.Join(home, "config.json"), st.ConfigPath)
}
