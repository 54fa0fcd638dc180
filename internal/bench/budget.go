package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/toolcatalog"
	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// BudgetOptions configure Budget.
type BudgetOptions struct {
	// TestServers × ToolsPerServer generated test-server tools join the
	// real npm servers' tools in the "real-servers set".
	TestServers, ToolsPerServer int
	// SearchTools is the size of the generated index tool_search is timed
	// on; SearchReps how many searches the median is over.
	SearchTools, SearchReps int
	// Queries is the committed query set (QueriesFile in the repo).
	Queries string
	// Loads is how many tools are loaded one by one.
	Loads int
}

// QueriesFile is the query set Budget measures recall on, relative to the
// module root.
const QueriesFile = "internal/bench/testdata/toolsearch-queries.json"

// RecallTarget is the recall@5 tool_search must reach on the query set.
const RecallTarget = 0.9

// npmServer is a real server of the real-servers set: its name and the
// script under testdata/npm/node_modules with its arguments ("{dir}" is a
// scratch directory).
type npmServer struct {
	name, script string
	args         []string
}

func npmServers() []npmServer {
	return []npmServer{
		{"everything", "@modelcontextprotocol/server-everything/dist/index.js", []string{"stdio"}},
		{"filesystem", "@modelcontextprotocol/server-filesystem/dist/index.js", []string{"{dir}"}},
		{"memory", "@modelcontextprotocol/server-memory/dist/index.js", nil},
	}
}

// Budget measures the context budget: the advertised definitions of the
// real-servers set with and without deferral, tool_search's latency and
// recall, and what loading tools one by one does to the list.
func Budget(ctx context.Context, cfg Config, opts BudgetOptions) ([]Row, error) {
	const group = "10. context budget"
	scratch, err := os.MkdirTemp("", "fc-bench-budget-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	modules := filepath.Join(cfg.Repo, "testdata", "npm", "node_modules")
	node := filepath.Join(modules, ".bin", "node")

	reg := registry.NewRegistry(nil)
	var (
		mu       sync.Mutex // guards sessions and errs
		sessions []*mcp.Session
		errs     []error
		wg       sync.WaitGroup
	)
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	connect := func(name string, argv []string, env map[string]string, roots ...string) {
		wg.Go(func() {
			srv := localServer(name, argv)
			srv.Env, srv.Roots = env, roots
			sess, err := mcp.Connect(ctx, controller.MCPSpec(srv), mcp.Options{Logger: logr.Discard()})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			sessions = append(sessions, sess)
			if _, err := reg.ReplaceSource(name, bridge.Tools(sess, sess.Tools())); err != nil {
				errs = append(errs, err)
			}
		})
	}
	for _, s := range npmServers() {
		args := slices.Clone(s.args)
		for i, a := range args {
			if a == "{dir}" {
				args[i] = scratch
			}
		}
		// Roots offered, as a project's config would: server-everything
		// lists get-roots-list only to a client with roots.
		connect(s.name, append([]string{node, filepath.Join(modules, filepath.FromSlash(s.script))}, args...),
			map[string]string{"MEMORY_FILE_PATH": filepath.Join(scratch, "memory.jsonl")}, scratch)
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("real servers (npm ci --prefix testdata/npm): %w", errs[0])
	}
	_, realEntries := reg.Snapshot()
	for i := range opts.TestServers {
		connect(fmt.Sprintf("ts%02d", i), []string{cfg.TestServer, "--tools", fmt.Sprint(opts.ToolsPerServer)}, nil)
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("test servers: %w", errs[0])
	}

	// The host's view: built-ins and tool_search beside the servers.
	cache := defs.NewDefsCache(reg, defs.Options{Policy: defs.Policy{Budget: schema.DefaultToolBudget}})
	search, err := cache.SearchTool()
	if err != nil {
		return nil, err
	}
	if err := registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: scratch, Extra: []registry.Tool{search}}); err != nil {
		return nil, err
	}
	var rows []Row
	size := func(d defs.Defs) string {
		return fmt.Sprintf("%d tools, %.1f KiB, %d tokens", len(d.Tools), float64(4*d.EstimatedTokens)/1024, d.EstimatedTokens)
	}
	n := len(reg.List())
	for _, dl := range dialects {
		cache.SetPolicy(defs.Policy{})
		fullList := cache.Defs(dl)
		cache.SetPolicy(defs.Policy{Budget: schema.DefaultToolBudget})
		deferred := cache.Defs(dl)
		if deferred.Deferral == nil {
			return nil, fmt.Errorf("%s: %d tokens were not deferred at the default budget %d", dl, fullList.EstimatedTokens, schema.DefaultToolBudget)
		}
		rows = append(rows, Row{Group: group,
			Name:     fmt.Sprintf("advertised definitions (%s), real-servers set: %d tools (3 npm servers + %d test servers × %d + built-ins), deferred at toolBudget %d vs all (without tool_search)", dl, n, opts.TestServers, opts.ToolsPerServer, schema.DefaultToolBudget),
			Value:    size(deferred),
			Baseline: size(fullList),
			Ratio:    fmt.Sprintf("%.3f×", float64(deferred.EstimatedTokens)/float64(fullList.EstimatedTokens)),
			Target:   fmt.Sprintf("≤ %d tokens", schema.DefaultToolBudget), Verdict: verdict(deferred.EstimatedTokens <= schema.DefaultToolBudget), Runs: 1})
	}
	// The three npm servers alone fit the default budget.
	realOnly := registry.NewRegistry(nil)
	for _, e := range realEntries {
		if _, err := realOnly.ReplaceSource(e.Tool.Source, append(realOnly.SourceTools(e.Tool.Source), e.Tool)); err != nil {
			return nil, err
		}
	}
	rc := defs.NewDefsCache(realOnly, defs.Options{})
	real := rc.Defs(defs.DialectJSONSchema)
	rows = append(rows, Row{Group: group, Name: fmt.Sprintf("advertised definitions (jsonschema), the 3 npm servers alone (%d tools): under toolBudget %d, not deferred", len(real.Tools), schema.DefaultToolBudget),
		Value: size(real), Runs: 1})

	// Latency at scale: a generated index of SearchTools tools.
	big := registry.NewRegistry(nil)
	if err := generatedTools(big, opts.SearchTools); err != nil {
		return nil, err
	}
	bc := defs.NewDefsCache(big, defs.Options{})
	t0 := time.Now()
	if len(bc.Search("export the invoice report of a user", 5)) == 0 {
		return nil, fmt.Errorf("search over %d tools found nothing", opts.SearchTools)
	}
	build := time.Since(t0)
	queries, err := loadQueries(filepath.Join(cfg.Repo, opts.Queries))
	if err != nil {
		return nil, err
	}
	// A task whose tool the servers do not list could never be found:
	// the query set is wrong, not the search.
	for _, q := range queries {
		for _, w := range q.Want {
			if !slices.ContainsFunc(realEntries, func(e registry.Entry) bool { return e.Tool.ID == w }) {
				return nil, fmt.Errorf("%s: %q wants %s, which the servers do not list", opts.Queries, q.Query, w)
			}
		}
	}
	lat := make([]time.Duration, 0, opts.SearchReps)
	for i := range opts.SearchReps {
		q := queries[i%len(queries)].Query
		t := time.Now()
		bc.Search(q, 5)
		lat = append(lat, time.Since(t))
	}
	rows = append(rows,
		Row{Group: group, Name: fmt.Sprintf("tool_search over %d tools: one query (the committed queries in turn)", opts.SearchTools), Value: us(median(lat)), Runs: len(lat)},
		Row{Group: group, Name: fmt.Sprintf("tool_search over %d tools: first query after a change (index build included)", opts.SearchTools), Value: ms(build), Runs: 1},
	)

	// Recall over the real npm servers' tools.
	ix := defs.NewIndex(realEntries)
	var heldOut []query
	for _, q := range queries {
		if q.HeldOut {
			heldOut = append(heldOut, q)
		}
	}
	name := fmt.Sprintf("tool_search recall@5, %d tasks (%s) over the 3 npm servers' %d tools", len(queries), opts.Queries, len(realEntries))
	r := recallAt5(ix, queries, true)
	rows = append(rows,
		Row{Group: group, Name: name, Value: fmt.Sprintf("%.3f", r),
			Target: fmt.Sprintf("≥ %.1f", RecallTarget), Verdict: verdict(r >= RecallTarget), Runs: 1},
		Row{Group: group, Name: name + ": BM25F alone, without the synonyms (reference)", Value: fmt.Sprintf("%.3f", recallAt5(ix, queries, false)), Runs: 1})
	if len(heldOut) > 0 {
		rows = append(rows, Row{Group: group, Name: fmt.Sprintf("tool_search recall@5, the %d held-out tasks alone (written after the ranking was tuned; reference)", len(heldOut)),
			Value: fmt.Sprintf("%.3f", recallAt5(ix, heldOut, true)), Runs: 1})
	}

	// The real-catalog benchmark: recorded tool lists of real npm servers
	// and everyday tasks, split before the ranking was tuned.
	catRows, err := catalogRows(group, filepath.Join(cfg.Repo, toolcatalog.Dir))
	if err != nil {
		return nil, err
	}
	rows = append(rows, catRows...)

	// Loading tools one by one: each changes the version and only appends.
	cache.SetPolicy(defs.Policy{Budget: schema.DefaultToolBudget})
	prev := cache.Defs(defs.DialectJSONSchema)
	versions, appends := 0, 0
	loadOrder := prev.Deferral.Deferred
	if len(loadOrder) < opts.Loads {
		return nil, fmt.Errorf("only %d deferred tools to load", len(loadOrder))
	}
	for _, id := range loadOrder[:opts.Loads] {
		cache.Load([]string{id})
		next := cache.Defs(defs.DialectJSONSchema)
		if next.Version != prev.Version {
			versions++
		}
		p, err := jsonschema.Encode(prev.Tools)
		if err != nil {
			return nil, err
		}
		q, err := jsonschema.Encode(next.Tools)
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(q, p[:len(p)-1]) {
			appends++
		}
		prev = next
	}
	rows = append(rows, Row{Group: group,
		Name:   fmt.Sprintf("loading %d deferred tools one by one: version changes / loads that kept every earlier byte of the list", opts.Loads),
		Value:  fmt.Sprintf("%d / %d of %d", versions, appends, opts.Loads),
		Target: "every load: new version, pure append", Verdict: verdict(versions == opts.Loads && appends == opts.Loads), Runs: 1})
	return rows, nil
}

// query is one task of the query set and the tools that do it.
type query struct {
	Query string   `json:"query"`
	Want  []string `json:"want"`
	// HeldOut marks a task written after the ranking was tuned.
	HeldOut bool `json:"heldOut,omitempty"`
}

func loadQueries(path string) ([]query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Queries []query `json:"queries"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Queries) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return f.Queries, nil
}

// recallAt5 is the mean over queries of the share of each one's tools
// among the first five matches.
func recallAt5(ix *defs.Index, queries []query, expand bool) float64 {
	sum := 0.0
	for _, q := range queries {
		top := map[string]bool{}
		for _, m := range ix.Rank(q.Query, 5, expand) {
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
	return sum / float64(len(queries))
}

// generatedTools registers n tools over a small vocabulary, 50 per source.
func generatedTools(r *registry.Registry, n int) error {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "sync", "export"}
	nouns := []string{"record", "report", "user", "order", "invoice", "ticket", "page", "dataset", "job", "alert"}
	bySource := map[string][]registry.Tool{}
	for i := range n {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		src := fmt.Sprintf("s%03d", i/50)
		name := fmt.Sprintf("%s_%s_%d", v, o, i)
		bySource[src] = append(bySource[src], registry.Tool{ID: "mcp__" + src + "__" + name, Name: name, Description: fmt.Sprintf("%s a %s of service %d", v, o, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer"}}}`),
			Call: func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
				return wire.CallResult{}, nil
			}})
	}
	for src, tools := range bySource {
		if _, err := r.ReplaceSource(src, tools); err != nil {
			return err
		}
	}
	return nil
}

// catalogRows measures tool_search on the recorded catalogs in dir and
// their tasks: held-out figures (the ones that count), tune figures beside
// them, and the held-out figures of each server family.
func catalogRows(group, dir string) ([]Row, error) {
	cs, err := toolcatalog.LoadCatalogs(dir)
	if err != nil {
		return nil, err
	}
	entries, err := toolcatalog.Entries(cs)
	if err != nil {
		return nil, err
	}
	tasks, err := toolcatalog.LoadTasks(filepath.Join(dir, toolcatalog.TasksFile))
	if err != nil {
		return nil, err
	}
	ix := defs.NewIndex(entries)
	r := toolcatalog.MeasureSplit(func(q string, limit int) []string {
		var ids []string
		for _, m := range ix.Search(q, limit) {
			ids = append(ids, m.ID)
		}
		return ids
	}, cs, tasks)
	name := fmt.Sprintf("tool_search on %d real npm servers' %d recorded tools (%s)", len(cs), len(entries), toolcatalog.Dir)
	rows := []Row{
		{Group: group, Name: name + ": held-out tasks, recall@5 / top-1 / MRR", Value: figures(r.HeldOut), Runs: 1,
			Target: "recall@5 ≥ 0.9, top-1 ≥ 0.6", Verdict: verdict(r.HeldOut.RecallAt5 >= 0.9 && r.HeldOut.Top1 >= 0.6)},
		{Group: group, Name: name + ": tune tasks (reference)", Value: figures(r.Tune), Runs: 1},
	}
	for _, f := range r.Families {
		rows = append(rows, Row{Group: group, Name: fmt.Sprintf("%s: held-out tasks of the %s family (reference)", name, f.Family), Value: figures(f.Figures), Runs: 1})
	}
	return rows, nil
}

func figures(f toolcatalog.Figures) string {
	return fmt.Sprintf("%.3f / %.3f / %.3f of %d", f.RecallAt5, f.Top1, f.MRR, f.Tasks)
}
