package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// HostNames returns the hosts HostConfig knows, as --print-config names
// them.
func HostNames() []string { return []string{"claude", "cursor", "vscode", "codex"} }

// TokenEnvVar is the environment variable the Claude Code, Cursor and
// Codex snippets of an HTTP gateway read the bearer token from, so that the
// snippet, which may well be committed with a project, holds no secret.
const TokenEnvVar = "FREECODE_GATEWAY_TOKEN"

// tokenInput is the id of the VS Code input that asks for the token (and
// keeps it in VS Code's secret storage).
const tokenInput = "freecode-gateway-token"

// Launch is how a host reaches the gateway: the command it starts (stdio),
// or the URL of a gateway serving HTTP and the file its token is in.
type Launch struct {
	// Name is the server's name in the host's config.
	Name    string
	Command string
	Args    []string
	// Env is set for the command (FREECODE_HOME, when not the default).
	Env map[string]string
	// URL and TokenFile: an HTTP gateway; Command is then unused.
	URL, TokenFile string
	// CallTimeout is the longest a call may run (the largest of
	// mcp.callTimeout and the servers' callTimeout): a host with a shorter
	// wait of its own (Codex) is told to wait longer (codexToolTimeout).
	CallTimeout time.Duration
}

// codexStartupTimeout is what a Codex snippet waits for the gateway's
// answer to initialize: StartupWait, which the gateway may take, and
// some; Codex's own default (10 s) is shorter.
const codexStartupTimeout = StartupWait + 10*time.Second

// codexToolTimeout is what a Codex snippet waits for a call that may run
// callTimeout: twice that (a read-only call is retried once after a
// transport failure) and a minute for an approval question and the round
// trips, and never less than Codex's own default of a minute.
func codexToolTimeout(callTimeout time.Duration) int {
	return int(max(2*callTimeout+time.Minute, time.Minute).Round(time.Second) / time.Second)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// HostConfig is the config snippet host needs to reach the gateway as l
// says, and where it goes:
//
//   - claude: Claude Code's .mcp.json (a project) or `claude mcp add-json`;
//   - cursor: Cursor's ~/.cursor/mcp.json (or .cursor/mcp.json);
//   - vscode: VS Code's .vscode/mcp.json, whose key is "servers";
//   - codex: Codex's ~/.codex/config.toml, a [mcp_servers.<name>] table.
//
// No snippet holds the HTTP gateway's token: Claude Code (${VAR}), Cursor
// (${env:VAR}) and Codex (bearer_token_env_var) read it from TokenEnvVar,
// VS Code asks for it once (an input with "password": true); where says
// how to set it.
func HostConfig(host string, l Launch) (snippet, where string, err error) {
	entry := map[string]any{}
	token := fmt.Sprintf("export %s=\"$(cat %s)\" before starting the host", TokenEnvVar, shellQuote(l.TokenFile))
	if l.URL != "" {
		entry["url"] = l.URL
	} else {
		entry["command"] = l.Command
		entry["args"] = l.Args
		if len(l.Env) > 0 {
			entry["env"] = l.Env
		}
	}
	switch host {
	case "claude":
		where := ".mcp.json of a project (or: claude mcp add-json " + l.Name + " '<the inner object>')"
		if l.URL != "" {
			entry["type"] = "http"
			entry["headers"] = map[string]string{"Authorization": "Bearer ${" + TokenEnvVar + "}"}
			where += "; " + token
		}
		return jsonSnippet(map[string]any{"mcpServers": map[string]any{l.Name: entry}}), where, nil
	case "cursor":
		where := "~/.cursor/mcp.json (or .cursor/mcp.json of a project)"
		if l.URL != "" {
			entry["headers"] = map[string]string{"Authorization": "Bearer ${env:" + TokenEnvVar + "}"}
			where += "; " + token
		}
		return jsonSnippet(map[string]any{"mcpServers": map[string]any{l.Name: entry}}), where, nil
	case "vscode":
		doc := map[string]any{"servers": map[string]any{l.Name: entry}}
		where := ".vscode/mcp.json of a workspace"
		if l.URL != "" {
			entry["type"] = "http"
			entry["headers"] = map[string]string{"Authorization": "Bearer ${input:" + tokenInput + "}"}
			doc["inputs"] = []map[string]any{{"type": "promptString", "id": tokenInput, "password": true,
				"description": "FreeCode gateway token (the content of " + l.TokenFile + ")"}}
			where += "; VS Code asks for the token once: paste the content of " + l.TokenFile
		} else {
			entry["type"] = "stdio"
		}
		return jsonSnippet(doc), where, nil
	case "codex":
		where := "~/.codex/config.toml"
		if l.URL != "" {
			entry = map[string]any{"url": l.URL, "bearer_token_env_var": TokenEnvVar}
			where += "; " + token
		}
		entry["startup_timeout_sec"] = int(codexStartupTimeout / time.Second)
		if l.CallTimeout > 0 {
			entry["tool_timeout_sec"] = codexToolTimeout(l.CallTimeout)
		}
		b, err := toml.Marshal(map[string]any{"mcp_servers": map[string]any{l.Name: entry}})
		if err != nil {
			return "", "", fmt.Errorf("codex snippet: %w", err)
		}
		// The outer table needs no header of its own.
		return strings.TrimPrefix(string(b), "[mcp_servers]\n"), where, nil
	}
	return "", "", fmt.Errorf("unknown host %q: want one of %s", host, strings.Join(HostNames(), ", "))
}

func jsonSnippet(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ") // maps of strings always encode
	return string(b) + "\n"
}
