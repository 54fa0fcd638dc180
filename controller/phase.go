package controller

import (
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// heldPhase is the phase of a desired server that must not run, and whether
// it must not.
func heldPhase(s schema.Server) (wire.Phase, bool) {
	switch {
	case s.Hold != nil && s.Hold.Kind == schema.HoldConflict:
		return wire.PhaseConflict, true
	case s.Hold != nil && s.Hold.Kind == schema.HoldInvalid:
		return wire.PhaseInvalid, true
	case s.Hold != nil:
		return wire.PhaseUntrusted, true
	case !s.Enabled:
		return wire.PhaseDisabled, true
	}
	return "", false
}
