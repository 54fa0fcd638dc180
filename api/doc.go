// Package api is the local API of `freecode serve`: JSON over HTTP on a unix
// socket ($FREECODE_HOME/run/freecode.sock, directory 0700, socket 0600), and
// the Go client the command line uses to talk to it.
//
// Endpoints (every error is a JSON object {"error": "..."} with a status code
// that says what kind of failure it was):
//
//	GET  /v1/status                   Status: desired next to actual for every server
//	GET  /v1/tools?dialect=D          Tools: the provider-facing definitions (D = jsonschema,
//	                                  openai or gemini; default jsonschema), their version and
//	                                  estimated tokens; over mcp.toolBudget, "deferral" names
//	                                  the deferred tools and those tool_search loaded; with
//	                                  &summary=1 all of it but the definitions (count says
//	                                  how many)
//	DELETE /v1/tools/loaded           forget what tool_search loaded (a new conversation)
//	POST /v1/tools/{id}/call          body: the arguments object; runs the call through the
//	                                  orchestrator and answers CallResponse. A call that needs
//	                                  approval waits (up to the approval timeout) until
//	                                  POST /v1/approvals/{id} answers it.
//	GET  /v1/approvals                []Approval: calls waiting for an answer
//	POST /v1/approvals/{id}           body {"approve": true|false}
//	GET  /v1/elicitations             []Elicitation: servers' requests for input waiting
//	                                  for an answer (form: a schema; url: a URL and its host)
//	POST /v1/elicitations/{id}        body {"action": "accept"|"decline"|"cancel",
//	                                  "content": {...}} (content only with accept, of a form);
//	                                  answers ElicitationAnswered with the content as sent
//	                                  (omitted fields take their defaults), or 400 when it does
//	                                  not fit the form: the elicitation goes on waiting. One
//	                                  nobody answers is cancelled after the elicitation timeout;
//	                                  while no client reads /v1/events, one is declined at once.
//	GET  /v1/events                   server-sent events (see below)
//	POST /v1/servers/{name}/restart   restart one server now
//	GET  /v1/servers/{name}/logs      Logs: the server's stderr ring;
//	                                  with ?follow=1 a server-sent event stream instead:
//	                                  one "line" event per stderr line (data: the raw line),
//	                                  first the ring, then new lines as they arrive, each
//	                                  once (they are read by number, not compared); a
//	                                  "session" event {"session": N} starts the lines of each
//	                                  session (a restart starts a new one)
//	GET  /v1/resources[?server=S]     Resources: the resources and resource templates of
//	                                  every server that has some (or of S)
//	GET  /v1/resources/read?server=S&uri=U
//	                                  ResourceRead: U read through S's session
//	POST /v1/resources/subscribe      body {"server", "uri"}: updates of the resource come
//	POST /v1/resources/unsubscribe    as resource_updated events (until unsubscribed)
//	GET  /v1/prompts[?server=S]       Prompts: the prompts of every server that has some
//	POST /v1/prompts/{server}/{name}  body: the arguments, an object of strings; wire.PromptResult.
//	                                  Arguments are checked against the prompt first (400)
//
// # Events
//
// GET /v1/events streams text/event-stream. The first event is "subscribed"
// (sent once the subscription is in place, so nothing published after it is
// lost to this client). Then, one event per change, data being a JSON object:
//
//	tools_changed       {"source": "<server or builtin>"}
//	tools_loaded        {"ids": [...]}: tool_search loaded these deferred tools (or
//	                    {"cleared": true}: the loaded set was emptied)
//	defs_policy_changed {"budget": N, "alwaysLoad": [...]}: the deferral policy changed
//	                    (mcp.toolBudget, alwaysLoad, a deny rule for tool_search)
//	phase_changed       {"server": "...", "phase": "backoff", "err": "..."}
//	config_error        {"err": "..."}: the config file became invalid ("" = valid again)
//	approval_requested  Approval
//	approval_answered   {"id": "...", "approved": true}
//	resources_changed   {"source": "<server>"}: its resources or templates really changed
//	prompts_changed     {"source": "<server>"}: its prompts really changed
//	resource_updated    {"server": "...", "uri": "..."}: a subscribed resource changed
//	elicitation_requested  Elicitation
//	elicitation_answered   {"id": "...", "server": "...", "action": "accept", "reason": "..."}
//	                    (reason, without an answer from a client: "timeout", "canceled",
//	                    ReasonNobodyListening, or why the server's request ended)
//	missed              {"missed": N}: N events were dropped because this client
//	                    read too slowly; re-read whatever state it cares about
//
// Events are hints to look again: a client re-reads /v1/status or /v1/tools.
// Each event's data is the JSON of its Go type (package wire for the
// status and the controller's events).
//
// The server is the HTTP form of an Engine (serve.Core): each endpoint
// asks it one thing. Its errors say what they mean by wrapping
// ErrNotFound, ErrConflict, ErrBadRequest or ErrTimeout, and the server
// turns errors into status codes in one place. Client is the same Engine
// on the other side of the socket.
package api
