package schema

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ourMCPKeys are the members "mcp" may hold (config.cue #MCP).
var ourMCPKeys = []string{"servers", "pollInterval", "callTimeout", "maxArgumentBytes", "maxOutputTokens", "toolBudget", "limits", "lifecycle", "idleTimeout", "telemetry"}

// foreignFormat reports a file that lists servers the way another host
// does — Claude Desktop's, Claude Code's, Cursor's and Gemini CLI's
// "mcpServers", VS Code's "servers", OpenCode's "mcp" map — so that it is
// never "valid (0 servers)": each is a file-level error saying what the
// file looks like and how to import it. It also returns the paths whose
// CUE errors only repeat this (they are dropped).
func foreignFormat(file string, lines *lineIndex, root *node) (Errors, [][]string) {
	var errs Errors
	var foreign [][]string
	add := func(path []string, msg string) {
		e := &Error{File: file, Path: path, Msg: msg + "; " + importHint(file)}
		locate(e, lines, root)
		errs = append(errs, e)
	}
	if n := root.member("mcpServers"); n != nil && n.kind == '{' && anyServerLike(n) {
		add([]string{"mcpServers"}, fmt.Sprintf(`this looks like %s ("mcpServers" maps names to servers), not FreeCode's "mcp": {"servers": [...]}`, mcpServersHost(file)))
	}
	if n := root.member("servers"); n != nil && n.kind == '{' && anyServerLike(n) {
		add([]string{"servers"}, `this looks like a VS Code mcp.json ("servers" maps names to servers), not FreeCode's "mcp": {"servers": [...]}`)
	}
	mcp := root.member("mcp")
	if mcp == nil || mcp.kind != '{' {
		return errs, foreign
	}
	if s := mcp.member("servers"); s != nil && s.kind == '{' {
		add([]string{"mcp", "servers"}, `mcp.servers maps names to servers, as OpenCode's config does; FreeCode's is a list: "servers": [{"name": ..., "type": ...}]`)
		foreign = append(foreign, []string{"mcp", "servers"})
	}
	var named []string
	for _, m := range mcp.members {
		if !slices.Contains(ourMCPKeys, m.key) && serverLike(m.val) {
			named = append(named, m.key)
			foreign = append(foreign, []string{"mcp", m.key})
		}
	}
	if len(named) > 0 {
		add([]string{"mcp", named[0]}, fmt.Sprintf(`this looks like an OpenCode config ("mcp" maps names to servers: %s), not FreeCode's "mcp": {"servers": [...]}`, quoteList(named)))
	}
	return errs, foreign
}

// importHint says how to bring the servers of file into the user config.
func importHint(file string) string {
	return "import them with `freecode mcp import --from " + shellWord(file) + "`"
}

// shellWord quotes s for a shell command line when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`|&;<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mcpServersHost names the host a file with "mcpServers" is likely of, by
// its name.
func mcpServersHost(file string) string {
	base, dir := filepath.Base(file), filepath.Base(filepath.Dir(file))
	switch {
	case base == "claude_desktop_config.json":
		return "a Claude Desktop config"
	case base == ".claude.json" || base == ".mcp.json":
		return "a Claude Code config"
	case dir == ".cursor":
		return "a Cursor mcp.json"
	case dir == ".gemini":
		return "a Gemini CLI settings.json"
	}
	return "a Claude Desktop, Claude Code, Cursor or Gemini CLI config"
}

// serverLike reports whether n looks like one server of another host: an
// object with a command, a url or a type.
func serverLike(n *node) bool {
	if n == nil || n.kind != '{' {
		return false
	}
	for _, k := range []string{"command", "url", "httpUrl", "type"} {
		if n.member(k) != nil {
			return true
		}
	}
	return false
}

// anyServerLike reports whether some member of object n is serverLike.
func anyServerLike(n *node) bool {
	return slices.ContainsFunc(n.members, func(m member) bool { return serverLike(m.val) })
}

func quoteList(names []string) string {
	const most = 3
	q := make([]string, 0, most+1)
	for i, n := range names {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(names)-most))
			break
		}
		q = append(q, quote(n))
	}
	return strings.Join(q, ", ")
}
