package defs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/internal/toolcatalog"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
)

// Floors of the real-catalog benchmark: the held-out figures measured
// when the ranking last changed, less a small margin, so that a change
// that loses held-out tasks fails here. Raise them with the ranking;
// never tune on the held-out tasks to reach them.
const (
	floorHeldOutRecall5 = 0.91
	floorHeldOutTop1    = 0.72
	floorHeldOutMRR     = 0.79
	// floorOldRecall5 is the old 57-task set's recall@5 (the share of a
	// task's tools in the first five, as internal/bench measures it) over
	// the recorded everything, filesystem and memory catalogs.
	floorOldRecall5 = 0.90
)

func catalogIndex(t testing.TB) ([]toolcatalog.Catalog, []registry.Entry, *defs.Index) {
	t.Helper()
	cs, err := toolcatalog.LoadCatalogs(filepath.Join(testutil.RepoRoot(), toolcatalog.Dir))
	require.NoError(t, err)
	entries, err := toolcatalog.Entries(cs)
	require.NoError(t, err)
	return cs, entries, defs.NewIndex(entries)
}

func ranker(ix *defs.Index) toolcatalog.Ranker {
	return func(q string, limit int) []string {
		var ids []string
		for _, m := range ix.Search(q, limit) {
			ids = append(ids, m.ID)
		}
		return ids
	}
}

// tool_search over the recorded tool lists of real npm servers, on
// everyday tasks: the held-out figures stay at their floors, and the old
// query set over three of those servers does not regress. It logs the tune
// figures; the held-out ones only with FC_HELD_OUT set, so that tuning
// runs do not see them.
func TestSearchRealCatalogs(t *testing.T) {
	cs, entries, ix := catalogIndex(t)
	require.GreaterOrEqual(t, len(cs), 20, "servers")
	tasks, err := toolcatalog.LoadTasks(filepath.Join(testutil.RepoRoot(), toolcatalog.Dir, toolcatalog.TasksFile))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(tasks), 120)
	r := toolcatalog.MeasureSplit(ranker(ix), cs, tasks)
	t.Logf("%d servers, %d tools", len(cs), len(entries))
	t.Logf("tune:     %s", r.Tune)
	// The held-out figures only when asked for (FC_HELD_OUT=1): a tuning
	// run sees the tune figures alone, and the floors below still hold.
	if os.Getenv("FC_HELD_OUT") != "" {
		t.Logf("held-out: %s", r.HeldOut)
		for _, f := range r.Families {
			t.Logf("  held-out %-12s %s", f.Family, f.Figures)
		}
	}
	require.GreaterOrEqual(t, r.HeldOut.RecallAt5, floorHeldOutRecall5)
	require.GreaterOrEqual(t, r.HeldOut.Top1, floorHeldOutTop1)
	require.GreaterOrEqual(t, r.HeldOut.MRR, floorHeldOutMRR)

	old := oldRecall5(t, cs)
	t.Logf("old query set recall@5: %.3f", old)
	require.GreaterOrEqual(t, old, floorOldRecall5)
}

// oldRecall5 is internal/bench's recall@5 of its committed query set,
// over the recorded catalogs of the servers it starts.
func oldRecall5(t *testing.T, cs []toolcatalog.Catalog) float64 {
	var three []toolcatalog.Catalog
	for _, c := range cs {
		switch c.Server {
		case "everything", "filesystem", "memory":
			three = append(three, c)
		}
	}
	require.Len(t, three, 3)
	entries, err := toolcatalog.Entries(three)
	require.NoError(t, err)
	ix := defs.NewIndex(entries)
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "internal/bench/testdata/toolsearch-queries.json"))
	require.NoError(t, err)
	var f struct {
		Queries []struct {
			Query string   `json:"query"`
			Want  []string `json:"want"`
		} `json:"queries"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	sum := 0.0
	for _, q := range f.Queries {
		top := map[string]bool{}
		for _, m := range ix.Search(q.Query, 5) {
			top[m.ID] = true
		}
		hit := 0
		for _, w := range q.Want {
			if top[w] {
				hit++
			}
		}
		sum += float64(hit) / float64(min(len(q.Want), 5))
	}
	return sum / float64(len(f.Queries))
}

// With FC_TUNE_MISSES set, TestTuneMisses logs the tune tasks whose first
// match is not acceptable, with the first three: what tuning looks at.
// The held-out tasks are never shown.
func TestTuneMisses(t *testing.T) {
	if os.Getenv("FC_TUNE_MISSES") == "" {
		t.Skip("FC_TUNE_MISSES not set")
	}
	_, _, ix := catalogIndex(t)
	tasks, err := toolcatalog.LoadTasks(filepath.Join(testutil.RepoRoot(), toolcatalog.Dir, toolcatalog.TasksFile))
	require.NoError(t, err)
	for _, task := range tasks {
		if task.HeldOut {
			continue
		}
		ms := ix.Search(task.Task, 3)
		if len(ms) > 0 && slices.Contains(task.Want, ms[0].ID) {
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, fmt.Sprintf("%s %.2f", m.ID, m.Score))
		}
		t.Logf("%q want %v got %v", task.Task, task.Want, got)
	}
}

// The cost of the index: building it over 10k tools (the recorded
// catalogs repeated under 31 server names) and one query over them.
func BenchmarkSearchIndex10k(b *testing.B) {
	cs, err := toolcatalog.LoadCatalogs(filepath.Join(testutil.RepoRoot(), toolcatalog.Dir))
	require.NoError(b, err)
	var many []toolcatalog.Catalog
	for i := range 31 {
		for _, c := range cs {
			c.Server = fmt.Sprintf("%s%02d", c.Server, i)
			many = append(many, c)
		}
	}
	entries, err := toolcatalog.Entries(many)
	require.NoError(b, err)
	b.Run(fmt.Sprintf("build-%d", len(entries)), func(b *testing.B) {
		for b.Loop() {
			defs.NewIndex(entries)
		}
	})
	ix := defs.NewIndex(entries)
	b.Run("query", func(b *testing.B) {
		for b.Loop() {
			ix.Search("take a screenshot of the page", 5)
		}
	})
}
