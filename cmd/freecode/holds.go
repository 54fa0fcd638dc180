package main

import "github.com/freecode/freecode/schema"

// The schema states why a server is held or a project ignored
// (schema.Hold, schema.Trust); these functions add what the user can do
// about it. Every command and the status of serve phrase them here.

// holdReason says why a server does not run and what to do about it.
func holdReason(h *schema.Hold) string {
	switch h.Kind {
	case schema.HoldConflict:
		return h.Text("rename or remove one (neither runs until then)")
	case schema.HoldInvalid:
		return h.Text(invalidRemedy(h))
	}
	return h.Text(trustRemedy(h.Trust))
}

// invalidRemedy is what the user can do about a server whose entry has
// errors: set the variables it needs, or turn it off; fix the entry, or
// take it out. The other servers run meanwhile.
func invalidRemedy(h *schema.Hold) string {
	if schema.IsEntryLabel(h.Server) {
		return "fix it in the file; the other servers run meanwhile"
	}
	unset := len(h.Errors) > 0
	for _, e := range h.Errors {
		unset = unset && e.Var != ""
	}
	if unset {
		return "set the variable where freecode runs, or turn the server off with `freecode mcp disable " + h.Server + "`; the other servers run meanwhile"
	}
	return "fix its entry, or take it out with `freecode mcp remove " + h.Server + "`; the other servers run meanwhile"
}

// trustReason says why a project's servers do not run and what to do about
// it.
func trustReason(t schema.Trust) string { return t.Text(trustRemedy(t)) }

// loginRemedy is what to do about a remote server that needs a user to
// sign in (the reason of its needs-login phase).
func loginRemedy(name string) string { return "run `freecode mcp login " + name + "`" }

// trustRemedy is what the user can do about t; "" when its facts say it
// (an invalid project lists the errors to fix).
func trustRemedy(t schema.Trust) string {
	switch t.State {
	case schema.NeverTrusted:
		return "review it with `freecode mcp trust " + t.Dir() + "`"
	case schema.ChangedSinceTrusted:
		return "review it again with `freecode mcp trust " + t.Dir() + "`"
	}
	return ""
}
