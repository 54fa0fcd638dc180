// Command gen-tasks turns testdata/toolcatalogs/tasks.txt (a task and its
// tools, server:tool, a line) into tasks.json: tool ids as mcp.ToolID
// makes them and each task's held-out split (toolcatalog.Split). It fails
// on a tool no recorded catalog lists, or a task written twice.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/freecode/freecode/internal/toolcatalog"
	"github.com/freecode/freecode/mcp"
)

func main() {
	if err := run(toolcatalog.Dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	cs, err := toolcatalog.LoadCatalogs(dir)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, c := range cs {
		for _, t := range c.Tools {
			known[mcp.ToolID(c.Server, t.Name)] = true
		}
	}
	f, err := os.Open(filepath.Join(dir, "tasks.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	var tasks []toolcatalog.Task
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, tools, ok := strings.Cut(line, "|")
		if !ok {
			return fmt.Errorf("tasks.txt: %q: no tools", line)
		}
		t := toolcatalog.Task{Task: strings.TrimSpace(text)}
		if seen[t.Task] {
			return fmt.Errorf("tasks.txt: %q twice", t.Task)
		}
		seen[t.Task] = true
		for _, st := range strings.Fields(tools) {
			server, tool, ok := strings.Cut(st, ":")
			id := mcp.ToolID(server, tool)
			if !ok || !known[id] {
				return fmt.Errorf("tasks.txt: %q: no recorded server lists %s", t.Task, st)
			}
			t.Want = append(t.Want, id)
		}
		t.HeldOut = toolcatalog.Split(t.Task)
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		About string             `json:"about"`
		Tasks []toolcatalog.Task `json:"tasks"`
	}{"Generated from tasks.txt by internal/toolcatalog/cmd/gen-tasks. Everyday tasks over the recorded catalogs, each with every tool that does it; heldOut is the fixed split by a hash of the task text (toolcatalog.Split), made before the ranking was tuned: only the other tasks are tuned on.", tasks}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, toolcatalog.TasksFile), buf.Bytes(), 0o644)
}
