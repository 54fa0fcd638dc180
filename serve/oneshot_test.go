package serve

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// oneShotOf is the OneShotOptions of home's config.json (written from
// conf) with every server of it.
func oneShotOf(t *testing.T, home string, conf map[string]any) OneShotOptions {
	t.Helper()
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, false)
	opts := options(home)
	v, err := schema.NewValidator()
	require.NoError(t, err)
	cfg, err := v.LoadDesired(opts.Sources, schema.LoadOptions{})
	require.NoError(t, err)
	return OneShotOptions{Options: opts, Config: cfg, Servers: cfg.MCP.Servers}
}

// A one-shot engine starts its servers once and answers as serve does;
// a disabled server asked for is started all the same.
func TestOneShotStartsItsServers(t *testing.T) {
	home := t.TempDir()
	ts := servetest.Local("ts", testServerBin, "--resources", "1", "--prompts")
	ts["enabled"] = false
	o, err := NewOneShot(t.Context(), oneShotOf(t, home, servetest.Config(ts)))
	require.NoError(t, err)
	defer o.Close()
	st, err := o.ServerTools(t.Context(), "ts")
	require.NoError(t, err)
	assert.Equal(t, wire.PhaseReady, st.Phase)
	assert.NotEmpty(t, st.Tools)
	rs, err := o.Resources(t.Context(), "")
	require.NoError(t, err)
	require.Len(t, rs.Servers, 1)
	assert.NotEmpty(t, rs.Servers[0].Resources)
	assert.Empty(t, o.Failed())
}

// A failed start is NewOneShot's error, the start's own error kept for
// errors.As; with Partial the others run and Failed names it.
func TestOneShotFailedStart(t *testing.T) {
	home := t.TempDir()
	conf := servetest.Config(servetest.Local("broken", "/bin/sh", "-c", "exit 3"), servetest.Local("ts", testServerBin))
	opts := oneShotOf(t, home, conf)
	_, err := NewOneShot(t.Context(), opts)
	var se *StartError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "broken", se.Server)
	var exit *mcp.ExitError
	assert.ErrorAs(t, err, &exit, "the start's own error")

	opts.Partial = true
	o, err := NewOneShot(t.Context(), opts)
	require.NoError(t, err)
	defer o.Close()
	require.Len(t, o.Failed(), 1)
	assert.Equal(t, "broken", o.Failed()[0].Server)
	st, err := o.ServerTools(t.Context(), "ts")
	require.NoError(t, err)
	assert.Equal(t, wire.PhaseReady, st.Phase)
}
