package mcp

import (
	"fmt"
	"os"
	"time"

	"github.com/freecode/freecode/mcp/auth"
)

// ServerType says how a server is reached.
type ServerType string

const (
	// Local is a child process FreeCode starts and speaks to over stdio.
	Local ServerType = "local"
	// Remote is an endpoint reached over HTTP.
	Remote ServerType = "remote"
)

// Transport selects the wire protocol of a remote server.
type Transport string

const (
	// TransportAuto tries streamable HTTP and falls back to HTTP+SSE when
	// the endpoint answers POST initialize with a 4xx status, as the MCP
	// spec's backwards compatibility rule says. "" means the same.
	TransportAuto           Transport = "auto"
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
)

// Spec is what a session needs to know of one server: how to start or reach
// it, what it may send, and how to show it. It is resolved: ${VAR}
// references are expanded and defaults applied by whoever builds it (for
// FreeCode's configuration, controller.MCPSpec).
type Spec struct {
	// Name is the server's configured name; tool ids and messages carry it.
	Name string
	Type ServerType

	// Command is a local server's argv; Command[0] is looked up in PATH.
	Command []string
	// Env is added to the few variables a local server inherits (see
	// inheritedEnv).
	Env map[string]string

	// URL is a remote server's endpoint, Headers go with every request to
	// it, and Transport selects the protocol ("" is TransportAuto).
	URL       string
	Headers   map[string]string
	Transport Transport
	// OAuth is a remote server's authorization settings; the zero value
	// discovers them on the server's first 401. It is used only when
	// Options.Tokens is set and the server signs in (SignsIn).
	OAuth auth.Config

	// Timeout bounds connecting: starting or reaching the server,
	// initialize and the whole tools/list. It must be set (FreeCode's
	// configuration resolves it: the server's "timeout" or its default).
	Timeout time.Duration
	// Limits bound what the server can make FreeCode hold; every field
	// must be set.
	Limits Limits
	// MaxLimits are the highest values each limit may be configured to; a
	// LimitError suggests raising a limit to no more than this. A zero
	// field sets no bound.
	MaxLimits Limits

	// Roots are the directories the server may work in, absolute and
	// clean; only when there are some does the session declare the roots
	// capability and answer roots/list (see rootsHandler).
	Roots []string
	// LogLevel is the lowest severity of the log messages the server is
	// asked to send (one of LogLevels); "" asks nothing, which leaves the
	// 2025-11-25 revision's servers at their own default and makes those
	// of 2026-07-28 send none.
	LogLevel string
	// Protocol pins the protocol revision: ProtocolVersion or
	// ModernProtocolVersion. "" (and ProtocolAuto, the same) speaks the
	// revision Options.Protocols remembers for the server, or else asks
	// the server with one server/discover probe and remembers the answer
	// (see protocol.go).
	Protocol string

	// Shown is the command line or URL as written by the user, before
	// ${VAR} expansion: what logs and errors show instead of Command or
	// URL, so that a secret passed through a variable is not printed. ""
	// shows the command as it is and the URL without userinfo and query.
	Shown string
}

// Limits bound what one server can make FreeCode buffer. A server that goes
// over one has its session ended with a *LimitError naming the limit.
type Limits struct {
	// MaxMessageBytes bounds one JSON-RPC message in bytes: a stdout line,
	// an HTTP body, an SSE event.
	MaxMessageBytes int64
	// MaxListItems bounds the items of one list (tools/list,
	// resources/list, resources/templates/list, prompts/list, each on its
	// own), over all its pages.
	MaxListItems int
	// MaxListPages bounds the pages of one list.
	MaxListPages int
	// MaxListBytes bounds the bytes of one list, over all its pages.
	MaxListBytes int64
}

// check reports the first limit that is not set.
func (l Limits) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{limitMessageBytes, l.MaxMessageBytes},
		{limitListItems, int64(l.MaxListItems)},
		{limitListPages, int64(l.MaxListPages)},
		{limitListBytes, l.MaxListBytes},
	} {
		if f.v <= 0 {
			return fmt.Errorf("limit %s is %d: every limit must be positive", f.name, f.v)
		}
	}
	return nil
}

// max is the bound of limit in l, or 0 for none.
func (l Limits) max(limit string) int64 {
	switch limit {
	case limitMessageBytes:
		return l.MaxMessageBytes
	case limitListItems:
		return int64(l.MaxListItems)
	case limitListPages:
		return int64(l.MaxListPages)
	case limitListBytes:
		return l.MaxListBytes
	}
	return 0
}

// Launcher starts the process of a local server in place of os/exec, for
// example under a reaper process that cleans up after it (see
// Options.Launcher).
type Launcher interface {
	// Launch starts c with c.Stdin, c.Stdout and c.Stderr as its standard
	// streams, as the leader of a new process group. It returns once the
	// process runs; if it cannot be started, the error is the one os/exec
	// would have returned.
	Launch(c LaunchSpec) (LaunchedProcess, error)
}

// LaunchSpec is a process for a Launcher to start: what os/exec would run.
type LaunchSpec struct {
	Path string   // the executable, as resolved by exec.LookPath
	Args []string // argv, Args[0] included
	Env  []string // the whole environment
	// Stdin, Stdout and Stderr become the process's; the session keeps the
	// other ends of the pipes and the launcher may close these once the
	// process has them.
	Stdin, Stdout, Stderr *os.File
}

// LaunchedProcess is a server process started by a Launcher.
type LaunchedProcess interface {
	// Pid is the server's process id, also its process group id.
	Pid() int
	// Terminate sends SIGTERM to the server's process group.
	Terminate()
	// Kill sends SIGKILL to the server's process group and, if the launcher
	// tracks them, to every other process the server left behind.
	Kill()
	// Wait returns the server's state once it has exited and its group
	// was sent SIGKILL (and, if the launcher tracks them, once everything
	// else it started is gone too).
	Wait() (*os.ProcessState, error)
}
