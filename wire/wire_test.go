package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPhaseText(t *testing.T) {
	for _, p := range Phases() {
		b, err := p.MarshalText()
		require.NoError(t, err)
		require.Equal(t, p.String(), string(b))
		var q Phase
		require.NoError(t, q.UnmarshalText(b))
		require.Equal(t, p, q)
	}
	require.Equal(t, "ready", PhaseReady.String())
	_, err := Phase("42").MarshalText()
	require.Error(t, err)
	var q Phase
	require.Error(t, q.UnmarshalText([]byte("bogus")))
	var st ServerStatus
	require.Error(t, json.Unmarshal([]byte(`{"name":"a","phase":"bogus"}`), &st))
}

// The JSON of the status and of the events is the API's, as docs/api.md
// documents it: field names, phase names, what is left out when empty.
func TestWireJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 7, 35, 1, 0, time.UTC)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"empty status", Status{Servers: []ServerStatus{}}, `{"servers":[]}`},
		{"status", Status{
			ServePID: 7, ConfigPath: "/c.json", ConfigError: "bad", ObservedAt: at, ProjectError: "ignored",
			Servers: []ServerStatus{{
				Name: "a", Source: "user", Desired: Desired{Enabled: true, SpecHash: "h", Type: "local", Target: "x --y"},
				Phase: PhaseBackoff, SpecHash: "h", Generation: 2, ObservedGeneration: 2, PID: 9, Tools: 3, Resources: 4, ResourceTemplates: 1, Prompts: 2, Restarts: 1, Crashes: 1, StartTimeoutMS: 10000,
				Since: at, LastError: "e", LastFailure: "e", LastFailureAt: at, Reason: "r", StderrTail: []string{"l"}, NextRetry: at,
			}, {Name: "b", Desired: Desired{}}},
		}, `{"servePid":7,"configPath":"/c.json","configError":"bad","servers":[` +
			`{"name":"a","source":"user","desired":{"enabled":true,"specHash":"h","type":"local","target":"x --y"},` +
			`"phase":"backoff","specHash":"h","generation":2,"observedGeneration":2,"pid":9,"tools":3,"resources":4,"resourceTemplates":1,"prompts":2,"restarts":1,` +
			`"crashes":1,"startTimeoutMs":10000,"since":"2026-11-30T07:35:01Z","lastError":"e","lastFailure":"e","lastFailureAt":"2026-11-30T07:35:01Z",` +
			`"reason":"r","stderrTail":["l"],"nextRetry":"2026-11-30T07:35:01Z"},` +
			`{"name":"b","desired":{"enabled":false},"tools":0,"restarts":0,"crashes":0}],` +
			`"observedAt":"2026-11-30T07:35:01Z","projectError":"ignored"}`},
		{"phase_changed", PhaseChanged{Server: "flaky", Phase: PhaseStarting}, `{"server":"flaky","phase":"starting"}`},
		{"phase_changed backoff", PhaseChanged{Server: "flaky", Phase: PhaseBackoff, Err: "exited", NextRetry: at},
			`{"server":"flaky","phase":"backoff","err":"exited","nextRetry":"2026-11-30T07:35:01Z"}`},
		{"config_error", ConfigErrorChanged{Err: "bad"}, `{"err":"bad"}`},
		{"config_error cleared", ConfigErrorChanged{}, `{}`},
		{"logs", Logs{Server: "a", Lines: []string{"x"}, Session: 2, Last: 40}, `{"server":"a","lines":["x"],"session":2}`},
		{"server tools", ServerTools{Server: "a", Phase: PhaseReady, Tools: []Tool{{ID: "mcp__a__t", Name: "t", ReadOnly: true,
			Annotations: json.RawMessage(`{"readOnlyHint":true}`), InputSchema: json.RawMessage(`{"type":"object"}`)}, {ID: "mcp__a__u", Name: "u.v",
			Title: "U", Description: "d", InputSchema: json.RawMessage(`{}`)}}, Warnings: []string{"w"}},
			`{"server":"a","phase":"ready","tools":[{"id":"mcp__a__t","name":"t","readOnly":true,"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}},` +
				`{"id":"mcp__a__u","name":"u.v","title":"U","description":"d","readOnly":false,"inputSchema":{}}],"warnings":["w"]}`},
		{"resource read", ResourceRead{Server: "a", URI: "x://y", Contents: []ResourceContent{{URI: "x://y", MimeType: "text/plain", Text: ptr("")},
			{URI: "x://z", Blob: []byte{0, 255}}}},
			`{"server":"a","uri":"x://y","contents":[{"uri":"x://y","mimeType":"text/plain","text":""},{"uri":"x://z","blob":"AP8="}]}`},
		{"prompts", Prompts{Servers: []ServerPrompts{{Server: "a", Phase: PhaseReady, Prompts: []Prompt{{Name: "p", Arguments: []PromptArgument{{Name: "n", Required: true}}}}}}},
			`{"servers":[{"server":"a","phase":"ready","prompts":[{"name":"p","arguments":[{"name":"n","required":true}]}]}]}`},
		{"prompt result", PromptResult{Server: "a", Prompt: "p", Messages: []PromptMessage{{Role: "user", Content: json.RawMessage(`{"type":"text","text":"hi"}`)}}},
			`{"server":"a","prompt":"p","messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{"resources_changed", ResourcesChanged{Source: "a"}, `{"source":"a"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}
	require.Equal(t, "phase_changed", PhaseChanged{}.Kind())
	require.Equal(t, "config_error", ConfigErrorChanged{}.Kind())
	require.Equal(t, "resources_changed", ResourcesChanged{}.Kind())
	require.Equal(t, "prompts_changed", PromptsChanged{}.Kind())
	require.True(t, ResourceContent{Blob: []byte{1}}.Binary())
	require.False(t, ResourceContent{Text: ptr("")}.Binary())
}

func ptr[T any](v T) *T { return &v }

func TestLogsCursor(t *testing.T) {
	require.Equal(t, LogCursor{Session: 3, Line: 12}, Logs{Session: 3, Last: 12, Lines: []string{"a"}}.Cursor())
	require.Zero(t, Logs{}.Cursor())
}

// The kinds are the API's names for its events: a constant's value never
// changes, and no two kinds are the same name (a subscriber
// could not tell the events apart: kinds is a map literal, so two kinds of
// one name do not compile). The literals here are the contract.
func TestKinds(t *testing.T) {
	kinds := map[string]string{
		KindPhaseChanged:         "phase_changed",
		KindCallProgress:         "call_progress",
		KindServerWaking:         "server_waking",
		KindConfigError:          "config_error",
		KindResourcesChanged:     "resources_changed",
		KindPromptsChanged:       "prompts_changed",
		KindResourceUpdated:      "resource_updated",
		KindElicitationRequested: "elicitation_requested",
		KindElicitationAnswered:  "elicitation_answered",
		KindApprovalRequested:    "approval_requested",
		KindApprovalAnswered:     "approval_answered",
		KindToolsChanged:         "tools_changed",
		KindToolsLoaded:          "tools_loaded",
		KindDefsPolicyChanged:    "defs_policy_changed",
		KindSubscribed:           "subscribed",
		KindMissed:               "missed",
		KindLogSession:           "session",
		KindLogLine:              "line",
		KindLogError:             "error",
	}
	for k, want := range kinds {
		require.Equal(t, want, k)
	}
	for _, tc := range []struct {
		ev   interface{ Kind() string }
		want string
	}{
		{PhaseChanged{}, KindPhaseChanged}, {ServerWaking{}, KindServerWaking}, {CallProgress{}, KindCallProgress}, {ConfigErrorChanged{}, KindConfigError},
		{ResourcesChanged{}, KindResourcesChanged}, {PromptsChanged{}, KindPromptsChanged}, {ResourceUpdated{}, KindResourceUpdated},
		{ElicitationRequested{}, KindElicitationRequested}, {ElicitationAnswered{}, KindElicitationAnswered},
	} {
		require.Equal(t, tc.want, tc.ev.Kind(), "%T", tc.ev)
	}
}

// The content types are MCP's names for its blocks.
func TestContentTypes(t *testing.T) {
	content := []string{ContentText, ContentImage, ContentAudio, ContentResource, ContentResourceLink}
	require.Equal(t, []string{"text", "image", "audio", "resource", "resource_link"}, content)
}
