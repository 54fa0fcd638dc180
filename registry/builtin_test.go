package registry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
)

func TestBuiltinsReadWrite(t *testing.T) {
	dir := t.TempDir()
	r := registry.NewRegistry(event.NewBus())
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: dir}))
	require.Equal(t, []string{registry.SourceBuiltin}, r.Sources())
	read, ok := r.Get("read")
	require.True(t, ok)
	require.True(t, read.ReadOnly)
	write, ok := r.Get("write")
	require.True(t, ok)
	require.False(t, write.ReadOnly)

	// Registering again with fresh closures is not a change.
	tools, err := registry.Builtins(registry.BuiltinOptions{Root: dir})
	require.NoError(t, err)
	changed, err := r.ReplaceSource(registry.SourceBuiltin, tools)
	require.NoError(t, err)
	require.False(t, changed)

	o := newOrch(t, r, func(o *orchestrator.Options) {
		o.Rules = func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"write"}} }
	})
	content := "one\ntwo\nthree\nfour\n"
	out := o.Run(testCtx(t), []orchestrator.Call{
		{ID: "w", Tool: "write", Args: json.RawMessage(`{"path":"sub/dir/f.txt","content":` + jsonString(content) + `}`)},
		{ID: "r", Tool: "read", Args: json.RawMessage(`{"path":"sub/dir/f.txt","offset":2,"limit":2}`)},
		{ID: "abs", Tool: "read", Args: json.RawMessage(`{"path":` + jsonString(filepath.Join(dir, "sub/dir/f.txt")) + `}`)},
		{ID: "escape", Tool: "read", Args: json.RawMessage(`{"path":"../outside"}`)},
		{ID: "absout", Tool: "read", Args: json.RawMessage(`{"path":"/etc/passwd"}`)},
		{ID: "missing", Tool: "read", Args: json.RawMessage(`{"path":"nope.txt"}`)},
		{ID: "badarg", Tool: "read", Args: json.RawMessage(`{"path":"f","limit":0,"extra":true}`)},
		{ID: "past", Tool: "read", Args: json.RawMessage(`{"path":"sub/dir/f.txt","offset":10}`)},
	})
	for _, oc := range out[:3] {
		require.NoError(t, oc.Err, oc.ID)
		require.False(t, oc.Result.IsError, oc.ID)
	}
	got, err := os.ReadFile(filepath.Join(dir, "sub/dir/f.txt"))
	require.NoError(t, err)
	require.Equal(t, content, string(got))
	require.Equal(t, "two\nthree\n(output truncated after line 3; continue with offset 4)\n", out[1].Result.Text())
	require.Equal(t, content, out[2].Result.Text())
	for _, oc := range out[3:6] {
		require.NoError(t, oc.Err, oc.ID)
		require.True(t, oc.Result.IsError, oc.ID)
	}
	require.ErrorIs(t, out[6].Err, orchestrator.ErrInvalidArgs)
	require.Contains(t, out[7].Result.Text(), "past the end")
}

func TestBuiltinSymlinkEscape(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	tools, err := registry.Builtins(registry.BuiltinOptions{Root: dir})
	require.NoError(t, err)
	res, err := tools[0].Call(testCtx(t), json.RawMessage(`{"path":"link/secret"}`), nil)
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.False(t, strings.Contains(res.Text(), "s\n"))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// newOrch is an orchestrator over r, as the host builds one, with mod
// applied to its options.
func newOrch(t *testing.T, r *registry.Registry, mod func(*orchestrator.Options)) *orchestrator.Orchestrator {
	t.Helper()
	opts := orchestrator.Options{Registry: r, Logger: logr.Discard()}
	if mod != nil {
		mod(&opts)
	}
	return orchestrator.New(opts)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
