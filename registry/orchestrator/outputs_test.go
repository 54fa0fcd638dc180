package orchestrator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// writeAged writes a file of size bytes in dir whose mtime is age before now.
func writeAged(t *testing.T, dir, name string, size int, now time.Time, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, make([]byte, size), 0o600))
	require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	return p
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestPruneOutputsByAge(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	writeAged(t, dir, "old", 10, now, 25*time.Hour)
	writeAged(t, dir, "day", 10, now, 23*time.Hour)
	kept := writeAged(t, dir, "kept-old", 10, now, 48*time.Hour)
	writeAged(t, dir, "new", 10, now, time.Minute)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, PruneOutputs(dir, now, OutputMaxAge, OutputMaxTotalBytes, []string{kept}))
	require.ElementsMatch(t, []string{"day", "kept-old", "new", "sub"}, names(t, dir))
}

func TestPruneOutputsBySizeOldestFirst(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	writeAged(t, dir, "a-oldest", 400, now, 4*time.Hour)
	writeAged(t, dir, "b", 400, now, 3*time.Hour)
	writeAged(t, dir, "c", 400, now, 2*time.Hour)
	just := writeAged(t, dir, "d-just-written", 400, now, 0)
	// 1600 bytes, at most 900 kept: a and b go, the oldest first.
	require.NoError(t, PruneOutputs(dir, now, OutputMaxAge, 900, []string{just}))
	require.ElementsMatch(t, []string{"c", "d-just-written"}, names(t, dir))
	// What was just written stays even alone over the bound.
	require.NoError(t, PruneOutputs(dir, now, OutputMaxAge, 100, []string{just}))
	require.ElementsMatch(t, []string{"d-just-written"}, names(t, dir))
}

func TestEstimateTokensCountsDecodedBinary(t *testing.T) {
	img := make([]byte, 300_000)
	res := wire.CallResult{Content: []wire.Content{{Type: "image", MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(img)}}}
	require.Equal(t, (300_000+len("image/png")+3)/4, EstimateTokens(res))
	require.Equal(t, 3, EstimateTokens(wire.TextResult("0123456789")))
}

// Writing the capped result is what prunes the directory.
func TestCapOutputPrunesOldOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), OutputsDirName)
	require.NoError(t, os.Mkdir(dir, 0o755))
	now := time.Now()
	writeAged(t, dir, "stale.json", 10, now, OutputMaxAge+time.Hour)
	res, err := capOutput(dir, 1000, "mcp.maxOutputTokens", "mcp__s__t", wire.TextResult(strings.Repeat("x\n", 5000)), now)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "[output capped: the result of mcp__s__t is about 2500 tokens")
	got := names(t, dir)
	require.Len(t, got, 2)
	require.NotContains(t, got, "stale.json")
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "an existing directory is made 0700")
}

// A binary result over the cap is kept too; with no outputs directory
// usable, the pointer says the result could not be kept (never a silent
// cut).
func TestCapOutputBinaryAndUnwritable(t *testing.T) {
	img := wire.CallResult{Content: []wire.Content{{Type: "image", MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(make([]byte, 200_000))}}}
	dir := filepath.Join(t.TempDir(), OutputsDirName)
	res, err := capOutput(dir, 25000, "mcp.maxOutputTokens", "mcp__s__shot", img, time.Now())
	require.NoError(t, err)
	require.Contains(t, res.Text(), "is about 50003 tokens (0 bytes of text; content blocks: 1)")
	require.Contains(t, res.Text(), "The whole result is kept as JSON in "+dir)
	require.Len(t, names(t, dir), 1)

	blocked := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocked, nil, 0o600))
	res, err = capOutput(filepath.Join(blocked, OutputsDirName), 1000, "mcp.maxOutputTokens", "mcp__s__t", wire.TextResult(strings.Repeat("y", 10_000)), time.Now())
	require.NoError(t, err)
	require.Contains(t, res.Text(), "It could NOT be kept: outputs directory:")
	require.Contains(t, res.Text(), "--- head (4 KiB) ---\nyyyy")
}

// The cap applies to MCP tools only, per source, and only with an
// outputs directory.
func TestRunCapsOnlyMCPResults(t *testing.T) {
	big := wire.TextResult(strings.Repeat("z", 40_000)) // 10000 tokens
	reg := registry.NewRegistry(nil)
	tool := func(id, source string) registry.Tool {
		return registry.Tool{ID: id, Source: source, ReadOnly: true,
			Call: func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) { return big, nil }}
	}
	_, err := reg.ReplaceSource(registry.SourceBuiltin, []registry.Tool{tool("own", registry.SourceBuiltin)})
	require.NoError(t, err)
	_, err = reg.ReplaceSource("a", []registry.Tool{tool("mcp__a__t", "a")})
	require.NoError(t, err)
	_, err = reg.ReplaceSource("b", []registry.Tool{tool("mcp__b__t", "b")})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), OutputsDirName)
	lim := Limits{OutputDir: dir, Default: SourceLimits{MaxOutputTokens: 5000}, Sources: map[string]SourceLimits{"b": {MaxOutputTokens: 20000, OwnOutputCap: true}}}
	o := New(Options{Registry: reg, Rules: func() Rules { return Rules{Allow: []string{"*"}} }, Limits: func() Limits { return lim }})
	calls := []Call{{ID: "1", Tool: "own"}, {ID: "2", Tool: "mcp__a__t"}, {ID: "3", Tool: "mcp__b__t"}}
	out := o.Run(context.Background(), calls)
	require.Equal(t, big, out[0].Result, "built-in results are not capped")
	require.Contains(t, out[1].Result.Text(), "[output capped: the result of mcp__a__t is about 10000 tokens")
	require.Equal(t, big, out[2].Result, "b's own cap is higher")

	lim.OutputDir = ""
	out = o.Run(context.Background(), calls)
	require.Equal(t, big, out[1].Result, "no outputs directory: no cap")
}
