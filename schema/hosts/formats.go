package hosts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/freecode/freecode/schema"
)

var (
	claudeCode = &Host{ID: "claude-code", Name: "Claude Code", read: readClaudeCode,
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(env.Home, ".claude.json"), Scope: "user"},
				{Path: filepath.Join(env.Dir, ".mcp.json"), Scope: "project"},
				{Path: filepath.Join(env.Home, ".claude.json"), Scope: "local"},
			}
		}}
	claudeDesktop = &Host{ID: "claude-desktop", Name: "Claude Desktop", read: mcpServers(literalText, false),
		locations: func(env Env) []Location {
			return []Location{{Path: filepath.Join(appDir(env), "Claude", "claude_desktop_config.json"), Scope: "user"}}
		}}
	// anyMCPServers reads a file of "mcpServers" that names no host.
	anyMCPServers = &Host{ID: "mcpServers", Name: "mcpServers", read: mcpServers(genericVars, false),
		locations: func(Env) []Location { return nil }}
	cursor = &Host{ID: "cursor", Name: "Cursor", read: mcpServers(vscodeVars, false),
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(env.Home, ".cursor", "mcp.json"), Scope: "user"},
				{Path: filepath.Join(env.Dir, ".cursor", "mcp.json"), Scope: "project"},
			}
		}}
	vscode = &Host{ID: "vscode", Name: "VS Code", read: readVSCode,
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(appDir(env), "Code", "User", "mcp.json"), Scope: "user"},
				{Path: filepath.Join(env.Dir, ".vscode", "mcp.json"), Scope: "project"},
			}
		}}
	codex = &Host{ID: "codex", Name: "Codex", read: readCodex,
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(env.CodexHome, "config.toml"), Scope: "user"},
				{Path: filepath.Join(env.Dir, ".codex", "config.toml"), Scope: "project"},
			}
		}}
	gemini = &Host{ID: "gemini", Name: "Gemini CLI", read: mcpServers(geminiVars, true),
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(env.Home, ".gemini", "settings.json"), Scope: "user"},
				{Path: filepath.Join(env.Dir, ".gemini", "settings.json"), Scope: "project"},
			}
		}}
	opencode = &Host{ID: "opencode", Name: "OpenCode", read: readOpenCode,
		locations: func(env Env) []Location {
			return []Location{
				{Path: filepath.Join(env.ConfigDir, "opencode", "opencode.json"), Scope: "user"},
				{Path: filepath.Join(env.ConfigDir, "opencode", "opencode.jsonc"), Scope: "user"},
				{Path: filepath.Join(env.Dir, "opencode.json"), Scope: "project"},
				{Path: filepath.Join(env.Dir, "opencode.jsonc"), Scope: "project"},
			}
		}}
)

// appDir is where desktop applications keep their settings: macOS's
// Application Support, else the XDG config directory.
func appDir(env Env) string {
	if env.AppSupport != "" {
		return env.AppSupport
	}
	return env.ConfigDir
}

// workspace is the directory ${workspaceFolder} of a file at loc stands
// for: the project's, for a project file.
func workspace(loc Location, env Env) string {
	if loc.Scope == "project" {
		return env.Dir
	}
	return ""
}

// mcpServers reads the servers of a file's "mcpServers", with strings in
// syn (gem: Gemini CLI's fields, see claudeStyle).
func mcpServers(syn syntax, gem bool) func(Location, []byte, Env) ([]Server, error) {
	return func(loc Location, data []byte, env Env) ([]Server, error) {
		obj, err := parseObject(data)
		if err != nil {
			return nil, err
		}
		return readMap(obj, "mcpServers", loc, &translator{syn: syn, workspace: workspace(loc, env)}, gem)
	}
}

// readMap reads the map of servers obj holds under key (none when it has
// no such member).
func readMap(obj object, key string, loc Location, t *translator, gem bool) ([]Server, error) {
	if !obj.has(key) {
		return nil, nil
	}
	servers, err := obj.object(key)
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		tc := *t
		tc.notes = nil
		out = append(out, claudeStyle(name, servers[name], &tc, gem))
	}
	return out, nil
}

// readClaudeCode reads Claude Code's files: ~/.claude.json holds the
// user's servers in "mcpServers" and, per project directory, the "local"
// ones in "projects" (each with Project set to its directory); a
// project's .mcp.json its shared ones.
func readClaudeCode(loc Location, data []byte, env Env) ([]Server, error) {
	obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	t := &translator{syn: dollarBrace}
	if loc.Scope != "local" {
		return readMap(obj, "mcpServers", loc, t, false)
	}
	if !obj.has("projects") {
		return nil, nil
	}
	projects, err := obj.object("projects")
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, dir := range slices.Sorted(maps.Keys(projects)) {
		var proj object
		if err := json.Unmarshal(projects[dir], &proj); err != nil {
			return nil, fmt.Errorf("projects[%q]: %w", dir, err)
		}
		servers, err := readMap(proj, "mcpServers", loc, t, false)
		if err != nil {
			return nil, fmt.Errorf("projects[%q]: %w", dir, err)
		}
		for i := range servers {
			servers[i].Project = filepath.Clean(dir)
		}
		out = append(out, servers...)
	}
	return out, nil
}

// readVSCode reads a VS Code mcp.json: "servers" by name, with "inputs"
// (prompts for secrets) that ${input:id} refers to.
func readVSCode(loc Location, data []byte, env Env) ([]Server, error) {
	obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	t := &translator{syn: vscodeVars, workspace: workspace(loc, env), inputs: map[string]string{}}
	if obj.has("inputs") {
		var inputs []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		}
		if err := obj.decode("inputs", &inputs); err != nil {
			return nil, err
		}
		for _, in := range inputs {
			t.inputs[in.ID] = in.Description
		}
	}
	return readMap(obj, "servers", loc, t, false)
}

// readOpenCode reads an opencode.json(c): "mcp" maps names to servers of
// "type" "local" (command as a list, environment) or "remote" (url,
// headers); newer versions nest them in "mcp.servers".
func readOpenCode(loc Location, data []byte, _ Env) ([]Server, error) {
	obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	if !obj.has("mcp") {
		return nil, nil
	}
	mcp, err := obj.object("mcp")
	if err != nil {
		return nil, err
	}
	if s, ok := mcp["servers"]; ok {
		var nested object
		if json.Unmarshal(s, &nested) == nil {
			mcp = nested
		}
	}
	var out []Server
	for _, name := range slices.Sorted(maps.Keys(mcp)) {
		t := &translator{syn: opencodeVars}
		s := Server{From: name}
		var f object
		if err := json.Unmarshal(mcp[name], &f); err != nil {
			s.Skip = "it is not an object"
			out = append(out, s)
			continue
		}
		typ, _ := f.str("type")
		switch typ {
		case "local":
			s.Type = schema.Local
			s.Command = f.strings("command", t, &s)
		case "remote":
			s.Type = schema.Remote
			u, _ := f.str("url")
			s.URL = t.text(u)
			s.Headers = f.stringMap("headers", t, &s)
		default:
			s.Skip = fmt.Sprintf("its type %s is neither local nor remote", quote(typ))
		}
		s.Env = f.stringMap("environment", t, &s)
		if e, ok := f.boolean("enabled"); ok {
			s.Disabled = !e
		}
		// OpenCode's timeout bounds fetching the tools, as FreeCode's does.
		s.TimeoutMS = f.millis("timeout", 1, schema.MaxTimeout.Milliseconds(), &s)
		if f.has("oauth") {
			s.Notes = append(s.Notes, "its oauth settings are not imported")
		}
		if f.has("cwd") {
			s.Skip = cwdSkip
		}
		f.ignore(&s, "type", "command", "url", "headers", "environment", "enabled", "timeout", "oauth", "cwd")
		t.finish(&s)
		out = append(out, s)
	}
	return out, nil
}

// readCodex reads Codex's config.toml: a [mcp_servers.<name>] table per
// server, local (command, args, env, env_vars) or streamable HTTP (url,
// bearer_token_env_var, http_headers, env_http_headers). Codex expands
// nothing in it: what names a variable is a field of its own.
func readCodex(_ Location, data []byte, _ Env) ([]Server, error) {
	var doc struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read TOML: %w", err)
	}
	var out []Server
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		f := doc.MCPServers[name]
		t := &translator{syn: literalText}
		s := Server{From: name}
		str := func(k string) string { v, _ := f[k].(string); return v }
		strs := func(k string) []string {
			var out []string
			list, _ := f[k].([]any)
			for _, v := range list {
				out = append(out, fmt.Sprint(v))
			}
			return out
		}
		table := func(k string) map[string]string {
			m, _ := f[k].(map[string]any)
			if len(m) == 0 {
				return nil
			}
			out := map[string]string{}
			for key, v := range m {
				out[key] = fmt.Sprint(v)
			}
			return out
		}
		switch {
		case str("command") != "":
			s.Type = schema.Local
			s.Command = []string{t.text(str("command"))}
			for _, a := range strs("args") {
				s.Command = append(s.Command, t.text(a))
			}
		case str("url") != "":
			s.Type, s.URL, s.Transport = schema.Remote, t.text(str("url")), schema.TransportStreamableHTTP
		}
		for k, v := range table("env") {
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[k] = t.text(v)
		}
		// env_vars lists variables passed on from Codex's environment.
		for _, v := range strs("env_vars") {
			if !validVar(v) {
				continue
			}
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[v] = "${" + v + "}"
		}
		for k, v := range table("http_headers") {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[k] = t.text(v)
		}
		for k, v := range table("env_http_headers") {
			if !validVar(v) {
				continue
			}
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[k] = "${" + v + "}"
		}
		if v := str("bearer_token_env_var"); validVar(v) {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers["Authorization"] = "Bearer ${" + v + "}"
		}
		if e, ok := f["enabled"].(bool); ok {
			s.Disabled = !e
		}
		s.TimeoutMS = seconds(f["startup_timeout_sec"], schema.MaxTimeout.Milliseconds())
		if ms, ok := f["startup_timeout_ms"].(int64); ok && ms > 0 && ms <= schema.MaxTimeout.Milliseconds() {
			s.TimeoutMS = ms
		}
		s.CallTimeoutMS = seconds(f["tool_timeout_sec"], schema.MaxCallTimeout.Milliseconds())
		if _, ok := f["cwd"]; ok {
			s.Skip = cwdSkip
		}
		if _, ok := f["enabled_tools"]; ok {
			s.Notes = append(s.Notes, toolFilterNote)
		} else if _, ok := f["disabled_tools"]; ok {
			s.Notes = append(s.Notes, toolFilterNote)
		}
		known := []string{"command", "args", "env", "env_vars", "url", "http_headers", "env_http_headers", "bearer_token_env_var",
			"enabled", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "cwd", "enabled_tools", "disabled_tools"}
		for _, k := range slices.Sorted(maps.Keys(f)) {
			if !slices.Contains(known, k) {
				s.Notes = append(s.Notes, fmt.Sprintf("%s is not imported (FreeCode has no such field)", k))
			}
		}
		t.finish(&s)
		out = append(out, s)
	}
	return out, nil
}

// seconds converts a TOML number of seconds to milliseconds within
// [1, most]; 0 when v is none.
func seconds(v any, most int64) int64 {
	var sec float64
	switch v := v.(type) {
	case int64:
		sec = float64(v)
	case float64:
		sec = v
	default:
		return 0
	}
	ms := int64(math.Round(sec * 1000))
	if ms < 1 || ms > most {
		return 0
	}
	return ms
}

const (
	cwdSkip        = "it sets a working directory (cwd), which FreeCode has no field for; run it with an absolute path, or through sh -c 'cd DIR && exec ...'"
	envFileSkip    = "it reads an env file (envFile), which FreeCode does not; put the values in env"
	toolFilterNote = "its tool filter is not imported; deny the tools you do not want with permission.deny rules"
)

// claudeStyle reads one server of the "mcpServers" family (Claude Code
// and Desktop, Cursor, VS Code, Gemini CLI): "command" and "args", or
// "url" ("httpUrl": streamable HTTP; gem: Gemini CLI, whose "url" is SSE
// and whose "timeout" bounds a request), with "env", "headers" and a
// "type".
func claudeStyle(name string, raw json.RawMessage, t *translator, gem bool) Server {
	s := Server{From: name}
	var f object
	if err := json.Unmarshal(raw, &f); err != nil {
		s.Skip = "it is not an object"
		return s
	}
	typ, _ := f.str("type")
	switch {
	case f.has("command"):
		s.Type = schema.Local
		s.Command = f.strings("command", t, &s)
		if line, ok := f.str("args"); ok {
			// One string would be one argument: "-y pkg" is not two.
			fix := ""
			if words, ok := schema.SplitCommand(line); ok {
				fix = fmt.Sprintf(`; write "args": %s, or FreeCode's own entry: "type": "local", "command": %s`,
					schema.RenderCommand(words), schema.RenderCommand(append(slices.Clone(s.Command), words...)))
			}
			s.skipf(`its "args" is one string, %q, where a list of the arguments is meant%s`, line, fix)
		}
		s.Command = append(s.Command, f.strings("args", t, &s)...)
	case f.has("httpUrl"):
		s.Type, s.Transport = schema.Remote, schema.TransportStreamableHTTP
		u, _ := f.str("httpUrl")
		s.URL = t.text(u)
	case f.has("url") || f.has("serverUrl"):
		s.Type = schema.Remote
		u, ok := f.str("url")
		if !ok {
			u, _ = f.str("serverUrl")
		}
		s.URL = t.text(u)
		if gem {
			s.Transport = schema.TransportSSE
		}
	}
	switch strings.ToLower(typ) {
	case "", "stdio", "local":
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		s.Transport = schema.TransportStreamableHTTP
	case "sse":
		s.Transport = schema.TransportSSE
	default:
		s.Skip = fmt.Sprintf("its type %s is not one FreeCode knows (stdio, http or sse)", quote(typ))
	}
	if s.Type == schema.Local && s.Transport != "" {
		s.Skip = fmt.Sprintf("its type is %s but it has a command", quote(typ))
	}
	s.Env = f.stringMap("env", t, &s)
	if s.Type == schema.Remote {
		s.Headers = f.stringMap("headers", t, &s)
	}
	if d, ok := f.boolean("disabled"); ok {
		s.Disabled = d
	}
	if e, ok := f.boolean("enabled"); ok {
		s.Disabled = !e
	}
	if gem {
		// Gemini CLI's timeout bounds each request: FreeCode's callTimeout.
		s.CallTimeoutMS = f.millis("timeout", 1, schema.MaxCallTimeout.Milliseconds(), &s)
	}
	switch {
	case f.has("cwd"):
		s.Skip = cwdSkip
	case f.has("envFile"):
		s.Skip = envFileSkip
	}
	if f.has("includeTools") || f.has("excludeTools") {
		s.Notes = append(s.Notes, toolFilterNote)
	}
	known := []string{"type", "command", "args", "url", "serverUrl", "httpUrl", "env", "headers", "disabled", "enabled", "cwd", "envFile", "includeTools", "excludeTools"}
	if gem {
		known = append(known, "timeout")
	}
	f.ignore(&s, known...)
	t.finish(&s)
	return s
}

// finish moves the translator's notes to s, and skips s if a reference
// could not be translated.
func (t *translator) finish(s *Server) {
	s.Notes = append(s.Notes, t.notes...)
	if t.unsupported != "" && s.Skip == "" {
		s.Skip = t.unsupported
	}
}

// object is a JSON object whose members are decoded when asked for.
type object map[string]json.RawMessage

// parseObject parses data, JSON or JSON with comments and trailing commas
// (VS Code's and OpenCode's files allow both), as an object.
func parseObject(data []byte) (object, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var obj object
	if err := json.Unmarshal(standardize(data), &obj); err != nil {
		return nil, fmt.Errorf("read JSON: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("read JSON: not an object")
	}
	return obj, nil
}

func (o object) has(k string) bool { _, ok := o[k]; return ok }

func (o object) decode(k string, into any) error {
	if err := json.Unmarshal(o[k], into); err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

func (o object) object(k string) (object, error) {
	var out object
	if err := o.decode(k, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("%s: not an object", k)
	}
	return out, nil
}

func (o object) str(k string) (string, bool) {
	var s string
	if json.Unmarshal(o[k], &s) != nil {
		return "", false
	}
	return s, true
}

func (o object) boolean(k string) (bool, bool) {
	var b bool
	if !o.has(k) || json.Unmarshal(o[k], &b) != nil {
		return false, false
	}
	return b, true
}

// strings reads member k — a string or a list of strings (numbers are
// taken as written) — translated; a value of another type skips s.
func (o object) strings(k string, t *translator, s *Server) []string {
	if !o.has(k) {
		return nil
	}
	var one string
	if json.Unmarshal(o[k], &one) == nil {
		return []string{t.text(one)}
	}
	var list []json.RawMessage
	if json.Unmarshal(o[k], &list) != nil {
		s.skipf("its %s is neither a string nor a list of strings", k)
		return nil
	}
	out := make([]string, 0, len(list))
	for _, el := range list {
		w, ok := scalar(el)
		if !ok {
			s.skipf("its %s holds something other than strings", k)
			return nil
		}
		out = append(out, t.text(w))
	}
	return out
}

// stringMap reads member k as a map of strings, translated. A null value
// (VS Code: unset the variable) is left out with a note.
func (o object) stringMap(k string, t *translator, s *Server) map[string]string {
	if !o.has(k) {
		return nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(o[k], &raw) != nil {
		s.skipf("its %s is not an object of strings", k)
		return nil
	}
	out := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		if string(raw[key]) == "null" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s is null there and left out (a FreeCode server never gets your whole environment)", k, key))
			continue
		}
		v, ok := scalar(raw[key])
		if !ok {
			s.skipf("its %s %s is not a string", k, key)
			return nil
		}
		out[key] = t.text(v)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// millis reads member k as whole milliseconds in [lo, hi]; 0 (with a
// note) for anything else.
func (o object) millis(k string, lo, hi int64, s *Server) int64 {
	if !o.has(k) {
		return 0
	}
	n, err := strconv.ParseInt(string(o[k]), 10, 64)
	if err != nil || n < lo || n > hi {
		s.Notes = append(s.Notes, fmt.Sprintf("its %s %s is not imported (FreeCode takes %d to %d milliseconds)", k, o[k], lo, hi))
		return 0
	}
	return n
}

// ignore notes every member of o not in known: FreeCode has no such
// field.
func (o object) ignore(s *Server, known ...string) {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if !slices.Contains(known, k) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is not imported (FreeCode has no such field)", quote(k)))
		}
	}
}

func (s *Server) skipf(format string, args ...any) {
	if s.Skip == "" {
		s.Skip = fmt.Sprintf(format, args...)
	}
}

// scalar returns a JSON string's value, or a number's or boolean's text.
func scalar(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b), true
	}
	return "", false
}

// standardize turns JSON with comments and trailing commas into JSON:
// comments become spaces, a comma before a closing bracket is dropped.
// Anything inside strings is kept.
func standardize(data []byte) []byte {
	out := make([]byte, 0, len(data))
	comma := -1 // index in out of a comma that only space follows so far
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(data))
			out = append(out, data[i:end]...)
			i = end - 1
			comma = -1
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return append(out, data[i:]...) // unterminated: let the parser say so
			}
			out = append(out, ' ')
			i += end + 3
		case c == ',':
			comma = len(out)
			out = append(out, c)
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		default:
			comma = -1
			out = append(out, c)
		}
	}
	return out
}

// mapsKeys is maps.Keys (for a nil map too).
func mapsKeys(m map[string]string) func(func(string) bool) { return maps.Keys(m) }
