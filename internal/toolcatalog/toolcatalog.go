// Package toolcatalog holds the tool_search benchmark over real servers:
// the tool lists of real MCP servers from npm as they recorded them
// (testdata/toolcatalogs/<server>.json, written by
// cmd/record-tool-catalogs), everyday tasks written against them with
// every tool that does each (testdata/toolcatalogs/tasks.json), their
// fixed split into a tune and a held-out part, and the figures a ranking
// earns on them. It reads files only, never the network.
package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// Dir is where the catalogs and tasks are, relative to the module root.
const Dir = "testdata/toolcatalogs"

// TasksFile is the tasks' file name in Dir.
const TasksFile = "tasks.json"

// Catalog is what one server listed, and where it came from.
type Catalog struct {
	// Server is the server's name in the config: the server part of its
	// tools' ids. Family groups servers that do the same kind of thing.
	Server string `json:"server"`
	Family string `json:"family"`
	// Package and Version are the npm package the tools were recorded
	// from; ServerInfo and Instructions what its initialize said.
	Package      string `json:"package"`
	Version      string `json:"version"`
	ServerInfo   string `json:"serverInfo,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	Tools        []Tool `json:"tools"`
}

// Tool is one tool as tools/list gave it (the fields a search sees).
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// WriteCatalog writes c to path as indented JSON.
func WriteCatalog(path string, c *Catalog) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// LoadCatalogs reads every catalog in dir, sorted by server.
func LoadCatalogs(dir string) ([]Catalog, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Catalog
	for _, p := range paths {
		if filepath.Base(p) == TasksFile {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var c Catalog
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no catalogs", dir)
	}
	slices.SortFunc(out, func(a, b Catalog) int { return strings.Compare(a.Server, b.Server) })
	return out, nil
}

// Entries registers the catalogs' tools as the servers' (ids as
// mcp.ToolID makes them) and returns the registry's entries.
func Entries(cs []Catalog) ([]registry.Entry, error) {
	reg := registry.NewRegistry(nil)
	noop := func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		return wire.CallResult{}, nil
	}
	for _, c := range cs {
		tools := make([]registry.Tool, 0, len(c.Tools))
		for _, t := range c.Tools {
			tools = append(tools, registry.Tool{ID: mcp.ToolID(c.Server, t.Name), Source: c.Server, Name: t.Name,
				Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Call: noop})
		}
		if _, err := reg.ReplaceSource(c.Server, tools); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Server, err)
		}
	}
	_, entries := reg.Snapshot()
	return entries, nil
}

// Task is one everyday request and every tool that does it.
type Task struct {
	Task string   `json:"task"`
	Want []string `json:"want"`
	// HeldOut is Split(Task), written down so that the split is part of
	// the data: a held-out task is never tuned on.
	HeldOut bool `json:"heldOut"`
}

// Split says whether a task is held out: by a fixed hash of its text
// (FNV-1a, 32 bits, even), decided before the ranking was tuned, so that
// no one chooses which tasks are tuned on.
func Split(task string) bool {
	h := fnv.New32a()
	h.Write([]byte(task))
	return h.Sum32()%2 == 0
}

// LoadTasks reads the tasks. It fails on a task whose HeldOut is not
// Split's, or without tools.
func LoadTasks(path string) ([]Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Tasks []Task `json:"tasks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, t := range f.Tasks {
		if t.HeldOut != Split(t.Task) {
			return nil, fmt.Errorf("%s: %q: heldOut is %v, the split says %v", path, t.Task, t.HeldOut, Split(t.Task))
		}
		if len(t.Want) == 0 {
			return nil, fmt.Errorf("%s: %q wants no tool", path, t.Task)
		}
	}
	return f.Tasks, nil
}

// Figures are what a ranking earns on a set of tasks.
type Figures struct {
	Tasks int
	// RecallAt5 is the share of tasks with an acceptable tool among the
	// first five matches; Top1 with one first; MRR the mean of 1/rank of
	// the first acceptable tool among the first MaxRank (0 when none is).
	RecallAt5, Top1, MRR float64
}

// MaxRank is how many matches MRR looks at.
const MaxRank = 20

// Ranker returns the ids of the best matches for a query, best first.
type Ranker func(query string, limit int) []string

// Measure ranks every task and returns the figures.
func Measure(rank Ranker, tasks []Task) Figures {
	f := Figures{Tasks: len(tasks)}
	if len(tasks) == 0 {
		return f
	}
	for _, t := range tasks {
		for i, id := range rank(t.Task, MaxRank) {
			if slices.Contains(t.Want, id) {
				if i < 5 {
					f.RecallAt5++
				}
				if i == 0 {
					f.Top1++
				}
				f.MRR += 1 / float64(i+1)
				break
			}
		}
	}
	n := float64(len(tasks))
	f.RecallAt5, f.Top1, f.MRR = f.RecallAt5/n, f.Top1/n, f.MRR/n
	return f
}

// String is the figures as a report prints them.
func (f Figures) String() string {
	return fmt.Sprintf("recall@5 %.3f, top-1 %.3f, MRR %.3f (%d tasks)", f.RecallAt5, f.Top1, f.MRR, f.Tasks)
}

// Family is the family of the server of a task's first tool.
func Family(cs []Catalog, t Task) string {
	for _, c := range cs {
		if strings.HasPrefix(t.Want[0], "mcp__"+c.Server+"__") {
			return c.Family
		}
	}
	return ""
}

// Report is the figures of a ranking on the tasks: the held-out part, the
// tune part, and the held-out part of each server family.
type Report struct {
	HeldOut, Tune Figures
	// Families are the held-out figures by family, sorted by family.
	Families []FamilyFigures
}

// FamilyFigures are the held-out figures of one family's tasks.
type FamilyFigures struct {
	Family string
	Figures
}

// MeasureSplit measures rank on the held-out and the tune tasks apart.
func MeasureSplit(rank Ranker, cs []Catalog, tasks []Task) Report {
	var held, tune []Task
	byFamily := map[string][]Task{}
	for _, t := range tasks {
		if t.HeldOut {
			held = append(held, t)
			byFamily[Family(cs, t)] = append(byFamily[Family(cs, t)], t)
		} else {
			tune = append(tune, t)
		}
	}
	r := Report{HeldOut: Measure(rank, held), Tune: Measure(rank, tune)}
	for fam, ts := range byFamily {
		r.Families = append(r.Families, FamilyFigures{fam, Measure(rank, ts)})
	}
	slices.SortFunc(r.Families, func(a, b FamilyFigures) int { return strings.Compare(a.Family, b.Family) })
	return r
}
