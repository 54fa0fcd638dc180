// Package mcp connects FreeCode to Model Context Protocol servers.
//
// A [Session] is one running connection to one server, described by a
// [Spec] (the package knows nothing of FreeCode's config file; the host
// resolves it into specs): a local child process that the session owns (its
// own process group, an explicit environment, stderr captured into a bounded
// ring buffer, reaped the moment it exits, stopped by close-stdin → SIGTERM →
// SIGKILL to the whole group; started by a [Launcher] if the host has one),
// or a remote endpoint reached over streamable HTTP with a fallback to the
// older HTTP+SSE transport. The session speaks the protocol; what differs
// between the two kinds lies below it, in one link implementation each.
//
// [Connect] initializes the server and lists all of its tools within the
// server's timeout. The raw tools/list JSON is kept and converted with
// [ConvertTools]; a tools/list_changed notification makes the session list
// again and signal [Session.ToolsChanged] when the converted set changed.
// [Session.CallTool] returns a [wire.CallResult] that keeps every content
// block, whatever its type (what FreeCode does not model verbatim).
//
// What a server declares beside tools is listed the same way, from the raw
// JSON and bounded by the same limits, each list on its own: resources and
// resource templates ([Session.Features], read with [Session.ReadResource],
// followed with [Session.Subscribe]) and prompts ([Session.GetPrompt],
// whose arguments are checked before the request); their list_changed
// notifications make the session list again and signal
// [Session.FeaturesChanged] on a real change. The initialize result's
// instructions are kept up to [MaxInstructionsBytes]
// ([Session.Instructions]).
// [Session.Done] and [Session.Err] report how the session ended: process exit
// (with the exit status and the tail of stderr), transport loss, or Close.
//
// Lines a local server writes to stdout that are not JSON are skipped (some
// servers print a banner there); a server that never answers in JSON fails
// with a timeout that quotes its stderr.
//
// What a server sends is bounded by its Spec.Limits: one message (a
// stdout line, an HTTP body, an SSE event) and one tools/list (items,
// pages, bytes). A server that goes over one has its own session ended with
// a [LimitError] naming the limit; HTTP error bodies are only read up to a
// small cap, as they are only quoted.
package mcp
