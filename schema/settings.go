package schema

import (
	"cmp"
	"time"
)

// DefaultMaxArgumentBytes is mcp.maxArgumentBytes' default. A model's
// arguments are rarely more than a few kilobytes; the largest ordinary
// ones are a file the built-in write replaces, and a model that writes a
// megabyte in one call is already far past what it can produce in a turn.
const DefaultMaxArgumentBytes = 1 << 20

// Settings bound the calls of one tool source's tools: a server's
// (Server.Settings) or, for a source that sets none of its own such as
// FreeCode's built-ins, the mcp section's (MCP.Defaults). They are
// resolved (MCP.Resolve) as the config is read; everything downstream
// reads them as they are. None of them is part of SpecHash: a change
// applies to the next call without a restart.
type Settings struct {
	// CallTimeout bounds one call: the server's callTimeout, else
	// mcp.callTimeout, else DefaultCallTimeout.
	CallTimeout time.Duration
	// MaxOutputTokens caps one result, in estimated tokens: the server's
	// maxOutputTokens, else mcp.maxOutputTokens, else
	// DefaultMaxOutputTokens.
	MaxOutputTokens int
	// OwnCallTimeout and OwnOutputCap say that the server's entry sets
	// callTimeout and maxOutputTokens itself: what `mcp get` shows as its
	// own, and a cap a tool's size hint does not raise.
	OwnCallTimeout bool
	OwnOutputCap   bool
}

// written are the settings an entry or the mcp section writes; zero: not
// written (config.cue allows no zero).
type written struct {
	callTimeout     time.Duration
	maxOutputTokens int
	lifecycle       Lifecycle
	idleTimeout     time.Duration
}

// Resolve returns s with every setting resolved: each the server's own
// value, else the mcp section m's (for the settings it has), else the
// default. It is the one place the defaults of a server are applied: Parse
// resolves a file's servers against the file's own mcp section, Desired a
// project's against the user's (whose callTimeout and maxOutputTokens
// apply to every server; a file's mcp.limits apply only to its own
// servers, so Parse merges them into each server's Limits as it reads
// it). Resolving again against the same m changes nothing.
func (m MCP) Resolve(s Server) Server {
	s.Timeout = cmp.Or(s.Timeout, DefaultTimeout)
	s.Limits = s.Limits.WithDefaults()
	s.Settings = Settings{
		CallTimeout:     cmp.Or(s.written.callTimeout, m.written.callTimeout, DefaultCallTimeout),
		MaxOutputTokens: cmp.Or(s.written.maxOutputTokens, m.written.maxOutputTokens, DefaultMaxOutputTokens),
		OwnCallTimeout:  s.written.callTimeout > 0,
		OwnOutputCap:    s.written.maxOutputTokens > 0,
	}
	s.Lifecycle = cmp.Or(s.written.lifecycle, m.written.lifecycle, LifecycleAlways)
	s.IdleTimeout = cmp.Or(s.written.idleTimeout, m.written.idleTimeout, DefaultIdleTimeout)
	return s
}

// OnDemand reports whether s is started by its first use rather than
// kept running (Lifecycle, resolved).
func (s Server) OnDemand() bool { return s.Lifecycle == LifecycleOnDemand }

// resolve resolves m's own settings (Defaults, MaxArgumentBytes, Limits)
// and every server of it (Resolve).
func (m *MCP) resolve() {
	m.Defaults = m.Resolve(Server{}).Settings
	m.MaxArgumentBytes = cmp.Or(m.MaxArgumentBytes, DefaultMaxArgumentBytes)
	m.Limits = m.Limits.WithDefaults()
	for i, s := range m.Servers {
		m.Servers[i] = m.Resolve(s)
	}
}
