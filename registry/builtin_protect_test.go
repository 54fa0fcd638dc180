package registry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
)

// protectedWorkspace is a workspace that contains FreeCode's home, as when
// serve runs in ~: ws/.freecode/config.json holds a provider key.
func protectedWorkspace(t *testing.T) (ws, home string) {
	t.Helper()
	ws = t.TempDir()
	home = filepath.Join(ws, ".freecode")
	require.NoError(t, os.MkdirAll(home, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers":{"anthropic":{"apiKey":"sk-secret"}}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain\n"), 0o644))
	return ws, home
}

func TestBuiltinsAskForFilesInTheHome(t *testing.T) {
	ws, home := protectedWorkspace(t)
	require.NoError(t, os.Symlink(".freecode/config.json", filepath.Join(ws, "link")))
	require.NoError(t, os.Symlink(".freecode", filepath.Join(ws, "dirlink")))
	require.NoError(t, os.Link(filepath.Join(home, "config.json"), filepath.Join(ws, "hardlink")))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	r := registry.NewRegistry(nil)
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: ws, Protected: []string{home}}))

	var asked []orchestrator.ApprovalRequest
	answer := false
	o := newOrch(t, r, func(o *orchestrator.Options) {
		// Even rules that allow both tools outright do not skip the question.
		o.Rules = func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"read", "write"}} }
		o.Approver = orchestrator.ApproverFunc(func(_ context.Context, req orchestrator.ApprovalRequest) (bool, error) {
			asked = append(asked, req)
			return answer, nil
		})
	})
	read := func(path string) orchestrator.Call {
		return orchestrator.Call{ID: path, Tool: "read", Args: json.RawMessage(`{"path":` + jsonString(path) + `}`)}
	}
	sensitive := []orchestrator.Call{
		read(".freecode/config.json"),
		read(filepath.Join(home, "config.json")),
		read("sub/../.freecode/config.json"),
		read("link"),
		read("dirlink/config.json"),
		read("hardlink"),
		{ID: "write", Tool: "write", Args: json.RawMessage(`{"path":".freecode/config.json","content":"{}"}`)},
		{ID: "write-new", Tool: "write", Args: json.RawMessage(`{"path":"dirlink/new/servers.json","content":"{}"}`)},
	}
	out := o.Run(testCtx(t), append(sensitive, read("notes.txt")))
	for i, c := range sensitive {
		require.ErrorIs(t, out[i].Err, orchestrator.ErrNotApproved, c.ID)
		require.NotContains(t, out[i].Result.Text(), "sk-secret", c.ID)
	}
	require.NoError(t, out[len(sensitive)].Err)
	require.Equal(t, "plain\n", out[len(sensitive)].Result.Text())
	require.Len(t, asked, len(sensitive), "only the protected files asked")
	require.Equal(t, ".freecode/config.json is inside FreeCode's home "+home+" (its config holds provider keys); it is read or written only with your approval", asked[0].Reason)
	require.Contains(t, asked[5].Reason, "hardlink is another name of "+filepath.Join(home, "config.json"))
	b, err := os.ReadFile(filepath.Join(home, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), "sk-secret", "the refused write changed nothing")
	require.NoDirExists(t, filepath.Join(home, "new"))

	// Approved, the read goes ahead.
	answer = true
	out = o.Run(testCtx(t), []orchestrator.Call{read("link")})
	require.NoError(t, out[0].Err)
	require.Contains(t, out[0].Result.Text(), "sk-secret")
}

// The tools check the file they act on again: a call that was not approved
// (its file looked harmless when it was checked) is refused if the file
// turns out to be protected, as after a symlink swap.
func TestBuiltinsRecheckWhatTheyOpen(t *testing.T) {
	ws, home := protectedWorkspace(t)
	link := filepath.Join(ws, "link")
	require.NoError(t, os.Symlink("notes.txt", link))
	tools, err := registry.Builtins(registry.BuiltinOptions{Root: ws, Protected: []string{home}})
	require.NoError(t, err)
	read, write := tools[0], tools[1]
	args := json.RawMessage(`{"path":"link"}`)
	require.Empty(t, read.Sensitive(args), "a link to notes.txt is harmless")

	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink(".freecode/config.json", link))
	res, err := read.Call(testCtx(t), args)
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Text(), "refusing to read link without approval: it is inside FreeCode's home")
	require.NotContains(t, res.Text(), "sk-secret")

	res, err = write.Call(testCtx(t), json.RawMessage(`{"path":"link","content":"{}"}`))
	require.NoError(t, err)
	require.Contains(t, res.Text(), "refusing to write link without approval")
	b, err := os.ReadFile(filepath.Join(home, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), "sk-secret")

	// With the approval in its context the same call reads.
	res, err = read.Call(registry.WithApproval(testCtx(t)), args)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "sk-secret")
}

// The config file in use may live outside the home (--config FILE).
func TestBuiltinsProtectAConfigFile(t *testing.T) {
	ws := t.TempDir()
	cfg := filepath.Join(ws, "my-config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{}`), 0o600))
	tools, err := registry.Builtins(registry.BuiltinOptions{Root: ws, Protected: []string{cfg, ""}})
	require.NoError(t, err)
	require.Equal(t, "my-config.json is inside FreeCode's config "+cfg+"; it is read or written only with your approval",
		tools[0].Sensitive(json.RawMessage(`{"path":"my-config.json"}`)))
	require.Empty(t, tools[0].Sensitive(json.RawMessage(`{"path":"my-config.json.bak"}`)))
	require.Empty(t, tools[0].Sensitive(json.RawMessage(`{"path":"other"}`)), `"" protects nothing`)
}
