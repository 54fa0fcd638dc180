package controller

import (
	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/schema"
)

// Phase is where a server is in its life cycle: the wire's phase, which the
// status and the events carry as they are.
type Phase = wire.Phase

// The phases the controller reports (see package wire for each one's
// meaning). A server waits in PhasePending for a start slot too (see
// Options.MaxParallelStarts), and PhaseBackoff lasts until
// ServerStatus.NextRetry.
const (
	PhasePending  = wire.PhasePending
	PhaseStarting = wire.PhaseStarting
	PhaseReady    = wire.PhaseReady
	PhaseBackoff  = wire.PhaseBackoff
	// PhaseNeedsLogin waits for a sign-in: the loop starts the server
	// again once Options.SignIn reports other stored credentials than
	// before its failed start (or the spec changes, or on Restart).
	PhaseNeedsLogin = wire.PhaseNeedsLogin
	PhaseStopping   = wire.PhaseStopping
	PhaseStopped    = wire.PhaseStopped
	PhaseDisabled   = wire.PhaseDisabled
	PhaseUntrusted  = wire.PhaseUntrusted
	PhaseConflict   = wire.PhaseConflict
	PhaseInvalid    = wire.PhaseInvalid
)

// heldPhase is the phase of a desired server that must not run, and whether
// it must not.
func heldPhase(s schema.Server) (Phase, bool) {
	switch {
	case s.Hold != nil && s.Hold.Kind == schema.HoldConflict:
		return PhaseConflict, true
	case s.Hold != nil && s.Hold.Kind == schema.HoldInvalid:
		return PhaseInvalid, true
	case s.Hold != nil:
		return PhaseUntrusted, true
	case !s.Enabled:
		return PhaseDisabled, true
	}
	return "", false
}

// PhaseChanged is published on the Bus after every phase transition of a
// server, in the order the transitions happened (see wire.PhaseChanged).
// Like every Bus event it is a hint: a subscriber that missed some
// (Message.Missed) reads Controller.Status afresh.
type PhaseChanged = wire.PhaseChanged

// ConfigErrorChanged is published on the Bus when the configuration error
// shown in Status appears, changes or clears ("").
type ConfigErrorChanged = wire.ConfigErrorChanged
