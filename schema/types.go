// Package schema loads, validates and edits FreeCode's configuration file.
//
// The single source of truth for the file's shape is config.cue at the
// repository root (embedded by package freecode); this package applies it,
// fills in defaults, expands ${VAR} references and returns a typed Config.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Defaults applied after validation when a field is absent, and the
// bounds config.cue sets (kept equal to it; a test checks).
const (
	DefaultTimeout      = 5000 * time.Millisecond
	DefaultPollInterval = 5000 * time.Millisecond
	MinPollInterval     = 100 * time.Millisecond
	// MaxTimeout and MaxPollInterval keep durations far from the int64
	// nanoseconds a time.Duration holds.
	MaxTimeout      = time.Hour
	MaxPollInterval = 24 * time.Hour
	// DefaultCallTimeout is mcp.callTimeout's default: long enough for the
	// slow tools people run (a build, a search over a large tree, a page
	// load in a browser), short enough that a server that never answers
	// frees the call, and the model, within minutes. The model's own wait
	// for an approval is not counted.
	DefaultCallTimeout = 5 * time.Minute
	// MaxCallTimeout bounds callTimeout (config.cue has the same bound).
	MaxCallTimeout = 24 * time.Hour
	// MinArgumentBytesLimit and MaxArgumentBytesLimit bound
	// mcp.maxArgumentBytes (config.cue has the same bounds); the upper one is
	// what the local API reads of a request.
	MinArgumentBytesLimit = 1024
	MaxArgumentBytesLimit = 4 << 20
	// DefaultMaxOutputTokens is mcp.maxOutputTokens' default: the estimated
	// tokens (bytes / 4) of one tool result the model is given whole, a
	// small share of any current model's context. MinOutputTokensLimit and
	// MaxOutputTokensLimit bound it (config.cue has the same bounds).
	DefaultMaxOutputTokens = 25000
	MinOutputTokensLimit   = 1000
	MaxOutputTokensLimit   = 1000000
	// DefaultToolBudget is mcp.toolBudget's default: the estimated tokens
	// (bytes / 4) the definitions of every tool may take in the model's
	// context before only some are advertised and the rest are found with
	// tool_search — a tenth of a 200k-token context. MaxToolBudget bounds
	// it (config.cue has the same bound); 0 never defers.
	DefaultToolBudget = 20000
	MaxToolBudget     = 10000000
	// DefaultIdleTimeout is idleTimeout's default: how long an on-demand
	// server stays running after its last use. MaxIdleTimeout bounds it
	// (config.cue has the same bound).
	DefaultIdleTimeout = 10 * time.Minute
	MaxIdleTimeout     = 24 * time.Hour
)

// Lifecycle says when a server runs.
type Lifecycle string

const (
	// LifecycleAlways: the server runs as long as it is configured and
	// enabled (the default).
	LifecycleAlways Lifecycle = "always"
	// LifecycleOnDemand: the server is advertised from its stored
	// manifest without running, started by its first use, and stopped
	// after IdleTimeout without use.
	LifecycleOnDemand Lifecycle = "on-demand"
)

// ServerType says how a server is reached.
type ServerType string

const (
	Local  ServerType = "local"
	Remote ServerType = "remote"
)

// Transport selects the wire protocol for a remote server.
type Transport string

const (
	TransportAuto           Transport = "auto"
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
)

// Source values say where a server's definition came from.
const SourceUser = "user"

// Server is one configured MCP server after defaults and ${VAR} expansion.
type Server struct {
	Name      string            `json:"name"`
	Type      ServerType        `json:"type"`
	Command   []string          `json:"command,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Transport Transport         `json:"transport,omitempty"`
	// OAuth is a remote server's oauth object, nil when the file has none
	// (see SignsIn).
	OAuth   *OAuth `json:"oauth,omitempty"`
	Enabled bool   `json:"enabled"`
	// Timeout, Settings and Limits are resolved (MCP.Resolve): every
	// Server a Config holds has them all set, and nothing downstream
	// applies a default to them.
	//
	// Timeout bounds a start: connecting, initialize and listing tools
	// (timeout, else DefaultTimeout).
	Timeout time.Duration `json:"-"`
	// Settings bound the calls of the server's tools. Not part of the
	// spec: a change applies to the next call without a restart.
	Settings Settings `json:"-"`
	// Limits bound what the server can make FreeCode hold: defaults, then
	// the file's mcp.limits, then the server's own limits, field by field.
	Limits Limits `json:"-"`
	// Roots are the directories offered to the server as its roots,
	// absolute and clean (resolved against the project or the home
	// directory); none: no roots capability.
	Roots []string `json:"roots,omitempty"`
	// Protocol is the protocol revision asked for ("2025-11-25",
	// "2026-07-28", "auto"; "" as mcp.Spec.Protocol says), and LogLevel
	// the lowest severity of log messages asked of the server ("": none).
	Protocol string `json:"protocol,omitempty"`
	LogLevel string `json:"logLevel,omitempty"`
	// Tools filters the server's tools (zero: all of them). It is not
	// part of the spec: a change re-registers without a restart.
	Tools ToolFilter `json:"tools,omitzero"`
	// Registry is where `freecode mcp install` took the entry from (nil:
	// written by hand). Not part of the spec: it changes nothing of how
	// the server runs.
	Registry *Provenance `json:"registry,omitempty"`
	// Lifecycle and IdleTimeout are resolved (MCP.Resolve): the server's
	// own, else the mcp section's, else LifecycleAlways and
	// DefaultIdleTimeout. Not part of the spec: a change applies without
	// a restart.
	Lifecycle   Lifecycle     `json:"-"`
	IdleTimeout time.Duration `json:"-"`
	// AlwaysLoad keeps the server's tools advertised when the definitions
	// are over mcp.toolBudget and the others are deferred. Not part of the
	// spec: it changes what is advertised, not what runs.
	AlwaysLoad bool `json:"-"`
	// Source is SourceUser or "project:<dir>"; it is not part of the file.
	Source string `json:"-"`
	// Hold, when set, keeps the server from running (see Validator.Desired).
	Hold *Hold `json:"-"`
	// Shown is the command line or URL as written in the file, before
	// ${VAR} expansion: what status, logs and errors show, so that a secret
	// passed through a variable is not printed. A word that does not print
	// as it reads (a zero-width space, say) is quoted with escapes.
	Shown string `json:"-"`
	// Warnings are what is likely wrong with the entry although it is
	// valid (CommandWarning), positioned in its file. They hold nothing
	// back: the server runs as written.
	Warnings Errors `json:"-"`

	// written are the entry's settings as written, which Resolve reads.
	written written
}

// SpecHash identifies what would run: the resolved command, env, url,
// headers, transport, oauth object, timeout, limits, roots, protocol and
// log level, as resolved. Enabled, Source, Settings (callTimeout,
// maxOutputTokens), AlwaysLoad and the Tools filter are not part of it, so
// toggling a server, moving it between files, changing how long its calls
// may run or which of its tools are registered does not count as a change
// of spec.
func (s Server) SpecHash() string {
	type spec struct {
		Name      string     `json:"name"`
		Type      ServerType `json:"type"`
		Command   []string   `json:"command"`
		URL       string     `json:"url"`
		Headers   [][2]string
		Env       [][2]string
		Transport Transport
		TimeoutMS int64
		Limits    Limits
		// OAuth is left out when absent, so that the hashes of servers
		// without one stay what they were; so are the fields below.
		OAuth    *oauthSpec `json:",omitempty"`
		Roots    []string   `json:",omitempty"`
		Protocol string     `json:",omitempty"`
		LogLevel string     `json:",omitempty"`
	}
	b, _ := json.Marshal(spec{s.Name, s.Type, s.Command, s.URL, sortedPairs(s.Headers), sortedPairs(s.Env), s.Transport, s.Timeout.Milliseconds(), s.Limits, s.OAuth.spec(),
		s.Roots, s.Protocol, s.LogLevel})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func sortedPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// Permission holds the rules of the "permission" section; a rule names a
// server ("mcp__github"), one of its tools ("mcp__github__create_issue"),
// every MCP tool ("mcp") or a built-in ("write") (orchestrator.RuleMatches).
type Permission struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// MCP is the "mcp" section of the config.
type MCP struct {
	Servers []Server `json:"servers"`
	// Registries are the file's mcp.registries as written (none: the
	// official registry).
	Registries   []string      `json:"-"`
	PollInterval time.Duration `json:"-"`
	// Defaults are the settings of a tool source that sets none of its
	// own, FreeCode's built-ins: mcp.callTimeout and mcp.maxOutputTokens,
	// resolved. Validator.Desired takes them from the user config, for
	// the project's servers too.
	Defaults Settings `json:"-"`
	// MaxArgumentBytes bounds one tool call's arguments (default
	// DefaultMaxArgumentBytes). Validator.Desired takes it from the user
	// config.
	MaxArgumentBytes int `json:"-"`
	// ToolBudget is how many estimated tokens every tool's definition may
	// take before tools are deferred (default DefaultToolBudget; 0: never).
	// Validator.Desired takes it from the user config.
	ToolBudget int `json:"-"`
	// Limits are the file's mcp.limits with the defaults: those of its
	// servers that set none of their own, and what a host of the gateway
	// (`freecode mcp serve`) may send (MaxMessageBytes). Validator.Desired
	// takes them from the user config.
	Limits Limits `json:"-"`
	// Telemetry is the file's mcp.telemetry (zero: none). Validator.Desired
	// takes it from the user config: a project cannot send the spans
	// elsewhere.
	Telemetry Telemetry `json:"-"`

	// written are the section's settings as written, which Resolve reads.
	written written
}

// AlwaysLoaded returns the names of the servers whose tools are never
// deferred (Server.AlwaysLoad).
func (m MCP) AlwaysLoaded() []string {
	var out []string
	for _, s := range m.Servers {
		if s.AlwaysLoad {
			out = append(out, s.Name)
		}
	}
	return out
}

// Telemetry is the "mcp.telemetry" block: whether to export
// OpenTelemetry traces and metrics, and where (package telemetry; the
// OTEL_* variables win over it).
type Telemetry struct {
	Enabled     bool   `json:"enabled,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
	ServiceName string `json:"serviceName,omitempty"`
	// RecordArguments names the servers whose tool calls' arguments and
	// results go into their spans (cut to telemetry.MaxRecordedBytes):
	// none unless named, as the user's config alone can.
	RecordArguments []string `json:"recordArguments,omitempty"`
}

// Config is a validated configuration file.
type Config struct {
	// Path is the file the config was read from ("" for an in-memory config).
	Path       string
	MCP        MCP
	Permission Permission
	// Project is set by Validator.Desired when a project settings file is
	// part of the configuration.
	Project *ProjectStatus
}

// Warnings are the warnings of c's servers, in order.
func (c *Config) Warnings() Errors {
	var out Errors
	for _, s := range c.MCP.Servers {
		out = append(out, s.Warnings...)
	}
	return out
}

// Server returns the server with the given name.
func (c *Config) Server(name string) (Server, bool) {
	for _, s := range c.MCP.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// Provenance is a server entry's registry object: the registry, server
// name, version and server.json digest it was installed from.
type Provenance struct {
	URL          string `json:"url"`
	Name         string `json:"name"`
	Version      string `json:"version"`
	Digest       string `json:"digest"`
	Kind         string `json:"kind,omitempty"`
	BundleSHA256 string `json:"bundleSha256,omitempty"`
}
