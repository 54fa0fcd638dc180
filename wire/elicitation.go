package wire

import (
	"encoding/json"
	"time"
)

// Elicitation is a server's request for input that waits for the user's
// answer in serve (GET /v1/elicitations, event elicitation_requested).
// Everything but ID, Server, Host and the times is the server's own text:
// a client neutralises it before it reaches a terminal.
type Elicitation struct {
	ID string `json:"id"`
	// Server is the configured name of the server that asks: always show
	// it, so that the user knows who wants the answer.
	Server string `json:"server"`
	// Mode is "form" (RequestedSchema says what to answer) or "url" (the
	// user is asked to open URL; accepting means consenting to open it,
	// which serve itself never does).
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// RequestedSchema is a form's schema: an object of primitive
	// properties (the restricted JSON Schema of the protocol). Fields
	// the answer omits take their defaults.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// URL is what a URL-mode elicitation asks the user to open, and Host
	// the host it leads to (in ASCII, with a port if it names one): show
	// Host prominently before anything is opened.
	URL  string `json:"url,omitempty"`
	Host string `json:"host,omitempty"`
	// InputKey is the key a 2026-07-28 server gave the question in its
	// input_required answer (multi round-trip requests); absent for a
	// 2025-11-25 server's elicitation/create.
	InputKey string `json:"inputKey,omitempty"`
	// Created is when serve got the request; Expires when it is cancelled
	// if nobody answers.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// ElicitationAnswer is the body of POST /v1/elicitations/{id}: Action is
// "accept", "decline" or "cancel"; Content, only with "accept" in form
// mode, holds the answered fields (omitted ones take their defaults).
type ElicitationAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// ElicitationRequested is published when a server's elicitation starts
// waiting for an answer (event elicitation_requested; its data is the
// Elicitation).
type ElicitationRequested struct{ Elicitation }

// Kind is the event's name on the wire (and implements event.Event).
func (ElicitationRequested) Kind() string { return KindElicitationRequested }

// ElicitationAnswered is published when a pending elicitation ended (event
// elicitation_answered), and answers POST /v1/elicitations/{id}.
type ElicitationAnswered struct {
	ID     string `json:"id"`
	Server string `json:"server"`
	// Action is what the server was sent: "accept", "decline" or
	// "cancel"; "" when it was sent nothing (it cancelled the request, or
	// its session ended).
	Action string `json:"action,omitempty"`
	// Reason says why it ended without an answer from a client:
	// "timeout" (Action is "cancel"), "canceled by the server", "server
	// gone"; "" when a client answered.
	Reason string `json:"reason,omitempty"`
	// By is the client that answered, as it named itself (api.ClientOf);
	// "" when no client did.
	By string `json:"by,omitempty"`
	// Content is the answer as sent, defaults filled in: only in the
	// answer to the POST, never in the event.
	Content map[string]any `json:"content,omitempty"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (ElicitationAnswered) Kind() string { return KindElicitationAnswered }
