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

// Defaults applied after validation when a field is absent.
const (
	DefaultTimeout      = 5000 * time.Millisecond
	DefaultPollInterval = 5000 * time.Millisecond
	MinPollInterval     = 100 * time.Millisecond
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
	Enabled   bool              `json:"enabled"`
	Timeout   time.Duration     `json:"-"`
	// Limits bound what the server can make FreeCode hold: defaults, then
	// the file's mcp.limits, then the server's own limits, field by field.
	Limits Limits `json:"-"`
	// Source is SourceUser or "project:<dir>"; it is not part of the file.
	Source string `json:"-"`
	// Hold, when set, keeps the server from running (see LoadDesired).
	Hold *Hold `json:"-"`
	// Shown is the command line or URL as written in the file, before
	// ${VAR} expansion: what status, logs and errors show, so that a secret
	// passed through a variable is not printed.
	Shown string `json:"-"`
}

// SpecHash identifies what would run: the resolved command, env, url,
// headers, transport, timeout and limits. Enabled and Source are not part
// of it, so toggling a server or moving it between files does not count as
// a change of spec.
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
	}
	b, _ := json.Marshal(spec{s.Name, s.Type, s.Command, s.URL, sortedPairs(s.Headers), sortedPairs(s.Env), s.Transport, s.Timeout.Milliseconds(), s.Limits.WithDefaults()})
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

// Permission holds tool-id rules; a rule is a tool id or an id prefix that
// ends at a "__" boundary.
type Permission struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// MCP is the "mcp" section of the config.
type MCP struct {
	Servers      []Server      `json:"servers"`
	PollInterval time.Duration `json:"-"`
}

// Config is a validated configuration file.
type Config struct {
	// Path is the file the config was read from ("" for an in-memory config).
	Path       string
	MCP        MCP
	Permission Permission
	// Project is set by LoadDesired when a project settings file is part
	// of the configuration.
	Project *ProjectStatus
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
