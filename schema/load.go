package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freecode/freecode/internal/termtext"
)

// Home returns the FreeCode home: $FREECODE_HOME, else ~/.freecode. A
// FREECODE_HOME that starts with "~" is an error (ErrTildeHome): only a
// shell expands it, and not inside quotes, so the variable names a
// directory "~" below the working directory, which is never what was
// meant.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("FREECODE_HOME"); h != "" {
		if strings.HasPrefix(h, "~") {
			instead := "an absolute path"
			if rest, ok := strings.CutPrefix(h, "~"); ok && (rest == "" || rest[0] == '/') {
				instead = "$HOME" + rest + " or " + instead
			}
			return "", fmt.Errorf("FREECODE_HOME=%s starts with \"~\", which only a shell expands (and not inside quotes): %w; write %s", h, ErrTildeHome, instead)
		}
		return filepath.Abs(h)
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("find home directory: %w (set FREECODE_HOME)", err)
		}
	}
	return filepath.Join(home, ".freecode"), nil
}

// ErrTildeHome is wrapped by Home's error when FREECODE_HOME starts with a
// literal "~".
var ErrTildeHome = errors.New("a literal ~ is not the home directory")

// ConfigPath returns the user config file inside home.
func ConfigPath(home string) string { return filepath.Join(home, "config.json") }

// LoadOptions tune Parse and Load.
type LoadOptions struct {
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// NoExpand leaves ${VAR} references as written (for display and edits).
	NoExpand bool
	// Source is stored in each Server.Source; "" means SourceUser.
	Source string
	// HoldInvalid: an error that belongs to one server holds that server
	// (Hold of kind HoldInvalid) instead of failing the whole file; see
	// Parse. Desired sets it for the user config.
	HoldInvalid bool
}

// utf8BOM is the byte order mark some Windows editors put first.
const utf8BOM = "\xef\xbb\xbf"

// stripBOM returns data without a leading UTF-8 byte order mark, and whether
// it had one. Positions in errors are then counted after the mark.
func stripBOM(data []byte) ([]byte, bool) {
	if rest, ok := bytes.CutPrefix(data, []byte(utf8BOM)); ok {
		return rest, true
	}
	return data, false
}

// ErrNotExist is returned (wrapped) by Load when the file does not exist.
var ErrNotExist = os.ErrNotExist

// Load reads and parses the config file at path. A missing file is not an
// error: it yields an empty config (nothing configured yet).
func (v *Validator) Load(path string, opts LoadOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	return v.parseContent(path, Content{Data: data, Err: err}, opts)
}

// Validate checks data (the contents of file) against the schema and, unless
// opts.NoExpand, that every ${VAR} resolves. It returns Errors or nil.
func (v *Validator) Validate(file string, data []byte, opts LoadOptions) error {
	_, err := v.Parse(file, data, opts)
	return err
}

// Parse validates data (the contents of file) and returns the typed config
// with defaults applied (MCP.Resolve) and ${VAR} references expanded.
// Problems are returned together as Errors.
//
// With opts.HoldInvalid, errors that belong to one server (see
// partition.go) do not fail the file: that server is returned with a Hold
// of kind HoldInvalid carrying them, and the others as usual. A file-level
// error still fails it, with every error of the file.
func (v *Validator) Parse(file string, data []byte, opts LoadOptions) (*Config, error) {
	cfg, err := v.parse(file, data, opts)
	if cfg != nil {
		cfg.MCP.resolve()
	}
	return cfg, err
}

// newConfig is the config of file before its contents are read: the
// defaults of the mcp fields Resolve does not resolve (toolBudget may be
// 0).
func newConfig(file string) *Config {
	return &Config{Path: file, MCP: MCP{PollInterval: DefaultPollInterval, ToolBudget: DefaultToolBudget}}
}

// parse is Parse without resolving (MCP.Resolve): the servers' and the
// mcp section's settings are as written. Desired resolves a project's
// servers against the user's mcp section instead of the project's.
func (v *Validator) parse(file string, data []byte, opts LoadOptions) (*Config, error) {
	data, _ = stripBOM(data)
	root, errs := v.check(file, data)
	if root == nil {
		return nil, errs
	}
	keys := serverKeys(root)
	fileErrs, byKey := splitErrors(errs, keys)
	if len(fileErrs) > 0 || (len(errs) > 0 && !opts.HoldInvalid) {
		return nil, errs
	}
	// Decode exactly the members that were validated. encoding/json matches
	// keys case-insensitively (and merges repeats), so decoding the whole
	// document would also read an unvalidated "Mcp" or "Permission"; each
	// server entry is decoded on its own, and only once it is valid.
	// Durations are read as numbers' text: a value validation let through
	// is converted exactly, and anything else is a positioned error that
	// names the field and its range.
	var raw struct {
		MCP *struct {
			// Limits are the defaults of this file's servers.
			Limits       *rawLimits   `json:"limits"`
			PollInterval *json.Number `json:"pollInterval"`

			CallTimeout      *json.Number `json:"callTimeout"`
			MaxArgumentBytes *json.Number `json:"maxArgumentBytes"`
			MaxOutputTokens  *json.Number `json:"maxOutputTokens"`
			ToolBudget       *json.Number `json:"toolBudget"`
			Lifecycle        Lifecycle    `json:"lifecycle"`
			IdleTimeout      *json.Number `json:"idleTimeout"`
			Telemetry        *Telemetry   `json:"telemetry"`
			Registries       []string     `json:"registries"`
		}
		Permission Permission
	}
	lines := newLineIndex(data)
	mcpNode := root.member("mcp")
	for _, m := range []struct {
		key  string
		into any
	}{{"mcp", &raw.MCP}, {"permission", &raw.Permission}} {
		if n := root.member(m.key); n != nil {
			// The servers are skipped here: an invalid entry may hold
			// anything.
			if err := decodeMember(data, n, m.into, m.key == "mcp"); err != nil {
				return nil, Errors{decodeError(file, lines, root, n.start, err)}
			}
		}
	}
	cfg := newConfig(file)
	cfg.Permission = raw.Permission
	if raw.MCP == nil {
		return cfg, nil
	}
	var derrs Errors
	outputTokens := func(num *json.Number, path ...string) int {
		n, ok := wholeNumber(*num, MinOutputTokensLimit, MaxOutputTokensLimit)
		if !ok {
			e := &Error{File: file, Path: path, Msg: maxOutputTokensRule()}
			locate(e, lines, root)
			derrs = append(derrs, e)
		}
		return int(n)
	}
	duration := func(num *json.Number, lo, hi time.Duration, rule string, path ...string) time.Duration {
		d, ok := millis(*num, lo, hi)
		if !ok {
			e := &Error{File: file, Path: path, Msg: rule}
			locate(e, lines, root)
			derrs = append(derrs, e)
		}
		return d
	}
	if raw.MCP.PollInterval != nil {
		cfg.MCP.PollInterval = duration(raw.MCP.PollInterval, MinPollInterval, MaxPollInterval, pollIntervalRule(), "mcp", "pollInterval")
	}
	if raw.MCP.CallTimeout != nil {
		cfg.MCP.written.callTimeout = duration(raw.MCP.CallTimeout, time.Millisecond, MaxCallTimeout, callTimeoutRule(), "mcp", "callTimeout")
	}
	cfg.MCP.written.lifecycle = raw.MCP.Lifecycle // validated by config.cue
	cfg.MCP.Registries = raw.MCP.Registries       // validated by config.cue
	if raw.MCP.IdleTimeout != nil {
		cfg.MCP.written.idleTimeout = duration(raw.MCP.IdleTimeout, time.Millisecond, MaxIdleTimeout, idleTimeoutRule(), "mcp", "idleTimeout")
	}
	if raw.MCP.MaxArgumentBytes != nil {
		n, ok := wholeNumber(*raw.MCP.MaxArgumentBytes, MinArgumentBytesLimit, MaxArgumentBytesLimit)
		if !ok {
			e := &Error{File: file, Path: []string{"mcp", "maxArgumentBytes"}, Msg: maxArgumentBytesRule()}
			locate(e, lines, root)
			derrs = append(derrs, e)
		}
		cfg.MCP.MaxArgumentBytes = int(n)
	}
	if raw.MCP.MaxOutputTokens != nil {
		cfg.MCP.written.maxOutputTokens = outputTokens(raw.MCP.MaxOutputTokens, "mcp", "maxOutputTokens")
	}
	if raw.MCP.Telemetry != nil {
		cfg.MCP.Telemetry = *raw.MCP.Telemetry // validated by config.cue
	}
	if raw.MCP.ToolBudget != nil {
		n, ok := wholeNumber(*raw.MCP.ToolBudget, 0, MaxToolBudget)
		if !ok {
			e := &Error{File: file, Path: []string{"mcp", "toolBudget"}, Msg: toolBudgetRule()}
			locate(e, lines, root)
			derrs = append(derrs, e)
		}
		cfg.MCP.ToolBudget = int(n)
	}
	if len(derrs) > 0 {
		// The file's own fields: every error of the file with them.
		errs = append(errs, derrs...)
		sortErrors(errs)
		return nil, errs
	}
	source := opts.Source
	if source == "" {
		source = SourceUser
	}
	// mcp.limits applies to the servers of this file only: merged into
	// their limits here, before Resolve adds the defaults.
	limits := raw.MCP.Limits.resolve(Limits{})
	cfg.MCP.Limits = limits
	x := expander{file: file, lines: lines, root: root, lookup: opts.LookupEnv}
	if x.lookup == nil {
		x.lookup = os.LookupEnv
	}
	var entries []*node
	if servers := mcpNode.member("servers"); servers != nil {
		entries = servers.elems
	}
	for i, el := range entries {
		key := keys[i]
		if len(byKey[key]) > 0 {
			cfg.MCP.Servers = append(cfg.MCP.Servers, heldEntry(key, el, source))
			continue
		}
		var rs rawServer
		if err := json.Unmarshal(data[el.start:el.end], &rs); err != nil {
			e := decodeError(file, lines, root, el.start, err)
			byKey[key] = append(byKey[key], e)
			cfg.MCP.Servers = append(cfg.MCP.Servers, heldEntry(key, el, source))
			continue
		}
		s := Server{
			Name: rs.Name, Type: rs.Type, Command: rs.Command, URL: rs.URL,
			Headers: rs.Headers, Env: rs.Env, Transport: rs.Transport, OAuth: rs.OAuth.resolve(),
			Enabled: true, Source: source,
			Limits: rs.Limits.resolve(limits), Protocol: rs.Protocol, LogLevel: rs.LogLevel,
			Tools: rs.Tools, AlwaysLoad: rs.AlwaysLoad, Registry: rs.Registry,
		}
		if rs.Enabled != nil {
			s.Enabled = *rs.Enabled
		}
		derrs = derrs[:0]
		if rs.Timeout != nil {
			s.Timeout = duration(rs.Timeout, time.Millisecond, MaxTimeout, timeoutRule(), "mcp", "servers", strconv.Itoa(i), "timeout")
		}
		if rs.CallTimeout != nil {
			s.written.callTimeout = duration(rs.CallTimeout, time.Millisecond, MaxCallTimeout, callTimeoutRule(), "mcp", "servers", strconv.Itoa(i), "callTimeout")
		}
		s.written.lifecycle = rs.Lifecycle // validated by config.cue
		if rs.IdleTimeout != nil {
			s.written.idleTimeout = duration(rs.IdleTimeout, time.Millisecond, MaxIdleTimeout, idleTimeoutRule(), "mcp", "servers", strconv.Itoa(i), "idleTimeout")
		}
		if rs.MaxOutputTokens != nil {
			s.written.maxOutputTokens = outputTokens(rs.MaxOutputTokens, "mcp", "servers", strconv.Itoa(i), "maxOutputTokens")
		}
		if s.Type == Remote && s.Transport == "" {
			s.Transport = TransportAuto
		}
		if len(rs.Roots) > 0 {
			var err error
			if s.Roots, err = resolveRoots(rs.Roots, source, x.lookup); err != nil {
				e := &Error{File: file, Path: []string{"mcp", "servers", strconv.Itoa(i), "roots"}, Msg: err.Error()}
				locate(e, lines, root)
				derrs = append(derrs, e)
			}
		}
		derrs = append(derrs, toolFilterErrors(file, lines, root, i, s.Tools)...)
		s.Shown = shown(s.Type, s.Command, s.URL, source)
		// A disabled server is not started, so its unset variables are not an
		// error yet; they are reported once it is enabled.
		x.errs = x.errs[:0]
		if !opts.NoExpand && s.Enabled {
			x.server(i, &s)
		}
		bad := append(slices.Clone(derrs), x.errs...)
		bad = append(bad, oauthChecks(file, lines, root, i, s)...)
		if len(bad) > 0 {
			byKey[key] = append(byKey[key], bad...)
			errs = append(errs, bad...)
			cfg.MCP.Servers = append(cfg.MCP.Servers, heldEntry(key, el, source))
			continue
		}
		s.Warnings = x.commandWarnings(i, s, !opts.NoExpand && s.Enabled)
		cfg.MCP.Servers = append(cfg.MCP.Servers, s)
	}
	if len(errs) > 0 && !opts.HoldInvalid {
		sortErrors(errs)
		return nil, errs
	}
	// Every entry of a key shares one hold with all of the key's errors.
	holds := map[string]*Hold{}
	for i := range cfg.MCP.Servers {
		s := &cfg.MCP.Servers[i]
		if s.Hold == nil {
			continue
		}
		h := holds[s.Name]
		if h == nil {
			h = &Hold{Kind: HoldInvalid, Server: s.Name, Errors: slices.Clone(byKey[s.Name])}
			sortErrors(h.Errors)
			holds[s.Name] = h
		}
		s.Hold = h
	}
	return cfg, nil
}

// resolveRoots makes each root absolute and clean: a relative one is
// relative to the project directory of a project's server (source
// "project:<dir>") and to the home directory ($HOME) of a user's, and "~"
// or "~/..." is the home directory.
func resolveRoots(roots []string, source string, lookup func(string) (string, bool)) ([]string, error) {
	home, _ := lookup("HOME")
	base := home
	if dir, ok := strings.CutPrefix(source, SourceProjectPrefix); ok {
		base = dir
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "~" || strings.HasPrefix(r, "~/") {
			if home == "" {
				return nil, fmt.Errorf("root %q: $HOME is not set, so ~ names no directory; write an absolute path", r)
			}
			r = filepath.Join(home, r[1:])
		}
		if !filepath.IsAbs(r) {
			if base == "" {
				return nil, fmt.Errorf("root %q is relative and $HOME is not set; write an absolute path", r)
			}
			r = filepath.Join(base, r)
		}
		out = append(out, filepath.Clean(r))
	}
	return out, nil
}

// rawServer is one valid server entry as decoded.
type rawServer struct {
	Name      string            `json:"name"`
	Type      ServerType        `json:"type"`
	Command   []string          `json:"command"`
	URL       string            `json:"url"`
	Limits    *rawLimits        `json:"limits"`
	Headers   map[string]string `json:"headers"`
	Env       map[string]string `json:"env"`
	Transport Transport         `json:"transport"`
	OAuth     *rawOAuth         `json:"oauth"`
	Enabled   *bool             `json:"enabled"`
	Timeout   *json.Number      `json:"timeout"`

	CallTimeout     *json.Number `json:"callTimeout"`
	MaxOutputTokens *json.Number `json:"maxOutputTokens"`
	Roots           []string     `json:"roots"`
	Protocol        string       `json:"protocol"`
	LogLevel        string       `json:"logLevel"`
	Tools           ToolFilter   `json:"tools"`
	AlwaysLoad      bool         `json:"alwaysLoad"`
	Lifecycle       Lifecycle    `json:"lifecycle"`
	IdleTimeout     *json.Number `json:"idleTimeout"`
	Registry        *Provenance  `json:"registry"`
}

// decodeMember decodes member n of the document data into into; with
// skipServers, n's "servers" member is left out (replaced by null).
func decodeMember(data []byte, n *node, into any, skipServers bool) error {
	b := data[n.start:n.end]
	if s := n.member("servers"); skipServers && s != nil {
		b = slices.Concat(data[n.start:s.start], []byte("null"), data[s.end:n.end])
	}
	return json.Unmarshal(b, into)
}

// shown is the command line or URL of a server from source as written, for
// display. Of a project's server every word, or the URL, is cut after
// ShownValueChars characters: the repository chose it.
func shown(t ServerType, command []string, url, source string) string {
	limit := -1
	if strings.HasPrefix(source, SourceProjectPrefix) {
		limit = ShownValueChars
	}
	if t == Remote {
		if limit >= 0 {
			return ShowValue(url)
		}
		return termtext.Quote(url)
	}
	words := make([]string, len(command))
	for i, w := range command {
		words[i] = displayWord(w, limit)
	}
	return strings.Join(words, " ")
}

// heldEntry is the server entry el, which has errors, as a held server
// named key: what shows it (type, enabled, the command or URL when they
// are well formed) and a Hold of kind HoldInvalid (Parse fills its
// errors).
func heldEntry(key string, el *node, source string) Server {
	s := Server{Name: key, Enabled: true, Source: source, Hold: &Hold{Kind: HoldInvalid, Server: key}}
	if t := el.member("type"); t != nil && t.kind == '"' && (t.str == string(Local) || t.str == string(Remote)) {
		s.Type = ServerType(t.str)
	}
	if e := el.member("enabled"); e != nil && e.kind == 'f' {
		s.Enabled = false
	}
	if c := el.member("command"); c != nil && c.kind == '[' {
		for _, w := range c.elems {
			if w.kind != '"' {
				s.Command = nil
				break
			}
			s.Command = append(s.Command, w.str)
		}
	}
	if u := el.member("url"); u != nil && u.kind == '"' {
		s.URL = u.str
	}
	switch {
	case s.Type == Remote || (s.Type == "" && s.URL != "" && s.Command == nil):
		s.Shown = shown(Remote, nil, s.URL, source)
	case s.Command != nil:
		s.Shown = shown(Local, s.Command, "", source)
	}
	return s
}

// millis converts a JSON number of milliseconds to a duration; ok is false
// unless it is a whole number in [lo, hi].
func millis(num json.Number, lo, hi time.Duration) (d time.Duration, ok bool) {
	ms, ok := wholeNumber(num, lo.Milliseconds(), hi.Milliseconds())
	return time.Duration(ms) * time.Millisecond, ok
}

// wholeNumber parses num as an integer in [lo, hi]; ok is false for
// anything else (a fraction, an exponent, a number out of range).
func wholeNumber(num json.Number, lo, hi int64) (n int64, ok bool) {
	n, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// decodeError positions a decoding failure of the member starting at
// offset base: a value of a type validation should have refused. It names
// the place, never the Go types involved.
func decodeError(file string, lines *lineIndex, root *node, base int, err error) *Error {
	e := &Error{File: file, Msg: "value of an unexpected type"}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		e.Path = pathAt(root, base+int(te.Offset)-1)
		e.Msg = "unexpected " + te.Value + " here"
	}
	locate(e, lines, root)
	return e
}

// pathAt returns the path of the innermost value that holds offset off.
func pathAt(root *node, off int) []string {
	var path []string
	n := root
	for {
		var next *node
		switch n.kind {
		case '{':
			for _, m := range n.members {
				if m.val.start <= off && off < m.val.end {
					next, path = m.val, append(path, m.key)
				}
			}
		case '[':
			for i, el := range n.elems {
				if el.start <= off && off < el.end {
					next, path = el, append(path, strconv.Itoa(i))
				}
			}
		}
		if next == nil {
			return path
		}
		n = next
	}
}

// expander resolves ${VAR} and ${VAR:-default} in a server's strings and
// collects an Error for every unset variable without a default. "$$" is a
// literal "$".
type expander struct {
	file   string
	lines  *lineIndex
	root   *node
	lookup func(string) (string, bool)
	errs   Errors
}

func (x *expander) server(i int, s *Server) {
	base := []string{"mcp", "servers", strconv.Itoa(i)}
	path := func(p ...string) []string { return append(append([]string{}, base...), p...) }
	for j := range s.Command {
		s.Command[j] = x.expand(s.Command[j], path("command", strconv.Itoa(j)))
	}
	s.URL = x.expand(s.URL, path("url"))
	for k, val := range s.Headers {
		s.Headers[k] = x.expand(val, path("headers", k))
	}
	for k, val := range s.Env {
		s.Env[k] = x.expand(val, path("env", k))
	}
	if s.OAuth != nil {
		s.OAuth.ClientID = x.expand(s.OAuth.ClientID, path("oauth", "clientId"))
		s.OAuth.ClientSecret = x.expand(s.OAuth.ClientSecret, path("oauth", "clientSecret"))
	}
}

// commandWarnings are the warnings of server s, entry i (CommandWarning);
// expanded says whether its ${VAR} references were expanded. A program
// still holding one is not looked for: what it names is not known yet.
func (x *expander) commandWarnings(i int, s Server, expanded bool) Errors {
	if s.Type != Local || len(s.Command) == 0 || (!expanded && strings.Contains(s.Command[0], "$")) {
		return nil
	}
	msg := CommandWarning(s.Command, pathLookup(x.lookup))
	if msg == "" {
		return nil
	}
	w := &Error{File: x.file, Path: []string{"mcp", "servers", strconv.Itoa(i), "command", "0"}, Msg: msg}
	locate(w, x.lines, x.root)
	return Errors{w}
}

func (x *expander) expand(s string, path []string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	out, missing, bad := Expand(s, x.lookup)
	for _, name := range missing {
		e := &Error{File: x.file, Path: path, Var: name,
			Msg: fmt.Sprintf("environment variable %s is not set (set it, or write ${%s:-default})", name, name)}
		locate(e, x.lines, x.root)
		x.errs = append(x.errs, e)
	}
	if bad != "" {
		e := &Error{File: x.file, Path: path, Msg: fmt.Sprintf("malformed variable reference %q: write ${NAME} or ${NAME:-default}, and $$ for a literal $", bad)}
		locate(e, x.lines, x.root)
		x.errs = append(x.errs, e)
	}
	return out
}

// Expand replaces ${NAME} and ${NAME:-default} in s. It returns the result,
// the names that were unset without a default, and the first malformed
// reference ("" if none). A "$" not followed by "{" or "$" is kept as is.
func Expand(s string, lookup func(string) (string, bool)) (out string, missing []string, malformed string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			if malformed == "" {
				malformed = s[i:]
			}
			b.WriteString(s[i:])
			break
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) || strings.Contains(def, "${") {
			// Nested references are not supported: "${A:-${B}}" would end
			// at the first "}".
			if malformed == "" {
				malformed = s[i : i+end+1]
			}
			b.WriteString(s[i : i+end+1])
			i += end
			continue
		}
		if val, ok := lookup(name); ok && (val != "" || !hasDef) {
			b.WriteString(val)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
		}
		i += end
	}
	return b.String(), missing, malformed
}

func validVarName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}
