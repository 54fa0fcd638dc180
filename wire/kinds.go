package wire

// The kinds of the events FreeCode publishes: each event type's Kind()
// returns one of these, and it is the event's name on the API's event
// stream (GET /v1/events; docs/api.md, "Events"). Consumers switch on these
// constants, never on the bare strings, so that a kind is spelled once.
// The strings are part of the API and do not change.
const (
	// KindPhaseChanged: PhaseChanged.
	KindPhaseChanged = "phase_changed"
	// KindServerWaking: ServerWaking.
	KindServerWaking = "server_waking"
	// KindCallProgress: CallProgress.
	KindCallProgress = "call_progress"
	// KindConfigError: ConfigErrorChanged.
	KindConfigError = "config_error"
	// KindResourcesChanged: ResourcesChanged.
	KindResourcesChanged = "resources_changed"
	// KindPromptsChanged: PromptsChanged.
	KindPromptsChanged = "prompts_changed"
	// KindResourceUpdated: ResourceUpdated.
	KindResourceUpdated = "resource_updated"
	// KindElicitationRequested: ElicitationRequested.
	KindElicitationRequested = "elicitation_requested"
	// KindElicitationAnswered: ElicitationAnswered.
	KindElicitationAnswered = "elicitation_answered"
	// KindApprovalRequested: api.ApprovalRequested.
	KindApprovalRequested = "approval_requested"
	// KindApprovalAnswered: api.ApprovalAnswered.
	KindApprovalAnswered = "approval_answered"
	// KindToolsChanged: registry.ToolsChanged.
	KindToolsChanged = "tools_changed"
	// KindToolsLoaded: defs.ToolsLoaded.
	KindToolsLoaded = "tools_loaded"
	// KindDefsPolicyChanged: defs.PolicyChanged.
	KindDefsPolicyChanged = "defs_policy_changed"
)

// The kinds of the events only the API's streams send; no event type
// carries them.
const (
	// KindSubscribed is the first event of GET /v1/events: the client is
	// subscribed, and no event published after it is lost unannounced.
	KindSubscribed = "subscribed"
	// KindMissed ({"missed": N}) says N events were dropped because the
	// client read too slowly: read the state again.
	KindMissed = "missed"
	// KindLogSession ({"session": N}) starts the lines of a server's
	// session N on GET /v1/servers/{name}/logs?follow=1.
	KindLogSession = "session"
	// KindLogLine is one stderr line of a followed log (data: the line).
	KindLogLine = "line"
	// KindLogError ends a followed log with the reason (data: the message).
	KindLogError = "error"
)
