// Command record-tool-catalogs starts real MCP servers from npm (npx -y
// package@version, in a scratch directory, with dummy credentials) and
// records what each one's tools/list says — every tool's name, title,
// description and input schema — as testdata/toolcatalogs/<server>.json.
// The tool_search benchmark reads those files and never the network; this
// command is how they are refreshed (scripts/record-tool-catalogs.sh).
//
// A server that does not answer tools/list within the timeout is reported
// and its old file, if any, is left as it was.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/freecode/freecode/internal/toolcatalog"
)

// server is one npm server to record: its name in FreeCode's config (the
// server part of its tools' ids), its family (servers that do the same
// kind of thing), package and pinned version, arguments ("{dir}" is a
// scratch directory) and environment (dummy credentials).
type server struct {
	name, family, pkg, version string
	args                       []string
	env                        []string
}

func servers() []server {
	return []server{
		{"github", "code-hosting", "@modelcontextprotocol/server-github", "2025.4.8", nil, []string{"GITHUB_PERSONAL_ACCESS_TOKEN=ghp_dummy"}},
		{"gitlab", "code-hosting", "@modelcontextprotocol/server-gitlab", "2025.4.25", nil, []string{"GITLAB_PERSONAL_ACCESS_TOKEN=glpat-dummy", "GITLAB_API_URL=https://gitlab.invalid/api/v4"}},
		{"git", "code-hosting", "@cyanheads/git-mcp-server", "2.15.3", nil, []string{"MCP_TRANSPORT_TYPE=stdio", "MCP_LOG_LEVEL=error", "GIT_BASE_DIR={dir}"}},
		{"slack", "chat", "@modelcontextprotocol/server-slack", "2025.4.25", nil, []string{"SLACK_BOT_TOKEN=xoxb-dummy", "SLACK_TEAM_ID=T00000000"}},
		{"notion", "docs", "@notionhq/notion-mcp-server", "2.5.2", nil, []string{"NOTION_TOKEN=ntn_dummy"}},
		{"brave-search", "web-search", "@brave/brave-search-mcp-server", "2.1.4", []string{"--transport", "stdio"}, []string{"BRAVE_API_KEY=dummy"}},
		{"tavily", "web-search", "tavily-mcp", "0.2.22", nil, []string{"TAVILY_API_KEY=tvly-dummy"}},
		{"exa", "web-search", "exa-mcp-server", "3.4.1", nil, []string{"EXA_API_KEY=dummy"}},
		{"firecrawl", "web-search", "firecrawl-mcp", "3.26.0", nil, []string{"FIRECRAWL_API_KEY=fc-dummy"}},
		{"fetch", "web-search", "@kazuph/mcp-fetch", "1.6.3", nil, nil},
		{"playwright", "browser", "@playwright/mcp", "0.0.83", nil, nil},
		{"puppeteer", "browser", "@modelcontextprotocol/server-puppeteer", "2025.5.12", nil, []string{"PUPPETEER_SKIP_DOWNLOAD=1"}},
		{"chrome-devtools", "browser", "chrome-devtools-mcp", "1.11.0", nil, nil},
		{"filesystem", "files", "@modelcontextprotocol/server-filesystem", "2026.8.31", []string{"{dir}"}, nil},
		{"desktop-commander", "files", "@wonderwhy-er/desktop-commander", "0.2.52", nil, nil},
		{"kubernetes", "cloud", "mcp-server-kubernetes", "4.1.7", nil, []string{"KUBECONFIG={dir}/kubeconfig"}},
		{"sentry", "monitoring", "@sentry/mcp-server", "0.39.0", []string{"--access-token=dummy"}, []string{"SENTRY_ACCESS_TOKEN=dummy"}},
		{"google-maps", "maps", "@modelcontextprotocol/server-google-maps", "0.6.2", nil, []string{"GOOGLE_MAPS_API_KEY=dummy"}},
		{"memory", "knowledge", "@modelcontextprotocol/server-memory", "2026.8.31", nil, []string{"MEMORY_FILE_PATH={dir}/memory.jsonl"}},
		{"everything", "reference", "@modelcontextprotocol/server-everything", "2026.8.31", []string{"stdio"}, nil},
		{"sequential-thinking", "reference", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31", nil, nil},
		{"context7", "docs", "@upstash/context7-mcp", "4.1.1", nil, nil},
		{"postgres", "database", "@modelcontextprotocol/server-postgres", "0.6.2", []string{"postgresql://dummy:dummy@127.0.0.1:1/dummy"}, nil},
		{"mongodb", "database", "mongodb-mcp-server", "3.0.4", nil, []string{"MDB_MCP_TELEMETRY=disabled"}},
		{"stripe", "payments", "@stripe/mcp", "0.3.3", []string{"--tools=all", "--api-key=sk_test_dummy"}, nil},
		{"supabase", "database", "@supabase/mcp-server-supabase", "0.13.0", nil, []string{"SUPABASE_ACCESS_TOKEN=sbp_dummy"}},
		{"hubspot", "crm", "@hubspot/mcp-server", "0.4.0", nil, []string{"PRIVATE_APP_ACCESS_TOKEN=pat-dummy"}},
	}
}

func main() {
	out := flag.String("out", "testdata/toolcatalogs", "directory the catalogs are written to")
	only := flag.String("only", "", "comma-separated server names to record (default all)")
	jobs := flag.Int("j", 3, "servers started at once")
	timeout := flag.Duration("timeout", 4*time.Minute, "per server, npm install included")
	flag.Parse()
	sem := make(chan struct{}, *jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for _, s := range servers() {
		if *only != "" && !strings.Contains(","+*only+",", ","+s.name+",") {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			defer cancel()
			c, err := record(ctx, s)
			if err == nil {
				err = toolcatalog.WriteCatalog(filepath.Join(*out, s.name+".json"), c)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
				return
			}
			fmt.Printf("%s %s@%s: %d tools\n", s.name, s.pkg, s.version, len(c.Tools))
		})
	}
	wg.Wait()
	if failed > 0 {
		os.Exit(1)
	}
}

// record starts s and asks it for its tools, every page.
func record(ctx context.Context, s server) (*toolcatalog.Catalog, error) {
	dir, err := os.MkdirTemp("", "fc-catalog-"+s.name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kubeconfig), 0o600)
	sub := func(v string) string { return strings.ReplaceAll(v, "{dir}", dir) }
	args := []string{"-y", s.pkg + "@" + s.version}
	for _, a := range s.args {
		args = append(args, sub(a))
	}
	cmd := exec.CommandContext(ctx, "npx", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "NO_COLOR=1")
	for _, e := range s.env {
		cmd.Env = append(cmd.Env, sub(e))
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = nil
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = stdin.Close()
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 1<<20), 64<<20)
	enc := json.NewEncoder(stdin)
	call := func(id int, method string, params any) (json.RawMessage, error) {
		if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
			return nil, err
		}
		for lines.Scan() {
			var msg struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(lines.Bytes(), &msg) != nil || msg.ID == nil || msg.Method != "" {
				continue // a log line on stdout, a notification or a request
			}
			if *msg.ID != id {
				continue
			}
			if msg.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, msg.Error.Message)
			}
			return msg.Result, nil
		}
		if err := lines.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: the server closed its output", method)
	}
	res, err := call(1, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "freecode-record-tool-catalogs", "version": "1"},
	})
	if err != nil {
		return nil, err
	}
	var init struct {
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		return nil, err
	}
	if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	c := &toolcatalog.Catalog{Server: s.name, Family: s.family, Package: s.pkg, Version: s.version,
		ServerInfo: init.ServerInfo.Name, Instructions: init.Instructions}
	cursor := ""
	for id := 2; ; id++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := call(id, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []toolcatalog.Tool `json:"tools"`
			NextCursor string             `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, err
		}
		c.Tools = append(c.Tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(c.Tools) == 0 {
		return nil, fmt.Errorf("no tools")
	}
	return c, nil
}

// kubeconfig is a cluster that is not there: enough for a Kubernetes
// server to start and list its tools.
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:1"}
  name: dummy
contexts:
- context: {cluster: dummy, user: dummy}
  name: dummy
current-context: dummy
users:
- name: dummy
  user: {token: dummy}
`
