package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

func srv(name string, args ...string) schema.Server {
	return schema.Server{Name: name, Type: schema.Local, Command: append([]string{"/bin/" + name}, args...), Enabled: true, Timeout: time.Second}
}

func disabled(s schema.Server) schema.Server { s.Enabled = false; return s }

func filtered(s schema.Server, exclude ...string) schema.Server {
	s.Tools = schema.ToolFilter{Exclude: exclude}
	return s
}

func held(s schema.Server, kind schema.HoldKind) schema.Server {
	s.Hold = &schema.Hold{Kind: kind, Server: s.Name}
	return s
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b, c := srv("a"), srv("b"), srv("c")
	a2 := srv("a", "--changed")
	running := func(s schema.Server) observed {
		return observed{Phase: wire.PhaseReady, Running: true, SpecHash: s.SpecHash()}
	}
	type step struct {
		Kind actionKind
		Name string
	}
	cases := []struct {
		name    string
		desired []schema.Server
		actual  map[string]observed
		want    []step
	}{
		{name: "nothing desired, nothing running"},
		{
			name:    "start enabled servers that are not running, in name order",
			desired: []schema.Server{c, a, b},
			actual:  map[string]observed{"a": {Phase: wire.PhasePending}},
			want:    []step{{actStart, "a"}, {actStart, "b"}, {actStart, "c"}},
		},
		{
			name:    "leave running servers with an unchanged spec alone",
			desired: []schema.Server{a, b},
			actual:  map[string]observed{"a": running(a), "b": running(b)},
		},
		{
			name:    "stop a removed server",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": running(a), "b": running(b)},
			want:    []step{{actStop, "b"}},
		},
		{
			name:   "forget a removed server once it has stopped",
			actual: map[string]observed{"b": {Phase: wire.PhaseStopped, SpecHash: b.SpecHash()}},
			want:   []step{{actForget, "b"}},
		},
		{
			name:   "forget a removed server waiting in backoff",
			actual: map[string]observed{"b": {Phase: wire.PhaseBackoff, SpecHash: b.SpecHash(), NextRetry: now.Add(time.Hour)}},
			want:   []step{{actForget, "b"}},
		},
		{
			name:    "stop a disabled server",
			desired: []schema.Server{disabled(a)},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "never start an untrusted project server",
			desired: []schema.Server{held(a, schema.HoldUntrusted)},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "stop a project server that became untrusted",
			desired: []schema.Server{held(a, schema.HoldUntrusted)},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "leave an untrusted server marked untrusted alone",
			desired: []schema.Server{held(a, schema.HoldUntrusted)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseUntrusted}},
		},
		{
			name:    "stop a server whose entry became invalid",
			desired: []schema.Server{held(a, schema.HoldInvalid)},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "mark an invalid server invalid, and only it",
			desired: []schema.Server{held(a, schema.HoldInvalid), b},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStopped, SpecHash: a.SpecHash()}, "b": running(b)},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "leave an invalid server marked invalid alone",
			desired: []schema.Server{held(a, schema.HoldInvalid)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseInvalid}},
		},
		{
			name:    "start an invalid server once it is fixed",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseInvalid}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a disabled server that becomes a name conflict is re-marked",
			desired: []schema.Server{held(disabled(a), schema.HoldConflict)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseDisabled}},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "mark a stopped disabled server disabled",
			desired: []schema.Server{disabled(a)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStopped, SpecHash: a.SpecHash()}},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "a disabled server in backoff is disabled, not retried",
			desired: []schema.Server{disabled(a)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(-time.Second)}},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "a disabled server already marked disabled is left alone",
			desired: []schema.Server{disabled(a)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseDisabled}},
		},
		{
			name:    "a new disabled server is marked disabled",
			desired: []schema.Server{disabled(a)},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "restart a server whose spec hash changed: stop first",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "then start the new spec once stopped",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStopped, SpecHash: a.SpecHash()}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "wait while a server is stopping",
			desired: []schema.Server{a2, disabled(b)},
			actual: map[string]observed{
				"a": {Phase: wire.PhaseStopping, Running: true, Stopping: true, SpecHash: a.SpecHash()},
				"b": {Phase: wire.PhaseStopping, Running: true, Stopping: true, SpecHash: b.SpecHash()},
				"c": {Phase: wire.PhaseStopping, Running: true, Stopping: true, SpecHash: c.SpecHash()},
			},
		},
		{
			name:    "a starting server with the same spec is left alone",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStarting, Running: true, SpecHash: a.SpecHash()}},
		},
		{
			name:    "a starting server whose spec changed is stopped",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStarting, Running: true, SpecHash: a.SpecHash()}},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "respect backoff: NextRetry ahead",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Millisecond)}},
		},
		{
			name:    "backoff over: start again",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a changed spec ends the backoff wait",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour)}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a restart request ends the backoff wait",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour), RestartRequested: true}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a restart request stops a running server",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseReady, Running: true, SpecHash: a.SpecHash(), RestartRequested: true}},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "wait for a sign-in: the stored one is what it was",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseNeedsLogin, SpecHash: a.SpecHash(), Creds: "v1", CredsSeen: "v1"}},
		},
		{
			name:    "a sign-in (other stored credentials) starts a server waiting for one",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseNeedsLogin, SpecHash: a.SpecHash(), Creds: "v2", CredsSeen: "v1"}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a changed spec starts a server waiting for a sign-in",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": {Phase: wire.PhaseNeedsLogin, SpecHash: a.SpecHash(), Creds: "v1", CredsSeen: "v1"}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a restart request starts a server waiting for a sign-in",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseNeedsLogin, SpecHash: a.SpecHash(), Creds: "v1", CredsSeen: "v1", RestartRequested: true}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "a disabled server waiting for a sign-in is disabled",
			desired: []schema.Server{disabled(a)},
			actual:  map[string]observed{"a": {Phase: wire.PhaseNeedsLogin, SpecHash: a.SpecHash()}},
			want:    []step{{actDisable, "a"}},
		},
		{
			name:    "a ready server whose stored sign-in changed is checked",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseReady, Running: true, SpecHash: a.SpecHash(), Creds: "v2", CredsSeen: "v1"}},
			want:    []step{{actVerify, "a"}},
		},
		{
			name:    "a ready server whose tools filter changed has its tools registered again, not restarted",
			desired: []schema.Server{filtered(a, "x*")},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actRefilter, "a"}},
		},
		{
			name:    "a ready server whose tools went through the desired filter is left alone",
			desired: []schema.Server{filtered(a, "x*")},
			actual:  map[string]observed{"a": {Phase: wire.PhaseReady, Running: true, SpecHash: a.SpecHash(), Filter: filtered(a, "x*").Tools.Key()}},
		},
		{
			name:    "a starting server is not refiltered: it registers through the desired filter",
			desired: []schema.Server{filtered(a, "x*")},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStarting, Running: true, SpecHash: a.SpecHash()}},
		},
		{
			name:    "a changed spec wins over a changed filter",
			desired: []schema.Server{filtered(a2, "x*")},
			actual:  map[string]observed{"a": running(a)},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "a starting server is not checked",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseStarting, Running: true, SpecHash: a.SpecHash(), Creds: "v2", CredsSeen: "v1"}},
		},
		{
			name:    "a changed spec wins over a check",
			desired: []schema.Server{a2},
			actual:  map[string]observed{"a": {Phase: wire.PhaseReady, Running: true, SpecHash: a.SpecHash(), Creds: "v2", CredsSeen: "v1"}},
			want:    []step{{actStop, "a"}},
		},
		{
			name:    "a disabled server is started once enabled",
			desired: []schema.Server{a},
			actual:  map[string]observed{"a": {Phase: wire.PhaseDisabled, SpecHash: a.SpecHash()}},
			want:    []step{{actStart, "a"}},
		},
		{
			name:    "probe an unreachable server in backoff once its probe is due",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				Unreachable: true, NextProbe: now}},
			want: []step{{actProbe, "a"}},
		},
		{
			name:    "not before its probe is due",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				Unreachable: true, NextProbe: now.Add(time.Millisecond)}},
		},
		{
			name:    "one probe at a time",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				Unreachable: true, NextProbe: now.Add(-time.Minute), Probing: true}},
		},
		{
			name:    "an answered probe starts it at once, skipping the backoff",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				Unreachable: true, NextProbe: now.Add(time.Second), Answered: true}},
			want: []step{{actStart, "a"}},
		},
		{
			name:    "a server in backoff for another failure is not probed",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				NextProbe: now.Add(-time.Minute)}},
		},
		{
			name:    "backoff over: started, not probed",
			desired: []schema.Server{a},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now,
				Unreachable: true, NextProbe: now}},
			want: []step{{actStart, "a"}},
		},
		{
			name:    "an unreachable server that was disabled is disabled, not probed",
			desired: []schema.Server{disabled(a)},
			actual: map[string]observed{"a": {Phase: wire.PhaseBackoff, SpecHash: a.SpecHash(), NextRetry: now.Add(time.Hour),
				Unreachable: true, NextProbe: now}},
			want: []step{{actDisable, "a"}},
		},
		{
			name:    "a duplicated name counts once, first entry wins",
			desired: []schema.Server{a, a2},
			actual:  map[string]observed{"a": running(a)},
		},
		{
			name:    "mixed",
			desired: []schema.Server{a2, disabled(b), srv("d")},
			actual:  map[string]observed{"a": running(a), "b": running(b), "c": running(c), "d": {Phase: wire.PhaseBackoff, SpecHash: srv("d").SpecHash(), NextRetry: now.Add(time.Second)}},
			want:    []step{{actStop, "a"}, {actStop, "b"}, {actStop, "c"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acts := plan(tc.desired, tc.actual, now)
			var got []step
			for _, a := range acts {
				got = append(got, step{a.Kind, a.Name})
				if a.Kind == actStart || a.Kind == actProbe {
					require.Equal(t, a.Name, a.Spec.Name)
					for _, d := range tc.desired {
						if d.Name == a.Name {
							require.Equal(t, d.SpecHash(), a.Spec.SpecHash(), "start uses the desired spec")
							break
						}
					}
				}
			}
			require.Equal(t, tc.want, got)
			// Pure: same input, same output.
			require.Equal(t, acts, plan(tc.desired, tc.actual, now))
		})
	}
}

func TestStatusJSON(t *testing.T) {
	st := wire.Status{Servers: []wire.ServerStatus{{Name: "a", Phase: wire.PhaseBackoff, NextRetry: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, {Name: "b", Phase: wire.PhaseReady}}}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(b), `"phase":"backoff"`)
	require.Contains(t, string(b), `"nextRetry":"2026-01-01T00:00:00Z"`)
	require.Equal(t, 1, strings.Count(string(b), "nextRetry"), "zero NextRetry omitted")
	var back wire.Status
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, st.Servers, back.Servers)

	empty, err := json.Marshal(New(Options{}).Status())
	require.NoError(t, err)
	require.Contains(t, string(empty), `"servers":[]`)
}

// Each kind of hold has a phase of its own, which actDisable records.
func TestHeldPhases(t *testing.T) {
	a := schema.Server{Name: "a", Type: schema.Local, Command: []string{"x"}, Enabled: true}
	for kind, want := range map[schema.HoldKind]wire.Phase{
		schema.HoldUntrusted: wire.PhaseUntrusted,
		schema.HoldConflict:  wire.PhaseConflict,
		schema.HoldInvalid:   wire.PhaseInvalid,
	} {
		acts := plan([]schema.Server{held(a, kind)}, nil, time.Now())
		require.Len(t, acts, 1)
		require.Equal(t, actDisable, acts[0].Kind)
		require.Equal(t, want, acts[0].Phase, kind)
	}
}
