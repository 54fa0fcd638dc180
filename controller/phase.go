package controller

import (
	"fmt"
	"time"

	"github.com/freecode/freecode/schema"
)

// Phase is where a server is in its life cycle.
type Phase int

const (
	// PhasePending: desired and enabled, not started yet (or waiting for a
	// start slot, see Options.MaxParallelStarts).
	PhasePending Phase = iota
	// PhaseStarting: connecting, initializing and listing tools.
	PhaseStarting
	// PhaseReady: connected; its tools are in the registry.
	PhaseReady
	// PhaseBackoff: the last start failed or the session ended on its own;
	// the next start is at ServerStatus.NextRetry.
	PhaseBackoff
	// PhaseStopping: being stopped (removed, disabled, spec changed,
	// restart requested, or shutting down).
	PhaseStopping
	// PhaseStopped: not running and not waiting to retry.
	PhaseStopped
	// PhaseDisabled: configured with enabled: false.
	PhaseDisabled
	// PhaseUntrusted: a project server whose definition the user has not
	// trusted (or that changed since); ServerStatus.Reason says which.
	PhaseUntrusted
	// PhaseConflict: the name is defined by both the user and the project
	// configuration; neither copy runs.
	PhaseConflict
)

var phaseNames = [...]string{"pending", "starting", "ready", "backoff", "stopping", "stopped", "disabled", "untrusted", "conflict"}

// heldPhase is the phase of a desired server that must not run, and whether
// it must not.
func heldPhase(s schema.Server) (Phase, bool) {
	switch {
	case s.Hold != nil && s.Hold.Kind == schema.HoldConflict:
		return PhaseConflict, true
	case s.Hold != nil:
		return PhaseUntrusted, true
	case !s.Enabled:
		return PhaseDisabled, true
	}
	return 0, false
}

func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// MarshalText renders the phase as its name ("ready").
func (p Phase) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(phaseNames) {
		return nil, fmt.Errorf("marshal phase: unknown phase %d", int(p))
	}
	return []byte(phaseNames[p]), nil
}

// UnmarshalText parses a phase name, so clients can decode a Status.
func (p *Phase) UnmarshalText(b []byte) error {
	for i, n := range phaseNames {
		if n == string(b) {
			*p = Phase(i)
			return nil
		}
	}
	return fmt.Errorf("unknown phase %q", b)
}

// PhaseChanged is published on the registry's Bus after every phase
// transition of a server. Err is the server's last error and NextRetry the
// time of the next start when the new phase is PhaseBackoff; both are zero
// otherwise.
//
// Events of one controller are published in the order the transitions
// happened. Like every Bus event it is a hint: a subscriber that missed
// some (Message.Missed) reads Controller.Status afresh.
type PhaseChanged struct {
	Server    string    `json:"server"`
	Phase     Phase     `json:"phase"`
	Err       string    `json:"err,omitempty"`
	NextRetry time.Time `json:"nextRetry,omitzero"`
}

// Kind implements event.Event.
func (PhaseChanged) Kind() string { return "phase_changed" }
