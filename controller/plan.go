package controller

import (
	"slices"
	"time"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// observed is what plan needs to know of one server's actual state.
type observed struct {
	Phase wire.Phase
	// Running: an owner goroutine exists (pending for a slot, starting,
	// ready or stopping).
	Running bool
	// Stopping: the owner was told to stop and has not finished yet.
	Stopping bool
	// SpecHash of the current owner's spec, or of the last attempt when
	// not running ("" if never started).
	SpecHash string
	// NextRetry is when a server in wire.PhaseBackoff may start again.
	NextRetry time.Time
	// RestartRequested by Controller.Restart, cleared by the next start.
	RestartRequested bool
	// Creds is the version of the stored sign-in as just read (see
	// Options.SignIn; read only for a ready server and one waiting in
	// PhaseNeedsLogin), CredsSeen its version at the last outcome. They
	// differ when a sign-in, renewal or sign-out happened since.
	Creds, CredsSeen string
	// Unreachable: a remote server in backoff because it cannot be
	// reached (see outage), which is probed; set only while probing is on.
	Unreachable bool
	// NextProbe is when the next probe of an Unreachable server may
	// start; Probing says one is in flight.
	NextProbe time.Time
	Probing   bool
	// Answered: a probe reached the endpoint since the last failed start.
	Answered bool
	// Filter is the schema.ToolFilter.Key of the filter the registered
	// tools went through.
	Filter string
	// HasTools: tools of the server are registered (a session's, or kept
	// through a restart, a backoff or an outage).
	HasTools bool
	// OnDemandTools: the registered tools are an on-demand server's (they
	// call through a waker).
	OnDemandTools bool
	// InUse: a use of the session is under way or waiting for it, or a
	// subscription is open; Waiting: a use waits for it to start. UsedAt
	// is when the last use began or ended (see ondemand.go).
	InUse, Waiting bool
	UsedAt         time.Time
}

type actionKind int

const (
	// actStart starts an owner goroutine for spec.
	actStart actionKind = iota
	// actStop tells the running owner to stop; what follows (nothing,
	// disabled, a new start) is decided by a later plan once it has.
	actStop
	// actDisable marks a stopped server disabled, untrusted, invalid or in
	// conflict (wire.Phase) and forgets its backoff.
	actDisable
	// actForget drops the state of a server that is neither desired nor
	// running.
	actForget
	// actVerify asks the owner of a ready server to check that its
	// session's sign-in still holds (the stored credentials changed);
	// Creds is the version it checks against.
	actVerify
	// actProbe asks whether an unreachable remote server's endpoint
	// answers again; its answer only makes the loop look again.
	actProbe
	// actNarrow removes from the registered tools of a server without a
	// ready session (kept through a restart, backoff or outage) those its
	// tools filter now hides; Spec carries the filter.
	actNarrow
	// actRefilter asks the owner of a ready server to register its tools
	// again through the tools filter now desired; the session stays.
	actRefilter
	// actAdvertise registers an on-demand server's stored manifest and
	// makes it idle, or starts it when none is stored (to learn it).
	actAdvertise
	// actSleep stops a ready on-demand server unused for its idle
	// timeout (Spec carries it), keeping its lists: it is idle after.
	actSleep
)

func (k actionKind) String() string {
	return [...]string{"start", "stop", "disable", "forget", "verify", "probe", "narrow", "refilter", "advertise", "sleep"}[k]
}

// action is one step of a plan. Spec is set for actStart and actProbe,
// Phase for actDisable. KeepTools, for actStop, says the server is stopped to be
// started again, so its tools stay registered in between (see own).
type action struct {
	Kind      actionKind
	Name      string
	Spec      schema.Server
	Phase     wire.Phase
	Reason    string
	KeepTools bool
	Creds     string
}

// plan decides what to do to make actual match desired at time now. It is
// pure: it reads its arguments only. Servers are visited in name order, so
// the result is deterministic. Running plan again on an unchanged world
// yields the same actions, and applying them converges: a stop is followed
// (once the owner has finished) by a start, a disable, a forget or nothing.
//
//   - not desired: stop it if running, else forget it;
//   - desired but disabled, untrusted, invalid or in a name conflict (held): stop it
//     if running, else mark it with that phase;
//   - enabled and being stopped: wait for the owner to finish;
//   - enabled and running: stop it (to restart) if its spec hash changed
//     or a restart was requested; else, if it is ready and its stored
//     sign-in changed, have its session checked; else, if it is ready
//     and its tools went through another tools filter than the desired
//     one, have them registered again; else leave it alone;
//   - enabled and not running: start it, unless it is in backoff for the
//     same spec and NextRetry is still ahead, or waits for a sign-in
//     (wire.PhaseNeedsLogin) and the stored one is what it was when the server
//     failed (a changed spec or a restart request starts it now);
//   - in that backoff, a remote server that cannot be reached
//     (Unreachable) is probed once NextProbe has come, one probe at a
//     time, and started at once when a probe found its endpoint answering
//     (Answered): so it is back within about a probe interval of its
//     endpoint, whatever the backoff.
//
// If desired holds a name twice, the first entry counts.
func plan(desired []schema.Server, actual map[string]observed, now time.Time) []action {
	want := make(map[string]schema.Server, len(desired))
	names := make([]string, 0, len(desired)+len(actual))
	for _, s := range desired {
		if _, dup := want[s.Name]; dup {
			continue
		}
		want[s.Name] = s
		names = append(names, s.Name)
	}
	for name := range actual {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	var acts []action
	for _, name := range names {
		d, isDesired := want[name]
		a, known := actual[name]
		held, isHeld := heldPhase(d)
		switch {
		case !isDesired:
			switch {
			case a.Stopping:
			case a.Running:
				acts = append(acts, action{Kind: actStop, Name: name, Reason: "removed from the configuration"})
			case known:
				acts = append(acts, action{Kind: actForget, Name: name})
			}
		case isHeld:
			switch {
			case a.Stopping:
			case a.Running:
				acts = append(acts, action{Kind: actStop, Name: name, Reason: held.String()})
			case !known || a.Phase != held:
				acts = append(acts, action{Kind: actDisable, Name: name, Phase: held})
			}
		case a.Stopping:
		case a.Running:
			if a.SpecHash != d.SpecHash() {
				acts = append(acts, action{Kind: actStop, Name: name, Reason: "configuration changed", KeepTools: true})
			} else if a.RestartRequested {
				acts = append(acts, action{Kind: actStop, Name: name, Reason: "restart requested", KeepTools: true})
			} else {
				if a.Phase == wire.PhaseReady && a.Creds != a.CredsSeen {
					acts = append(acts, action{Kind: actVerify, Name: name, Creds: a.Creds})
				}
				switch {
				case a.Phase == wire.PhaseReady && (a.Filter != d.Tools.Key() || (a.HasTools && a.OnDemandTools != d.OnDemand())):
					acts = append(acts, action{Kind: actRefilter, Name: name})
				case a.HasTools && a.Filter != d.Tools.Key():
					acts = append(acts, action{Kind: actNarrow, Name: name, Spec: d})
				case d.OnDemand() && a.Phase == wire.PhaseReady && !a.InUse && !now.Before(idleDeadline(a.UsedAt, d)):
					acts = append(acts, action{Kind: actSleep, Name: name, Spec: d})
				}
			}
		default:
			if a.HasTools && a.Filter != d.Tools.Key() {
				// Kept through a backoff or an outage: what the filter now
				// hides goes at once, whatever comes next.
				acts = append(acts, action{Kind: actNarrow, Name: name, Spec: d})
			}
			if a.Phase == wire.PhaseBackoff && a.SpecHash == d.SpecHash() && !a.RestartRequested && now.Before(a.NextRetry) {
				switch {
				case a.Unreachable && a.Answered:
					// Back: start now, skipping the rest of the backoff.
				case a.Unreachable && !a.Probing && !now.Before(a.NextProbe):
					acts = append(acts, action{Kind: actProbe, Name: name, Spec: d})
					continue
				default:
					continue
				}
			}
			if a.Phase == wire.PhaseNeedsLogin && a.SpecHash == d.SpecHash() && !a.RestartRequested && a.Creds == a.CredsSeen {
				continue
			}
			if d.OnDemand() && !a.Waiting && !a.RestartRequested && a.Phase != wire.PhaseNeedsLogin {
				if a.Phase != wire.PhaseIdle || a.SpecHash != d.SpecHash() || a.Filter != d.Tools.Key() || !a.OnDemandTools {
					acts = append(acts, action{Kind: actAdvertise, Name: name, Spec: d})
				}
				continue
			}
			acts = append(acts, action{Kind: actStart, Name: name, Spec: d})
		}
	}
	return acts
}
