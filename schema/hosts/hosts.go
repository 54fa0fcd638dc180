// Package hosts reads the MCP server configurations of other hosts —
// Claude Code, Claude Desktop, Cursor, VS Code, Codex, Gemini CLI and
// OpenCode — in their own formats and locations, and turns each server
// into a FreeCode server entry (schema.Field values for schema.Doc's
// AddServer), saying what changed on the way and what cannot be taken
// over and why.
//
// Variable references keep working: each host's syntax (${env:VAR},
// $VAR, {env:VAR}, Codex's env_vars and bearer_token_env_var) becomes
// FreeCode's ${VAR}, and a literal "$" is escaped so that FreeCode reads
// it as the host did. A VS Code ${input:id} (a prompt there) becomes an
// environment variable named after the id, with a note. What FreeCode has
// no equivalent for — a working directory, an env file, a {file:...}
// value — skips the server with the reason.
//
// It reads only what it is given: Locations says where each host keeps
// its files, the caller reads them.
package hosts

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
)

// Host is one MCP host whose configuration can be imported.
type Host struct {
	// ID is what --from takes ("claude-code").
	ID string
	// Name is what people call it ("Claude Code").
	Name string
	// read turns the contents of one of its files into servers.
	read func(loc Location, data []byte, env Env) ([]Server, error)
	// locations are its files, in increasing precedence: a server of a
	// later one replaces one of the same name of an earlier one.
	locations func(env Env) []Location
}

// Hosts returns every known host, in the order --from lists them.
func Hosts() []*Host {
	return []*Host{claudeCode, claudeDesktop, cursor, vscode, codex, gemini, opencode}
}

// Lookup returns the host with id, or nil.
func Lookup(id string) *Host {
	for _, h := range Hosts() {
		if h.ID == id {
			return h
		}
	}
	return nil
}

// IDs lists the hosts' IDs, for usage messages.
func IDs() []string {
	var ids []string
	for _, h := range Hosts() {
		ids = append(ids, h.ID)
	}
	return ids
}

// Env is where the hosts' files are.
type Env struct {
	// Home is the user's home directory.
	Home string
	// ConfigDir is $XDG_CONFIG_HOME, else Home/.config.
	ConfigDir string
	// AppSupport is where macOS applications keep their files
	// (Home/Library/Application Support); "" elsewhere.
	AppSupport string
	// CodexHome is $CODEX_HOME, else Home/.codex.
	CodexHome string
	// Dir is the project directory: project-scoped files are looked for
	// in it (the working directory, usually).
	Dir string
}

// Location is one file where a host keeps servers.
type Location struct {
	Host *Host
	Path string
	// Scope is "user", "project", or Claude Code's "local" (the entries
	// of ~/.claude.json kept per project, see Server.Project).
	Scope string
}

// Locations returns the files h may keep servers in for env, in
// increasing precedence.
func (h *Host) Locations(env Env) []Location { return h.locations(env) }

// ProjectFileDir reports whether path is named as one of the files a
// host reads in a project directory (.mcp.json, .cursor/mcp.json,
// .vscode/mcp.json, .codex/config.toml, .gemini/settings.json,
// opencode.json, opencode.jsonc), wherever it is, and the directory it
// would be the project file of. Some of those names are also a host's
// user file in the home directory (~/.cursor/mcp.json): telling those
// apart is the caller's.
func ProjectFileDir(path string) (string, bool) {
	path = filepath.Clean(path)
	root := string(filepath.Separator)
	for _, h := range Hosts() {
		for _, loc := range h.Locations(Env{Dir: root}) {
			if loc.Scope != "project" {
				continue
			}
			rel, err := filepath.Rel(root, loc.Path)
			if err != nil {
				continue
			}
			if dir, ok := strings.CutSuffix(path, string(filepath.Separator)+rel); ok {
				if dir == "" {
					dir = root
				}
				return dir, true
			}
		}
	}
	return "", false
}

// Read turns data, the contents of loc, into servers (sorted by project,
// then name). A
// server that cannot be imported is returned too, with Skip saying why.
func Read(loc Location, data []byte, env Env) ([]Server, error) {
	servers, err := loc.Host.read(loc, data, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc.Path, err)
	}
	slices.SortFunc(servers, func(a, b Server) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.From, b.From))
	})
	for i := range servers {
		servers[i].Location = loc
		servers[i].finish()
	}
	return servers, nil
}

// ErrUnknownFormat is wrapped by Detect's error when a file holds no
// servers in a format it knows.
var ErrUnknownFormat = errors.New("no MCP servers in a format FreeCode can import")

// Detect says which host's format the file at path (holding data) is in,
// from its name and content. A file of "mcpServers" whose name says
// nothing (a copy, a snippet) is read in the "mcpServers" format any of
// those hosts write, with both ${VAR} and ${env:VAR} taken as references.
func Detect(path string, data []byte) (*Host, error) {
	base, dir := filepath.Base(path), filepath.Base(filepath.Dir(path))
	if strings.HasSuffix(base, ".toml") {
		return codex, nil
	}
	obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	switch {
	case obj.has("mcpServers") || obj.has("projects"):
		switch {
		case base == "claude_desktop_config.json":
			return claudeDesktop, nil
		case dir == ".cursor":
			return cursor, nil
		case dir == ".gemini":
			return gemini, nil
		case base == ".claude.json" || base == ".mcp.json":
			return claudeCode, nil
		}
		return anyMCPServers, nil
	case obj.has("servers"):
		return vscode, nil
	case obj.has("mcp"):
		var mcp object
		if err := obj.decode("mcp", &mcp); err == nil && mcp.has("servers") {
			if _, err := mcp.object("servers"); err != nil {
				return nil, fmt.Errorf("%w: it is a FreeCode config already (use it with --config %s)", ErrUnknownFormat, path)
			}
		}
		return opencode, nil
	}
	return nil, fmt.Errorf("%w: found none of mcpServers (Claude, Cursor, Gemini CLI), servers (VS Code), mcp (OpenCode) or [mcp_servers] (Codex)", ErrUnknownFormat)
}

// Server is one server of another host, as FreeCode would have it.
type Server struct {
	// Name is its FreeCode name: From, or From made valid (with a note).
	Name string
	// From is the host's name for it.
	From     string
	Location Location
	// Project is the directory of the one project the host runs the
	// server in, for a server kept for a project in a file of the user's
	// (Claude Code's ~/.claude.json "projects"); "" otherwise.
	Project string

	Type      schema.ServerType
	Command   []string
	URL       string
	Transport schema.Transport // "" for the default
	Env       map[string]string
	Headers   map[string]string
	Disabled  bool
	// TimeoutMS and CallTimeoutMS are FreeCode's timeout and callTimeout
	// (0: not set).
	TimeoutMS, CallTimeoutMS int64
	// Limits are FreeCode's limits, by field (add-json of an entry in
	// FreeCode's own format only).
	Limits map[string]int64

	// Notes say what changed on the way (a renamed server, a translated
	// input, a field left out).
	Notes []string
	// Skip says why the server cannot be imported ("" when it can).
	Skip string
}

// Fields is the server as a FreeCode entry, for schema.Doc.AddServer.
func (s Server) Fields() []schema.Field {
	f := []schema.Field{{Key: "name", Value: s.Name}, {Key: "type", Value: string(s.Type)}}
	if s.Type == schema.Remote {
		f = append(f, schema.Field{Key: "url", Value: s.URL})
		if s.Transport != "" {
			f = append(f, schema.Field{Key: "transport", Value: string(s.Transport)})
		}
		if len(s.Headers) > 0 {
			f = append(f, schema.Field{Key: "headers", Value: s.Headers})
		}
	} else {
		f = append(f, schema.Field{Key: "command", Value: s.Command})
	}
	if len(s.Env) > 0 {
		f = append(f, schema.Field{Key: "env", Value: s.Env})
	}
	if s.Disabled {
		f = append(f, schema.Field{Key: "enabled", Value: false})
	}
	if s.TimeoutMS > 0 {
		f = append(f, schema.Field{Key: "timeout", Value: s.TimeoutMS})
	}
	if s.CallTimeoutMS > 0 {
		f = append(f, schema.Field{Key: "callTimeout", Value: s.CallTimeoutMS})
	}
	if len(s.Limits) > 0 {
		f = append(f, schema.Field{Key: "limits", Value: s.Limits})
	}
	return f
}

// Shown is its command line or URL as FreeCode will show it, with what
// looks like a credential in it (a Literal of kind "url" or "command")
// shown as "***".
func (s Server) Shown() string {
	s.rewriteSecrets(shownSecret)
	if s.Type == schema.Remote {
		return termtext.Quote(s.URL)
	}
	words := make([]string, len(s.Command))
	for i, w := range s.Command {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " ")
}

// finish checks what every host's reader leaves to the end: a name
// FreeCode takes, and a command or url.
func (s *Server) finish() {
	if s.Name == "" {
		s.Name = s.From
	}
	if s.Skip != "" {
		return
	}
	switch {
	case s.Type == schema.Local && len(s.Command) == 0:
		s.Skip = "it has no command"
	case s.Type == schema.Remote && s.URL == "":
		s.Skip = "it has no url"
	case s.Type == "":
		s.Skip = "it has neither a command nor a url"
	}
	if s.Skip != "" {
		return
	}
	if s.Type == schema.Local && IsGateway(s.Command) {
		s.Skip = "it is FreeCode's own gateway (freecode mcp serve): importing it would make FreeCode run itself; the servers it serves are FreeCode's already"
		return
	}
	if s.Name == "" {
		s.Name = s.From
	}
	if !schema.ValidName(s.Name) {
		n := validName(s.Name)
		if n == "" {
			s.Skip = fmt.Sprintf("%s is not a name FreeCode can give a server (a letter, then letters, digits, _ and -)", quote(s.From))
			return
		}
		s.Notes = append(s.Notes, fmt.Sprintf("renamed from %s: FreeCode names are a letter, then letters, digits, _ and -, without __ (tool ids are mcp__<server>__<tool>)", quote(s.From)))
		s.Name = n
	}
	if n := literalNote(s.Literals()); n != "" {
		s.Notes = append(s.Notes, n)
	}
}

// IsGateway reports whether command runs FreeCode's gateway: a binary
// named freecode (at any path) with the words "mcp serve" among its
// arguments, flags before, between or after them.
func IsGateway(command []string) bool {
	if len(command) == 0 {
		return false
	}
	base := strings.TrimSuffix(filepath.Base(strings.ReplaceAll(command[0], `\`, "/")), ".exe")
	if base != "freecode" {
		return false
	}
	var words []string
	for _, a := range command[1:] {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "mcp" && words[i+1] == "serve" {
			return true
		}
	}
	return false
}

// validName makes name a valid server name: runs of other characters
// become "-", "__" becomes "_", a leading non-letter and a trailing "_"
// go, at most 48 characters; "" when nothing is left.
func validName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(r)
	}
	n := b.String()
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	n = strings.TrimLeftFunc(n, func(r rune) bool { return !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') })
	if len(n) > 48 {
		n = n[:48]
	}
	n = strings.TrimRight(n, "_-")
	if !schema.ValidName(n) {
		return ""
	}
	return n
}

func quote(s string) string { return termtext.Quote(s) }

// shellWord quotes s for display as one word of a command line.
func shellWord(s string) string {
	if !termtext.Printable(s) {
		return termtext.Quote(s)
	}
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`|&;<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
