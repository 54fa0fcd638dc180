package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Hosts are the hosts HostConfig knows, as --print-config names them.
var hostNames = []string{"claude", "cursor", "vscode", "codex"}

// HostNames returns the hosts HostConfig knows.
func HostNames() []string { return slices.Clone(hostNames) }

// TokenEnvVar is the environment variable a Codex snippet reads the HTTP
// bearer token from (Codex refuses a token written in its config).
const TokenEnvVar = "FREECODE_GATEWAY_TOKEN"

// Launch is how a host reaches the gateway: the command it starts (stdio),
// or the URL and bearer token of a gateway serving HTTP.
type Launch struct {
	// Name is the server's name in the host's config.
	Name    string
	Command string
	Args    []string
	// Env is set for the command (FREECODE_HOME, when not the default).
	Env map[string]string
	// URL and Token: an HTTP gateway; Command is then unused.
	URL, Token string
}

// HostConfig is the config snippet host needs to reach the gateway as l
// says, and where it goes:
//
//   - claude: Claude Code's .mcp.json (a project) or `claude mcp add-json`;
//   - cursor: Cursor's ~/.cursor/mcp.json (or .cursor/mcp.json);
//   - vscode: VS Code's .vscode/mcp.json, whose key is "servers";
//   - codex: Codex's ~/.codex/config.toml, a [mcp_servers.<name>] table; over
//     HTTP the token comes from TokenEnvVar.
//
// An HTTP snippet holds the token itself, but Codex's: it is the one place
// the token is shown.
func HostConfig(host string, l Launch) (snippet, where string, err error) {
	entry := map[string]any{}
	if l.URL != "" {
		entry["url"] = l.URL
		entry["headers"] = map[string]string{"Authorization": "Bearer " + l.Token}
	} else {
		entry["command"] = l.Command
		entry["args"] = l.Args
		if len(l.Env) > 0 {
			entry["env"] = l.Env
		}
	}
	switch host {
	case "claude":
		if l.URL != "" {
			entry["type"] = "http"
		}
		return jsonSnippet(map[string]any{"mcpServers": map[string]any{l.Name: entry}}),
			".mcp.json of a project (or: claude mcp add-json " + l.Name + " '<the inner object>')", nil
	case "cursor":
		return jsonSnippet(map[string]any{"mcpServers": map[string]any{l.Name: entry}}), "~/.cursor/mcp.json (or .cursor/mcp.json of a project)", nil
	case "vscode":
		if l.URL != "" {
			entry["type"] = "http"
		} else {
			entry["type"] = "stdio"
		}
		return jsonSnippet(map[string]any{"servers": map[string]any{l.Name: entry}}), ".vscode/mcp.json of a workspace", nil
	case "codex":
		where := "~/.codex/config.toml"
		if l.URL != "" {
			entry = map[string]any{"url": l.URL, "bearer_token_env_var": TokenEnvVar}
			where += "; start Codex with " + TokenEnvVar + " set to the token (the content of the gateway's token file)"
		}
		b, err := toml.Marshal(map[string]any{"mcp_servers": map[string]any{l.Name: entry}})
		if err != nil {
			return "", "", fmt.Errorf("codex snippet: %w", err)
		}
		// The outer table needs no header of its own.
		return strings.TrimPrefix(string(b), "[mcp_servers]\n"), where, nil
	}
	return "", "", fmt.Errorf("unknown host %q: want one of %s", host, strings.Join(hostNames, ", "))
}

func jsonSnippet(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ") // maps of strings always encode
	return string(b) + "\n"
}
