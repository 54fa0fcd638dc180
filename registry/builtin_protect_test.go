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
	res, err := read.Call(testCtx(t), args, nil)
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Text(), "refusing to read link without approval: it is inside FreeCode's home")
	require.NotContains(t, res.Text(), "sk-secret")

	res, err = write.Call(testCtx(t), json.RawMessage(`{"path":"link","content":"{}"}`), nil)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "refusing to write link without approval")
	b, err := os.ReadFile(filepath.Join(home, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), "sk-secret")

	// With the approval in its context the same call reads.
	res, err = read.Call(registry.WithApproval(testCtx(t)), args, nil)
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

// read reads kept outputs by absolute path without a question, inside the
// home and outside the workspace alike; nothing else of the home opens up,
// and write still asks.
func TestReadKeptOutputs(t *testing.T) {
	ws, home := protectedWorkspace(t)
	outputs := filepath.Join(home, orchestrator.OutputsDirName)
	require.NoError(t, os.Mkdir(outputs, 0o700))
	kept := filepath.Join(outputs, "x.txt")
	require.NoError(t, os.WriteFile(kept, []byte("one\ntwo\nthree\n"), 0o600))
	other := t.TempDir() // a workspace that does not contain the home
	for _, root := range []string{ws, other} {
		r := registry.NewRegistry(nil)
		require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: root, Protected: []string{home}, Outputs: outputs}))
		var asked int
		o := newOrch(t, r, func(o *orchestrator.Options) {
			o.Rules = func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"read", "write"}} }
			o.Approver = orchestrator.ApproverFunc(func(context.Context, orchestrator.ApprovalRequest) (bool, error) {
				asked++
				return false, nil
			})
		})
		out := o.Run(testCtx(t), []orchestrator.Call{
			{ID: "kept", Tool: "read", Args: json.RawMessage(`{"path":` + jsonString(kept) + `,"offset":2,"limit":1}`)},
			{ID: "escape", Tool: "read", Args: json.RawMessage(`{"path":` + jsonString(filepath.Join(outputs, "..", "config.json")) + `}`)},
			{ID: "write", Tool: "write", Args: json.RawMessage(`{"path":` + jsonString(kept) + `,"content":"x"}`)},
		})
		require.NoError(t, out[0].Err, root)
		require.Equal(t, "two\n(output truncated after line 2; continue with offset 3)\n", out[0].Result.Text(), root)
		require.NotContains(t, out[1].Result.Text(), "sk-secret", root)
		require.True(t, out[1].Err != nil || out[1].Result.IsError, root)
		require.True(t, out[2].Err != nil || out[2].Result.IsError, root)
		b, err := os.ReadFile(kept)
		require.NoError(t, err)
		require.Equal(t, "one\ntwo\nthree\n", string(b), "write never writes a kept output")
		if root == ws {
			require.Equal(t, 2, asked, "inside the workspace, the home's config and write ask")
		} else {
			require.Zero(t, asked)
		}
	}
}

// A hard link planted in the outputs directory, which read reads without
// asking, is refused: FreeCode's own outputs have one name, and another
// name of the config would hand out its keys.
func TestReadRefusesHardLinksInOutputs(t *testing.T) {
	ws, home := protectedWorkspace(t)
	outputs := filepath.Join(home, orchestrator.OutputsDirName)
	require.NoError(t, os.Mkdir(outputs, 0o700))
	planted := filepath.Join(outputs, "20260101-mcp__x__y-abc.txt")
	require.NoError(t, os.Link(filepath.Join(home, "config.json"), planted))
	r := registry.NewRegistry(nil)
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: ws, Protected: []string{home}, Outputs: outputs}))
	o := newOrch(t, r, func(o *orchestrator.Options) {
		o.Rules = func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"read"}} }
		o.Approver = orchestrator.ApproverFunc(func(context.Context, orchestrator.ApprovalRequest) (bool, error) {
			t.Error("a read of the outputs asked")
			return false, nil
		})
	})
	out := o.Run(testCtx(t), []orchestrator.Call{{ID: "planted", Tool: "read", Args: json.RawMessage(`{"path":` + jsonString(planted) + `}`)}})
	require.NoError(t, out[0].Err)
	require.True(t, out[0].Result.IsError)
	require.NotContains(t, out[0].Result.Text(), "sk-secret")
	require.Equal(t, "refusing to read "+planted+": it has 2 names (hard links), and the files FreeCode keeps in "+outputs+
		" have one; it may be another name of a protected file", out[0].Result.Text())
}
