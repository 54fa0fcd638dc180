package schema

import (
	"fmt"
	"time"
)

// TrustState is what DecideTrust found about a project settings file.
type TrustState int

const (
	// Trusted: its definition is the one the user trusted.
	Trusted TrustState = iota
	// NeverTrusted: the user has not trusted this file.
	NeverTrusted
	// ChangedSinceTrusted: its definition is not the one the user trusted
	// (on Trust.Since).
	ChangedSinceTrusted
	// NoTrustStore: there was no trust store to decide with.
	NoTrustStore
	// ProjectInvalid: the file cannot be read or is invalid (Trust.Err),
	// whatever was trusted: a file that fails validation is read
	// differently by different JSON readers.
	ProjectInvalid
	// TrustedUnresolved: trusted, but its ${VAR}s do not resolve
	// (Trust.Err). Desired sets it, after the decision, when it expands a
	// trusted project.
	TrustedUnresolved
)

var trustStateNames = [...]string{"trusted", "never trusted", "changed since trusted", "no trust store", "invalid", "trusted, unresolved"}

func (s TrustState) String() string {
	if s >= 0 && int(s) < len(trustStateNames) {
		return trustStateNames[s]
	}
	return fmt.Sprintf("TrustState(%d)", int(s))
}

// Trust is the decision about one project settings file: whether its
// servers may run, and if not, why.
type Trust struct {
	// Project is the settings file.
	Project string
	State   TrustState
	// Since is when the user trusted the earlier definition
	// (ChangedSinceTrusted).
	Since time.Time
	// Err is why the file is ignored (ProjectInvalid: it cannot be read,
	// or positioned Errors) or cannot run (TrustedUnresolved: Errors of
	// its ${VAR}s); nil otherwise.
	Err error
}

// Trusted reports whether the user trusted the file's current definition
// (it may still not run: TrustedUnresolved).
func (t Trust) Trusted() bool { return t.State == Trusted || t.State == TrustedUnresolved }

// Dir is the project's directory, the one to name to trust it.
func (t Trust) Dir() string { return ProjectDir(t.Project) }

// String states the decision as a fact, without saying what to do about it.
func (t Trust) String() string { return t.Text("") }

// Text is String with remedy, if not empty, joined to the statement it
// answers ("project … is not trusted; " + remedy).
func (t Trust) Text(remedy string) string {
	var s string
	switch t.State {
	case Trusted:
		s = fmt.Sprintf("project %s is trusted", t.Project)
	case NeverTrusted:
		s = fmt.Sprintf("project %s is not trusted", t.Project)
	case ChangedSinceTrusted:
		s = fmt.Sprintf("project %s changed since it was trusted on %s", t.Project, t.Since.Format(time.DateOnly))
	case NoTrustStore:
		s = "no trust store"
	case ProjectInvalid:
		s = fmt.Sprintf("project %s is invalid and ignored:\n%s", t.Project, t.Err)
	case TrustedUnresolved:
		s = fmt.Sprintf("project %s is trusted but cannot run until this is fixed:\n%s", t.Project, t.Err)
	default:
		s = fmt.Sprintf("project %s: %s", t.Project, t.State)
	}
	if remedy != "" {
		s += "; " + remedy
	}
	return s
}

// TrustInput is everything a trust decision depends on.
type TrustInput struct {
	// Project is the settings file; its trust record is Records[Project].
	Project string
	// Invalid is why the file cannot be read or is invalid; nil when it is
	// valid.
	Invalid error
	// Hash is the DefinitionHash of a valid file.
	Hash string
	// Records are the user's trust records (TrustStore.Load).
	Records map[string]TrustRecord
	// NoStore: there is no trust store (Records is then not consulted).
	NoStore bool
}

// DecideTrust decides whether a project's servers may run: only if the file
// is valid and its definition hash is the one the user trusted. It never
// returns TrustedUnresolved.
func DecideTrust(in TrustInput) Trust {
	t := Trust{Project: in.Project}
	rec, ok := in.Records[in.Project]
	switch {
	case in.Invalid != nil:
		t.State, t.Err = ProjectInvalid, in.Invalid
	case in.NoStore:
		t.State = NoTrustStore
	case !ok:
		t.State = NeverTrusted
	case rec.Hash != in.Hash:
		t.State, t.Since = ChangedSinceTrusted, rec.TrustedAt
	default:
		t.State = Trusted
	}
	return t
}

// Hold says why a configured server must not run. It holds the facts; what
// the user can do about them is for the program that shows them to say
// (Text).
type Hold struct {
	Kind HoldKind
	// Server is the held server's name.
	Server string
	// Trust is the decision about the project the hold comes from: why
	// its servers do not run (HoldUntrusted), or, for HoldConflict, the
	// trusted project that defines Server too (Trust.Project).
	Trust Trust
	// UserFile is the user config that defines Server too: always for
	// HoldConflict; for HoldUntrusted when the project's server has the
	// name of one of the user's, "" otherwise.
	UserFile string
	// Errors are, for HoldInvalid, the positioned errors of the server's
	// entry (of every entry, when its name is given twice).
	Errors Errors
}

// HoldKind names a reason class for a Hold.
type HoldKind string

const (
	// HoldUntrusted: a project server whose definition the user has not
	// trusted (or has changed since), or that is invalid or cannot run.
	HoldUntrusted HoldKind = "untrusted"
	// HoldConflict: the name is defined by both the user and the project.
	HoldConflict HoldKind = "conflict"
	// HoldInvalid: the server's entry has errors of its own (an unset
	// ${VAR}, a field of the wrong type, its name given twice...); Errors
	// lists them. Server is the name, or the EntryLabel of an entry
	// without a valid name.
	HoldInvalid HoldKind = "invalid"
)

// String states why the server does not run, without saying what to do
// about it.
func (h *Hold) String() string { return h.Text("") }

// Text is String with remedy, if not empty, joined to the statement it
// answers: for HoldUntrusted the project's (Trust.Text), before the note of
// a name it shares with the user's config; for HoldInvalid before the
// list of errors.
func (h *Hold) Text(remedy string) string {
	if h.Kind == HoldInvalid {
		s := fmt.Sprintf("server %q has errors", h.Server)
		if IsEntryLabel(h.Server) {
			s = "the entry " + h.Server + " has errors (and no valid name)"
		}
		if remedy != "" {
			s += "; " + remedy
		}
		return s + ":\n" + h.Errors.Error()
	}
	if h.Kind == HoldConflict {
		s := fmt.Sprintf("server %q is defined both in %s and in %s", h.Server, h.UserFile, h.Trust.Project)
		if remedy != "" {
			s += "; " + remedy
		}
		return s
	}
	s := h.Trust.Text(remedy)
	if h.UserFile != "" {
		s += fmt.Sprintf(" (its server %q also has the name of one in %s)", h.Server, h.UserFile)
	}
	return s
}
