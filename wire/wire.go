// Package wire is the local API's model of the daemon's state: the status of
// every server, the events the controller publishes, and a server's stderr
// as the logs endpoint answers it. The controller produces these types
// directly and package api serves and decodes them, so each is defined once
// for both ends of the socket; their JSON is the API's (docs/api.md, "The
// local API").
//
// It imports nothing of FreeCode's: the controller may use it without
// reaching the HTTP layer above it.
package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Status is the answer of GET /v1/status. The controller fills ConfigError,
// Servers and ObservedAt; serve adds ServePID, ConfigPath and ProjectError.
type Status struct {
	// ServePID is the pid of the serve process (0 when the status was not
	// produced by a running serve).
	ServePID int `json:"servePid,omitempty"`
	// ConfigPath is the file serve watches; Project the project settings
	// file it reads too ("" none), and Root the directory its built-in
	// tools work in.
	ConfigPath string `json:"configPath,omitempty"`
	Project    string `json:"project,omitempty"`
	Root       string `json:"root,omitempty"`
	// ConfigError is why the last edit of the config was not applied ("" if
	// it was); the last good config stays applied meanwhile. It names
	// file:line:col.
	ConfigError string `json:"configError,omitempty"`
	// Servers: one entry per desired or still known server, sorted by name.
	Servers    []ServerStatus `json:"servers"`
	ObservedAt time.Time      `json:"observedAt,omitzero"`

	// ProjectError is why the project's settings file is ignored (it is
	// invalid: the reason quotes its positioned errors), "" when it is
	// not; the user's config applies meanwhile.
	ProjectError string `json:"projectError,omitempty"`

	// Audit is the audit log's state (nil when it is not kept).
	Audit *AuditStatus `json:"audit,omitempty"`
}

// Desired is what the config asks for one server.
type Desired struct {
	Enabled  bool   `json:"enabled"`
	SpecHash string `json:"specHash,omitempty"`
	Type     string `json:"type,omitempty"`
	// Target is the command line of a local server or the URL of a remote
	// one, as written in the config (never with expanded ${VAR} values).
	Target string `json:"target,omitempty"`
	// ToolsFilter identifies the server's tools filter
	// (schema.ToolFilter.Key); "" when it has none.
	ToolsFilter string `json:"toolsFilter,omitempty"`
	// Lifecycle is "on-demand" for a server started by its first use;
	// "" for one that runs while configured ("always").
	Lifecycle string `json:"lifecycle,omitempty"`
	// IdleTimeoutMS is how long, in milliseconds, an on-demand server
	// stays running after its last use; 0 for the others.
	IdleTimeoutMS int64 `json:"idleTimeoutMs,omitempty"`
}

// ServerStatus is one server, desired next to actual.
type ServerStatus struct {
	Name string `json:"name"`
	// Source says which configuration file defines it ("user" or
	// "project:<dir>"); "" once it is no longer configured.
	Source  string  `json:"source,omitempty"`
	Desired Desired `json:"desired"`
	// Phase is where the server is in its life cycle; "" when nothing
	// observed the actual side.
	Phase Phase `json:"phase,omitempty"`
	// SpecHash is the spec of what runs ("" if nothing does); it differs
	// from Desired.SpecHash while a changed server restarts.
	SpecHash string `json:"specHash,omitempty"`
	// Generation counts starts; ObservedGeneration is the start whose
	// outcome (ready or failure) the rest of the status reflects.
	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	PID                int   `json:"pid,omitempty"`
	Tools              int   `json:"tools"`
	// ToolsTotal is how many tools the session lists before the server's
	// tools filter (schema.ToolFilter); left out (0) when the filter hides
	// none, so Tools of ToolsTotal are registered.
	ToolsTotal int `json:"toolsTotal,omitempty"`
	// Resources, ResourceTemplates and Prompts count what the current
	// session lists beside tools (0 when none runs, as Tools); left out
	// when 0.
	Resources         int `json:"resources,omitempty"`
	ResourceTemplates int `json:"resourceTemplates,omitempty"`
	Prompts           int `json:"prompts,omitempty"`
	// Completions says the current session's server declared completions:
	// it completes the arguments of its prompts and resource templates
	// (POST /v1/servers/{name}/complete).
	Completions bool `json:"completions,omitempty"`
	// Instructions are the current session's server instructions, at most
	// mcp.MaxInstructionsBytes of them; InstructionsCut says the server
	// sent more, InstructionsBytes (set then) how much.
	Instructions      string `json:"instructions,omitempty"`
	InstructionsCut   bool   `json:"instructionsCut,omitempty"`
	InstructionsBytes int    `json:"instructionsBytes,omitempty"`
	// Restarts counts starts after the first one (after a crash or failed
	// start, a changed spec, or a restart request), but not Reconnects.
	Restarts int `json:"restarts"`
	// Calls are the server's tool calls through this process (nil before
	// the first).
	Calls *CallStats `json:"calls,omitempty"`
	// Crashes counts the restarts that followed a failure: a start that
	// failed or a session that ended on its own (a crash, a lost
	// connection). The rest of Restarts were asked for: a changed spec, a
	// restart request, enabling the server again.
	Crashes int `json:"crashes"`
	// Reconnects counts the starts, not in Restarts, that tried again to
	// reach a remote server that could not be reached (nothing listening,
	// no route): waiting for an endpoint is not a crash.
	Reconnects int `json:"reconnects,omitempty"`
	// UnreachableSince is when a remote server waiting in PhaseBackoff was
	// first found unreachable (its start or session failed with
	// mcp.ErrUnreachable); zero while it is not.
	UnreachableSince time.Time `json:"unreachableSince,omitzero"`
	// StartTimeoutMS is the time budget, in milliseconds, of the current
	// or next start when it is longer than the configured timeout: a start
	// that ran out of time while the server was still working (a first
	// `npx -y` downloading its package) gives the next one twice as long,
	// up to a bound. 0: the configured timeout.
	StartTimeoutMS int64 `json:"startTimeoutMs,omitempty"`
	// Since is the time of the last phase change.
	Since time.Time `json:"since,omitzero"`
	// LastRunAt is when the server's last session ended (zero while its
	// first runs, or if none did); ManifestStoredAt is when the manifest
	// it is advertised from (an idle on-demand server) or last stored was
	// written.
	LastRunAt        time.Time `json:"lastRunAt,omitzero"`
	ManifestStoredAt time.Time `json:"manifestStoredAt,omitzero"`
	// LastError is the failure the server is in now: why its last start
	// failed or its session ended (exit status and stderr tail, timeout,
	// HTTP status...), or why the tools of its running session were
	// refused. It is cleared once a start succeeds, so a ready server shows
	// none unless its tools were refused.
	LastError string `json:"lastError,omitempty"`
	// LastFailure is the most recent failure and LastFailureAt when it
	// happened; unlike LastError they are kept after the server recovers.
	LastFailure   string    `json:"lastFailure,omitempty"`
	LastFailureAt time.Time `json:"lastFailureAt,omitzero"`
	// Reason says why a configured server does not run by design (its
	// project is not trusted, its name is defined twice, or its entry has
	// errors: PhaseInvalid, then it lists them, one per line) or what it
	// waits for (PhaseNeedsLogin: a user to sign in), with what to do.
	Reason string `json:"reason,omitempty"`
	// SignIn is a remote server's OAuth sign-in as stored; nil for a
	// server FreeCode does not sign in to (a local one, or one with an
	// Authorization header of its own) and for one that shows no sign of
	// using OAuth (no oauth object, nothing stored, never asked for a
	// sign-in).
	SignIn *SignIn `json:"signIn,omitempty"`
	// StderrTail is the end of the stderr of the current session, or of
	// the last one (or of the last failed start) when none runs.
	StderrTail []string  `json:"stderrTail,omitempty"`
	NextRetry  time.Time `json:"nextRetry,omitzero"`
	// Warnings are about the server's registered tools: tools kept
	// although references in their input schemas were not followed, so
	// those parts of their arguments are not checked. At most
	// MaxServerWarnings; MoreWarnings counts the rest.
	Warnings     []string `json:"warnings,omitempty"`
	MoreWarnings int      `json:"moreWarnings,omitempty"`
}

// MaxServerWarnings bounds ServerStatus.Warnings.
const MaxServerWarnings = 50

// Phase is where a server is in its life cycle. On the wire it is its name
// ("ready"); decoding a name that is not one of the phases below fails.
type Phase string

// The phases. The controller reports every one but PhaseFailed.
const (
	// PhasePending: desired and enabled, not started yet (or waiting for a
	// start slot).
	PhasePending Phase = "pending"
	// PhaseStarting: connecting, initializing and listing tools.
	PhaseStarting Phase = "starting"
	// PhaseReady: connected; its tools are in the registry.
	PhaseReady Phase = "ready"
	// PhaseBackoff: the last start failed or the session ended on its own;
	// the next start is at ServerStatus.NextRetry.
	PhaseBackoff Phase = "backoff"
	// PhaseNeedsLogin: a remote server that cannot be reached until a user
	// signs in (`freecode mcp login <name>`): no usable credentials are
	// stored, or the authorization server refused them. It is not retried
	// on a timer: a change of the stored credentials (a sign-in from
	// another terminal), of the spec, or a restart request starts it
	// again. LastError says why, Reason what to do.
	PhaseNeedsLogin Phase = "needs-login"
	// PhaseStopping: being stopped (removed, disabled, spec changed,
	// restart requested, or shutting down).
	PhaseStopping Phase = "stopping"
	// PhaseStopped: not running and not waiting to retry.
	PhaseStopped Phase = "stopped"
	// PhaseIdle: an on-demand server that is configured, known (its
	// manifest is advertised) and not running; its first use starts it.
	PhaseIdle Phase = "idle"
	// PhaseDisabled: configured with enabled: false.
	PhaseDisabled Phase = "disabled"
	// PhaseUntrusted: a project server whose definition the user has not
	// trusted (or that changed since); ServerStatus.Reason says which.
	PhaseUntrusted Phase = "untrusted"
	// PhaseConflict: the name is defined by both the user and the project
	// configuration; neither copy runs.
	PhaseConflict Phase = "conflict"
	// PhaseInvalid: the server's entry has errors of its own (an unset
	// ${VAR}, a wrong field); ServerStatus.Reason lists them, positioned.
	// It does not run until they are fixed; the other servers do.
	PhaseInvalid Phase = "invalid"
	// PhaseFailed: a one-off connection (`freecode mcp status --probe`
	// without a serve) did not get to ready; LastError says why.
	PhaseFailed Phase = "failed"
)

// Phases returns every phase, in the order of a server's life.
func Phases() []Phase {
	return []Phase{PhasePending, PhaseStarting, PhaseReady, PhaseBackoff, PhaseNeedsLogin, PhaseStopping, PhaseStopped,
		PhaseIdle, PhaseDisabled, PhaseUntrusted, PhaseConflict, PhaseInvalid, PhaseFailed}
}

func (p Phase) String() string { return string(p) }

// MarshalText refuses a phase that is none of Phases: nothing may send a
// phase its readers cannot decode. "" stands for "not observed".
func (p Phase) MarshalText() ([]byte, error) {
	if p != "" && !slices.Contains(Phases(), p) {
		return nil, fmt.Errorf("marshal phase: unknown phase %q", string(p))
	}
	return []byte(p), nil
}

// UnmarshalText accepts the name of one of Phases (or "").
func (p *Phase) UnmarshalText(b []byte) error {
	q := Phase(b)
	if q != "" && !slices.Contains(Phases(), q) {
		return fmt.Errorf("unknown phase %q", b)
	}
	*p = q
	return nil
}

// PhaseChanged is published after every phase transition of a server (event
// phase_changed). Err is the server's last error when the new phase is
// PhaseBackoff or PhaseNeedsLogin, and NextRetry the time of the next start
// when it is PhaseBackoff; both are zero otherwise.
//
// Events of one controller are published in the order the transitions
// happened. Like every event it is a hint: a subscriber that missed some
// reads the status afresh.
type PhaseChanged struct {
	Server    string    `json:"server"`
	Phase     Phase     `json:"phase"`
	Err       string    `json:"err,omitempty"`
	NextRetry time.Time `json:"nextRetry,omitzero"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (PhaseChanged) Kind() string { return KindPhaseChanged }

// ServerWaking is published when a use (a call, read, prompt or
// subscription) starts an idle on-demand server (event server_waking),
// before its phase changes. Reason says what woke it ("call
// mcp__memory__read_graph").
type ServerWaking struct {
	Server string `json:"server"`
	Reason string `json:"reason"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (ServerWaking) Kind() string { return KindServerWaking }

// CallProgress is published for every progress notice a server sends
// about a call made through the API while it runs (event call_progress):
// CallID is the call's id (its callId parameter, or the one the API gave
// it), Tool the tool's id. A server's notices of one call come in order,
// their Progress growing; they are bounded per call, so a subscriber may
// not see every one. Message is the server's text, for display once
// neutralized.
type CallProgress struct {
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	Progress
}

// Kind is the event's name on the wire (and implements event.Event).
func (CallProgress) Kind() string { return KindCallProgress }

// ConfigErrorChanged is published when the configuration error shown in
// Status appears, changes or clears ("") (event config_error).
type ConfigErrorChanged struct {
	Err string `json:"err,omitempty"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (ConfigErrorChanged) Kind() string { return KindConfigError }

// SignIn is a remote server's OAuth sign-in as stored (serve's token store,
// $FREECODE_HOME/auth). It never holds a token or a secret.
type SignIn struct {
	State SignInState `json:"state"`
	// Grant is "authorization_code" (a user signed in) or
	// "client_credentials".
	Grant  string `json:"grant,omitempty"`
	Issuer string `json:"issuer,omitempty"`
	// Account is who signed in, if the authorization server said (an ID
	// token).
	Account string   `json:"account,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	// Expiry is the access token's; zero if the server gave none.
	Expiry time.Time `json:"expiry,omitzero"`
	// Refreshable: FreeCode renews the access token by itself (a refresh
	// token, or the client credentials grant).
	Refreshable bool `json:"refreshable,omitempty"`
	// Reason says why a sign-in is needed (SignInNeedsLogin).
	Reason string `json:"reason,omitempty"`
}

// SignInState is where a server's sign-in stands.
type SignInState string

const (
	// SignInNone: nothing is stored (never signed in, or signed out). A
	// server that asks for no authorization stays so.
	SignInNone SignInState = "not-signed-in"
	// SignInSignedIn: a usable access token is stored, or one FreeCode
	// renews by itself.
	SignInSignedIn SignInState = "signed-in"
	// SignInNeedsLogin: what is stored can no longer be used; a user must
	// sign in again.
	SignInNeedsLogin SignInState = "needs-login"
)

// Version identifies what s says: two reads of the store give equal
// versions unless a sign-in, a renewal or a sign-out happened between
// them. A nil s (a server that does not sign in) is "".
func (s *SignIn) Version() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%q\x00%d\x00%t\x00%s", s.State, s.Grant, s.Issuer, s.Account, s.Scopes,
		s.Expiry.UnixNano(), s.Refreshable, s.Reason)
}

// Tool is one converted tool of a server, as `freecode mcp tools` shows it
// and GET /v1/servers/{name}/tools answers it.
type Tool struct {
	// ID is the tool's id, mcp__<server>__<tool>.
	ID string `json:"id"`
	// Name is the tool's name as its server lists it.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// ReadOnly is true only when the server says readOnlyHint: true.
	ReadOnly    bool            `json:"readOnly"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// InputSchema is the resolved, self-contained schema the arguments are
	// validated against.
	InputSchema json.RawMessage `json:"inputSchema"`
	// Raw is the tool as its server listed it. Its JSON is this object
	// with the fields above written over it, so what FreeCode does not
	// interpret (outputSchema, icons, _meta, execution, …) is passed on;
	// the server's inputSchema gives way to the resolved one. See
	// marshalOver.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes t's fields over the server's object (Raw).
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	return marshalOver(t.Raw, plain(t))
}

// UnmarshalJSON decodes t and keeps the whole object as Raw.
func (t *Tool) UnmarshalJSON(b []byte) error {
	type plain Tool
	return unmarshalKeep(b, (*plain)(t), &t.Raw)
}

// ServerTools is the answer of GET /v1/servers/{name}/tools: the tools the
// server has registered, sorted by id.
type ServerTools struct {
	Server string `json:"server"`
	// Phase is the server's phase when the tools were read. Only a ready
	// server's tools are its current session's; a server being restarted
	// keeps those of its last session until the new one lists its own.
	Phase Phase  `json:"phase"`
	Tools []Tool `json:"tools"`
	// Warnings say why tools of the session's list were left out (an id
	// two tools map to, a schema that cannot be resolved).
	Warnings []string `json:"warnings,omitempty"`
	// Hidden are the tools of the session that the server's tools filter
	// keeps out of the registry, sorted by name; only answered for
	// GET /v1/servers/{name}/tools?all=true, so they are never advertised.
	Hidden []HiddenTool `json:"hidden,omitempty"`
}

// HiddenTool is a tool a server lists and its tools filter hides.
type HiddenTool struct {
	// Name is the server's own name of the tool.
	Name string `json:"name"`
	// Reason is the filter's rule that hides it: `tools.exclude "x*"` or
	// `tools.include, no pattern matches`.
	Reason string `json:"reason"`
}

// Logs is the answer of GET /v1/servers/{name}/logs: stderr lines of one
// session of a server.
//
// Lines are numbered from 1 in each session, in the order the server wrote
// them, and a reader asks for the lines after the last one it has (a
// LogCursor): so a line is read once however often the same text repeats,
// and never attributed to the wrong session.
type Logs struct {
	Server string   `json:"server"`
	Lines  []string `json:"lines"`
	// Session identifies the session (start attempt) the lines come from;
	// it changes when the server restarts. 0 when there was none yet.
	Session int64 `json:"session,omitempty"`
	// Last is the number of Session's last line when the lines were read:
	// the last of Lines, or the line a read after it started from when
	// there is nothing new. It is the reader's cursor and not part of the
	// answer.
	Last int64 `json:"-"`
}

// Cursor is where a reader of l stands once it has l's lines.
func (l Logs) Cursor() LogCursor { return LogCursor{Session: l.Session, Line: l.Last} }

// LogCursor addresses the end of what a reader has of a server's stderr:
// line Line of session Session (Line 0: none of its lines). The zero
// cursor reads everything there is.
type LogCursor struct {
	Session int64
	Line    int64
}

// Lists is the answer of GET /v1/lists: everything the servers list, read
// at once from one snapshot of serve's state, so that a client showing
// all of it (the gateway) reads it in one request, whatever the number of
// servers.
type Lists struct {
	// Tools are the registered tools of every configured or known server,
	// each as GET /v1/servers/{name}/tools answers it, sorted by name.
	Tools []ServerTools `json:"tools"`
	// Resources and Prompts are as GET /v1/resources and GET /v1/prompts
	// answer them.
	Resources Resources `json:"resources"`
	Prompts   Prompts   `json:"prompts"`
	// Instructions are the instructions of each server whose session sent
	// some (ServerStatus.Instructions), by name.
	Instructions map[string]string `json:"instructions,omitempty"`
	// Completions are the servers whose session declared completions
	// (ServerStatus.Completions), sorted.
	Completions []string `json:"completions,omitempty"`
}
