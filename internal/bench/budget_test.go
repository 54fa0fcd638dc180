package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

var testServerBin string

func TestMain(m *testing.M) { testutil.Main(m, &testServerBin) }

// The context-budget scenario, small, over the real npm servers: every
// row with a target passes — deferral under the budget, recall@5 on the
// committed query set at least RecallTarget, loads that only append.
func TestBudgetScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	repo := testutil.RepoRoot()
	if _, err := os.Stat(filepath.Join(repo, "testdata/npm/node_modules/.bin/node")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm servers not installed (make deps)")
		}
		t.Skip("npm servers not installed (make deps)")
	}
	rows, err := Budget(t.Context(), Config{TestServer: testServerBin, Repo: repo},
		BudgetOptions{TestServers: 20, ToolsPerServer: 50, SearchTools: 500, SearchReps: 20, Queries: QueriesFile, Loads: 10})
	require.NoError(t, err)
	targets := 0
	for _, r := range rows {
		if r.Target != "" {
			targets++
			require.Equal(t, "PASS", r.Verdict, "%s: %s (target %s)", r.Name, r.Value, r.Target)
		}
		if strings.Contains(r.Name, "recall@5") && !strings.Contains(r.Name, "alone") {
			t.Logf("recall@5 %s", r.Value)
		}
	}
	require.Equal(t, 6, targets, "three dialects, recall, loads, the real catalogs' held-out tasks")
}
