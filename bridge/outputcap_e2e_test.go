package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// A 2 MB result of a real server is kept whole in a 0600 file under the
// outputs directory, and the model gets one text block that points to it
// with the head and the tail of the text; read reads on from there. A
// small result passes unchanged.
func TestOutputCapKeepsBigResultWhole(t *testing.T) {
	f := startServer(t, testLogger(t), "--big-tool")
	home := t.TempDir()
	outputs := filepath.Join(home, orchestrator.OutputsDirName)
	require.NoError(t, registry.RegisterBuiltins(f.reg, registry.BuiltinOptions{Root: t.TempDir(), Protected: []string{home}, Outputs: outputs}))
	orch := f.orchestrator(orchestrator.Options{Limits: func() orchestrator.Limits {
		return orchestrator.Limits{OutputDir: outputs, Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}}
	}})
	const size = 2 << 20
	want := testserver.BigText(size)

	out := orch.Run(context.Background(), []orchestrator.Call{
		{ID: "big", Tool: id("big"), Args: json.RawMessage(`{"bytes":2097152}`)},
		{ID: "small", Tool: id("big"), Args: json.RawMessage(`{"bytes":1000}`)},
	})
	require.NoError(t, out[0].Err)
	require.NoError(t, out[1].Err)
	require.Equal(t, wire.TextResult(testserver.BigText(1000)), out[1].Result, "a small result passes unchanged")

	res := out[0].Result
	require.Len(t, res.Content, 1)
	text := res.Content[0].Text
	t.Log(text[:strings.Index(text, "--- head")])
	require.Less(t, len(text), 16<<10, "the model gets a pointer, not the result")
	require.Contains(t, text, "[output capped: the result of mcp__ts__big is about 524288 tokens (2097152 bytes of text; content blocks: 1)")
	require.Contains(t, text, "over the cap of 25000 (mcp.maxOutputTokens)")
	require.True(t, strings.HasPrefix(text[strings.Index(text, "--- head"):], "--- head (4 KiB) ---\nline 1 ...."), "head: the start of the text")
	require.Contains(t, text, "--- tail (3.9 KiB) ---\nline 32706 ....", "tail: the end of the text")
	require.True(t, strings.HasSuffix(text, "END\n--- end ---\n"), "tail: the end of the text")

	entries, err := os.ReadDir(outputs)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the result as JSON and its text")
	st, err := os.Stat(outputs)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	var jsonPath, textPath string
	for _, e := range entries {
		p := filepath.Join(outputs, e.Name())
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), p)
		require.Contains(t, text, p, "the pointer names every file")
		switch filepath.Ext(p) {
		case ".json":
			jsonPath = p
		case ".txt":
			textPath = p
		}
	}
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var kept wire.CallResult
	require.NoError(t, json.Unmarshal(data, &kept))
	require.Equal(t, wire.TextResult(want), kept, "the file holds the whole result")
	data, err = os.ReadFile(textPath)
	require.NoError(t, err)
	require.Equal(t, want, string(data))

	// The read the pointer suggests goes on right after the head.
	i := strings.Index(text, "Read more with the read tool: ")
	require.GreaterOrEqual(t, i, 0)
	args := text[i+len("Read more with the read tool: "):]
	args = args[:strings.Index(args, "}")+1]
	more := orch.Run(context.Background(), []orchestrator.Call{{ID: "read", Tool: "read", Args: json.RawMessage(args)}})[0]
	require.NoError(t, more.Err)
	require.False(t, more.Result.IsError, more.Result.Text())
	head := text[strings.Index(text, "---\n")+4:]
	head = head[:strings.Index(head, "--- ")]
	require.True(t, strings.HasPrefix(want, head+more.Result.Text()[:100]), "read continues where the head ends")
}

// A tool's _meta size hint raises mcp.maxOutputTokens for its results, up
// to orchestrator.MaxOutputTokensHint, and never lowers it; a cap the user
// set for the server wins over it.
func TestOutputCapHonoursTheToolsSizeHint(t *testing.T) {
	outputs := filepath.Join(t.TempDir(), orchestrator.OutputsDirName)
	run := func(t *testing.T, hint int, lim orchestrator.Limits, bytes int) string {
		f := startServer(t, testLogger(t), "--big-tool", "--big-hint", strconv.Itoa(hint))
		lim.OutputDir = outputs
		orch := f.orchestrator(orchestrator.Options{Limits: func() orchestrator.Limits { return lim }})
		out := orch.Run(context.Background(), []orchestrator.Call{{ID: "big", Tool: id("big"), Args: json.RawMessage(`{"bytes":` + strconv.Itoa(bytes) + `}`)}})[0]
		require.NoError(t, out.Err)
		return out.Result.Text()
	}
	// 200,000 bytes are 50,000 tokens: over the default cap, under a hint
	// of 400,000 characters (100,000 tokens).
	text := run(t, 400000, orchestrator.Limits{Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}}, 200000)
	require.Equal(t, testserver.BigText(200000), text, "the hint raised the cap: the result is whole")

	// A hint over the ceiling counts as the ceiling.
	over := (orchestrator.MaxOutputTokensHint + 1000) * 4
	text = run(t, 100*over, orchestrator.Limits{Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}}, over)
	require.Contains(t, text, "[output capped: the result of mcp__ts__big is about")
	require.Contains(t, text, "over the cap of 125000 (the tool's _meta size hint, at most 125000)")

	// A hint below the cap changes nothing: 200 characters are 50 tokens.
	text = run(t, 200, orchestrator.Limits{Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}}, 20000)
	require.Equal(t, testserver.BigText(20000), text, "a small hint does not lower the cap")
	text = run(t, 200, orchestrator.Limits{Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}}, 200000)
	require.Contains(t, text, "over the cap of 25000 (mcp.maxOutputTokens)")

	// The user's cap for the server wins.
	text = run(t, 400000, orchestrator.Limits{Default: orchestrator.SourceLimits{MaxOutputTokens: 25000}, Sources: map[string]orchestrator.SourceLimits{"ts": {MaxOutputTokens: 10000, OwnOutputCap: true}}}, 200000)
	require.Contains(t, text, `over the cap of 10000 (maxOutputTokens of server "ts")`)
}
