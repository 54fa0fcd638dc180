package main

import "github.com/freecode/freecode/schema"

// The schema states why a server is held or a project ignored
// (schema.Hold, schema.Trust); these functions add what the user can do
// about it. Every command and the status of serve phrase them here.

// holdReason says why a server does not run and what to do about it.
func holdReason(h *schema.Hold) string {
	if h.Kind == schema.HoldConflict {
		return h.Text("rename or remove one (neither runs until then)")
	}
	return h.Text(trustRemedy(h.Trust))
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
