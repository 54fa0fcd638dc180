// Package audit keeps FreeCode's audit log: an append-only JSON-lines file
// under $FREECODE_HOME/audit of every tool call, sign-in, sign-out and
// trust decision, chained by hashes so that a removed or edited line shows,
// rotated by size with a bounded number of files.
//
// What a record holds is decided by its fields alone: nothing in this
// package takes an argument's value, a result, an error message, a token or
// a header. Arguments are recorded as a keyed digest (Key.Digest), errors
// as their kind ("denied", "transport", ...).
package audit

import (
	"strings"
	"time"
	"unicode"
)

// Kinds of records.
const (
	KindCall    = "call"
	KindSignIn  = "signin"
	KindSignOut = "signout"
	KindTrust   = "trust"
	KindUntrust = "untrust"
	// KindElicitation is how a server's question to the user ended: its
	// Mode, the Action sent (accept, decline, cancel; "" when nothing
	// was), By who answered, or Reason why nobody did. Never the question
	// or the answer's content.
	KindElicitation = "elicitation"
	// KindLost says records were lost (the file could not be written, or
	// the queue was full); Count says how many. It is written as soon as
	// writing works again, so a gap in the log is itself on record.
	KindLost = "lost"
)

// Approval outcomes (Record.Approval); "" means the call was not asked.
const (
	ApprovalApproved = "approved"
	ApprovalRefused  = "refused"
	ApprovalTimeout  = "timeout"
	ApprovalCanceled = "canceled"
	ApprovalNone     = "unavailable" // asked, but nobody could be asked
	ApprovalError    = "error"
)

// StatusOK is Record.Status of a call that completed without error; a
// result the server marked isError is StatusToolError, and any other
// failure is the API's kind of it (api.Kind*: "denied", "not_approved",
// "invalid_arguments", "transport", ...).
const (
	StatusOK        = "ok"
	StatusToolError = "tool_error"
)

// Record is one line of the log. Seq and Prev are set by the Store when it
// appends the record; everything else by whoever reports it. Strings are
// bounded (maxField) and stripped of control characters when appended, so
// that a line stays one short line whatever a client named itself.
type Record struct {
	// Seq numbers the records of a home from 1, across rotations.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// PID is the process that wrote the record (serve, or a one-shot
	// command).
	PID int `json:"pid,omitempty"`
	// Host is who asked for the call: "cli mcp call (pid 123)", "gateway
	// claude-code", "api" for a client that did not name itself, ...
	Host string `json:"host,omitempty"`
	// CallID is the call's id (api.CallOptions.ID, or serve's api-N).
	CallID string `json:"call,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Server is the MCP server of the tool, or of a sign-in; "builtin"
	// for a built-in tool.
	Server string `json:"server,omitempty"`
	// Args is the keyed digest of the call's arguments (Key.Digest).
	Args string `json:"args,omitempty"`
	// Decision is what the permission rules said (allow, ask, deny) and
	// Rule the rule that said it ("" when the default did); Sensitive that
	// the tool itself asked for approval whatever the rules say.
	Decision  string `json:"decision,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
	// Approval is the outcome of asking (Approval*), By who answered.
	Approval string `json:"approval,omitempty"`
	By       string `json:"by,omitempty"`
	// Mode is an elicitation's ("form" or "url") and Action what the
	// server was sent ("accept", "decline", "cancel").
	Mode   string `json:"mode,omitempty"`
	Action string `json:"action,omitempty"`
	// Status is how the call ended (StatusOK, StatusToolError or the
	// failure's kind); DurationMS the time in the server, Attempts how
	// many times it was called (0: never reached).
	Status     string `json:"status,omitempty"`
	DurationMS int64  `json:"durationMs,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	// Project is the settings file of a trust decision, Definition the
	// hash of its definition that was trusted.
	Project    string `json:"project,omitempty"`
	Definition string `json:"definition,omitempty"`
	// Issuer is a sign-in's authorization server.
	Issuer string `json:"issuer,omitempty"`
	// Count is how many records a KindLost record stands for; Reason says
	// why (an error's text of this process, never a server's), or why
	// nobody answered an elicitation ("timeout", "nobody to answer",
	// "canceled").
	Count  int    `json:"count,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Prev is the hash of the record before ("sha256:" and 64 hex digits
	// of its line); "" for the first record of a home.
	Prev string `json:"prev"`
}

// maxField bounds each string of a record.
const maxField = 256

// clean bounds the record's strings and drops their control characters.
func (r *Record) clean() {
	for _, s := range []*string{&r.Kind, &r.Host, &r.CallID, &r.Tool, &r.Server, &r.Args, &r.Decision,
		&r.Rule, &r.Approval, &r.By, &r.Mode, &r.Action, &r.Status, &r.Project, &r.Definition, &r.Issuer, &r.Reason} {
		*s = cleanField(*s)
	}
}

func cleanField(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if len(s) > maxField {
		cut := maxField
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
