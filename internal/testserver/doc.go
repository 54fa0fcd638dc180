// Package testserver is a configurable MCP server used by the host's tests,
// benchmarks and demo. It is built on github.com/mark3labs/mcp-go/server and
// speaks stdio, streamable HTTP or legacy SSE. The binary lives in
// cmd/mcp-testserver; build it with
//
//	go build -o bin/mcp-testserver ./cmd/mcp-testserver
//
// # Tools
//
// Always present (input schemas are sent as raw JSON, byte for byte):
//
//	echo        {text: string}  returns text                          readOnlyHint true
//	sleep       {ms: integer}   sleeps ms (stops early on cancel)     readOnlyHint true
//	note        {text: string}  appends to an in-memory list, returns the count   readOnlyHint false
//	add_tool    {name: string}  registers tool name, sends notifications/tools/list_changed
//	remove_tool {name: string}  removes tool name, sends notifications/tools/list_changed
//	fail        {message?}      returns a result with isError true
//	crash       {}              exits the process with status 3 before answering
//
// With --evil-text a read-only tool "evil" also exists; its title,
// description and input schema hold EvilText, and a call returns it.
//
// With --logging the server declares the logging capability and a
// read-only tool "log" {level, text, logger?, count?} sends count (default
// 1) notifications/message of level with text ("text i" when count > 1),
// from logger; they honour logging/setLevel (none set: every level;
// stderr gets "log level set to LEVEL") and, on the 2026-07-28 revision,
// the request's log level.
//
// With --progress a read-only tool "progress" {steps, ms?, hold?} sends
// steps notifications/progress (progress i, total steps, message "step i
// of steps"), ms apart, with the progressToken of the call (none without
// one), then returns "done <steps> steps"; with hold it then waits until
// the call is cancelled.
//
// With --unknown-content a read-only tool "hologram" {} also exists; a call
// returns a text block (HologramText) and UnknownBlock, a block of a type no
// MCP revision defines, byte for byte.
//
// # Resources and prompts
//
// With --resources N the server declares resources (subscribe and
// listChanged): N text resources test://text/0 .. test://text/<N-1>
// ("text resource <i>\n"), test://binary (application/octet-stream: every
// byte value once, BinaryContents), the template test://items/{id} ("item
// <id>"), with --evil-text also test://evil (EvilText in its name,
// description and text), and these tools:
//
//	set_resource    {uri, text}  sets a text resource: a new one is announced with
//	                             resources/list_changed, a changed one with
//	                             resources/updated {uri}
//	remove_resource {uri}        removes a text resource (resources/list_changed)
//	links           {}           returns a text block and resource_link blocks for
//	                             test://text/0 and test://binary          readOnlyHint true
//
// With --prompts it declares prompts (listChanged): greet {name required,
// greeting} ("<greeting, default Hello>, <name>!"), plain {} (one message;
// with --evil-text a second one holding EvilText), and the tool add_prompt
// {name}, which registers another prompt like plain and announces it.
// With --rich it declares resources and prompts and adds one of each
// carrying every field a client passes on without interpreting (rich.go
// has them as JSON): the read-only tool "rich" {q?} with a title, icons,
// an outputSchema, annotations and a _meta (anthropic/maxResultSizeChars
// and vendor keys), whose result has structuredContent and a _meta; the
// resource test://rich and the template test://rich/{id} with icons and
// _meta, whose contents have a _meta; the prompt "rich" {topic} with icons
// and _meta, whose result has a _meta.
// With --completions it declares completions (complete.go): greet's
// "name" completes to the CompletionNames that start with the value typed,
// its "greeting" to CompletionGreetings (CompletionGreetingsAda when the
// context gives the name "Ada"), and the id of test://items/{id} to the
// first CompletionItemsSent matching CompletionItems, with the total and
// hasMore when there are more. The name values CompleteMany, CompleteLong
// and CompleteEvil answer hostile values instead; anything else is an
// error.
// Either flag adds relist {} (read-only), which sends the list_changed
// notifications of what the server declares without changing anything.
// With --ask four read-only tools send the client requests and return its
// answer as JSON: "ask" {message?, schema?, cancelAfterMs?} an elicitation
// in form mode (schema default AskForm; cancelAfterMs, over stdio, cancels
// the request with notifications/cancelled after that long), "ask_url"
// {url, message?} one in URL mode, "ask_twice" {} (below), and
// "capabilities" {} returns the capabilities the client declared.
//
// On a request of the 2026-07-28 revision (--modern) the server sends no
// requests: "ask", "ask_url", "roots" and "sample" answer input_required
// with the one input request (key "answer") and the requestState AskState,
// and give their result on a retry that carries that state back exactly
// (an error result names the state otherwise). "ask_twice" asks in two
// rounds (a form, then a confirmation naming the answer) and returns
// "<name>: <ok>"; with --prompts, the prompt "ask" asks for a form and
// greets the name given.
//
// With --ask-after-init (stdio, 2025-11-25 and older revisions) the server
// asks on its own, as a server may at any time: once the client sends
// notifications/initialized it sends one elicitation/create in form mode
// (message "Who is watching?", schema AskForm) and writes to stderr
// "answer after initialized: <the result as JSON>", or "ask after
// initialized failed: <error>", or, when the client declared no
// elicitation capability, "ask after initialized: the client declared no
// elicitation; not asking".
//
// Generated tools tool_000, tool_001, ... (--tools N) answer "<name> ok: <args>".
// SIGUSR1 (wired by Run) adds a tool dyn_<n> (n = 1, 2, ...) and notifies list_changed;
// with --resources also the text resource test://dyn/<n> (resources/list_changed).
//
// # Flags
//
//	--name NAME               server name reported by initialize (default "testserver")
//	--tools N                 generated tools tool_000.. (default 0)
//	--schemas simple|ref|mixed|external
//	                          input schemas of generated tools: simple = object with a required
//	                          string and optional integer/enum/array/nested object; ref = top-level
//	                          description, oneOf, $defs, definitions, allOf and a recursive tree
//	                          via $ref; mixed = simple for even, ref for odd indexes; external = a
//	                          required string "name" beside references a client cannot follow: a
//	                          remote one (property "config"), a file one with a sibling "type"
//	                          (property "extra"), and a local pointer to nothing (property
//	                          "local") (default simple)
//	--readonly-every K        every K-th generated tool (tool index i with (i+1)%K == 0) has
//	                          annotations.readOnlyHint true; the others carry no readOnlyHint
//	--page-size N             tools/list pages of N tools; clients must follow nextCursor
//	--init-delay DURATION     wait before answering initialize
//	--hang-init               never answer initialize
//	--init-stderr-every DURATION
//	                          while initialize waits (--init-delay, --hang-init), write a line
//	                          "still initializing (<n>)" to stderr every DURATION
//	--init-busy               while initialize waits, keep a CPU busy (as a package runner does
//	                          while it unpacks a download)
//	--require-env NAME        unless environment variable NAME is set (and not empty), write
//	                          "Error: NAME environment variable is required" to stderr and exit
//	                          with status 1 at start, as servers that need an API key do
//	--crash-after N           exit with status 3 on the N-th tools/call, before replying
//	--exit-at-start CODE      write one line to stderr and exit with CODE before reading anything
//	--garbage-stdout          write non-JSON lines to stdout before serving and after each message (stdio)
//	--stderr-flood N          write N lines "flood line <i>" to stderr at start
//	--stderr-echo             every echo call also writes its text and a newline to stderr, in
//	                          one write (text with newlines: a burst of lines)
//	--big-tool                add the tool big {bytes}: one text block of exactly that many bytes
//	                          (at most 64 MiB), lines "line <i> ...", the last one "END"
//	--big-hint N              with --big-tool: big's _meta {"anthropic/maxResultSizeChars": N}
//	--grandchild              start a child process (this binary with --hold) that inherits stdout
//	                          and stderr and blocks until killed; its pid goes to stderr as
//	                          "grandchild pid <pid>" and to --grandchild-pid-file
//	--grandchild-pid-file FILE
//	--setsid-helper FILE      start a helper (this binary with --hold) in a new session and process
//	                          group, its stdio on /dev/null, that blocks until killed; its pid goes
//	                          to FILE. Nothing of the server's group or pipes reaches it.
//	--hold                    internal: block until killed (the grandchild's mode)
//	--call-log FILE           append JSON lines describing every tools/call (format below)
//	--pid-file FILE           write the server's pid (decimal, newline) once started
//	--start-log FILE          append the server's pid (decimal, newline) at every start, first
//	                          of all: the number of lines is the number of processes started
//	--http ADDR               serve streamable HTTP on ADDR (e.g. 127.0.0.1:0) instead of stdio and
//	                          print "listening on http://HOST:PORT/mcp" to stdout once listening;
//	                          list_changed reaches clients on the standalone GET stream
//	--sse                     with --http: serve legacy SSE instead and print
//	                          "listening on http://HOST:PORT/sse"
//	--base-path PATH          with --http: serve the endpoints under PATH (e.g. /v1/key: /v1/key/mcp,
//	                          or /v1/key/sse and /v1/key/message), like hosted servers with a key
//	                          in the URL's path
//	--modern                  answer server/discover (protocol 2026-07-28); by default it gets
//	                          method-not-found like servers of the 2025 protocol revisions
//	--modern-only             with --modern: answer initialize with method-not-found, as a
//	                          server of the 2026-07-28 revision only does
//	--ttl-ms N --cache-scope S
//	                          the caching hints ttlMs and cacheScope of every list result (any
//	                          values, sent as given; mcp-go sends ttlMs 0, cacheScope public
//	                          without them)
//	--request-log FILE        append the method of every request received, one a line
//	--discover empty|silent|exit
//	                          without --modern, answer server/discover with an empty result {}
//	                          (as servers that answer every request they do not know with {}),
//	                          not at all (as servers that ignore them), or by exiting with
//	                          status 1 (as servers that end on one)
//	--start-delay DURATION    (stdio) wait before reading stdin, as a server slow to start does
//	--logging                 the logging capability and the tool "log" (above)
//	--progress                the tool "progress" (above)
//	--evil-text               what a hostile server sends a terminal: the tool "evil" (above),
//	                          and EvilStderr (EvilText plus a raw 8-bit CSI byte) written to
//	                          stderr at start (before --exit-at-start) and on every call of evil
//	--unknown-content         the tool "hologram" (above)
//	--resources N             resources, a template and their tools (above)
//	--read-delay DURATION     with --resources: each resources/read waits DURATION (or until
//	                          cancelled) before it is answered, as a slow server's does
//	--prompts                 prompts and their tool (above)
//	--rich                    the tool, resource, template and prompt "rich" (above)
//	--instructions TEXT       the initialize result's instructions
//	--instructions-bytes N    instructions of N bytes: a sentence, then "é" (two bytes each)
//	--ask                     the tools "ask", "ask_url" and "capabilities" (above)
//	--conformance             the official conformance suite's server fixture (conformance.go):
//	                          the tools test_*, resources test://static-text, test://static-binary,
//	                          test://watched-resource, the template test://template/{id}/data, the
//	                          prompts test_*prompt*, logging, completions, SEP-2549 caching hints
//	--ask-after-init          one elicitation after notifications/initialized (above)
//	--client-requests         the tools "sample" and "roots": each asks the client
//	                          (sampling/createMessage, roots/list) and returns its answer as
//	                          JSON text, or its error as an error result
//
// Hostile behaviours, for the host's limits:
//
//	--description-bytes N     echo's description is N bytes long, so tools/list is one message of
//	                          more than N bytes
//	--stdout-flood-no-newline start|call
//	                          (stdio) write 'x' bytes to stdout without a newline: at start, before
//	                          reading anything, or in answer to the first tools/call (which is then
//	                          never answered)
//	--http-attack error-body  (--http, streamable) answer POST initialize with HTTP 500 and a body
//	                          of "internal error: " and 'x' bytes
//	--http-attack sse-line    (--http) after the first tools/call was answered, the standalone GET
//	                          stream carries one line "data: xxx…" without a newline; it is opened
//	                          at once and idles until then. With --sse the /sse stream is that line
//	                          from the start, before the endpoint event
//	--flood-bytes N           how many 'x' bytes the flood above sends before it ends (the stream
//	                          or body then ends, the process exits for stdout); 0 (the default):
//	                          without end, until the write fails
//	--endless-pages           answer every tools/list with a page of fresh tools page<P>_tool<i>
//	                          (--page-size of them, default 10) and the next cursor "page-<P+1>",
//	                          however far the client follows (stdio and --http)
//	--endless-resource-pages  the same for resources/list (pages of resources test://page/<P>/<i>);
//	                          declares resources
//
// initialize is answered for every legacy protocol revision, including
// 2025-06-18 and 2025-11-25. Unknown methods get a method-not-found error.
//
// # Call log
//
// Each tools/call that reaches the server appends two JSON lines (one write
// each, O_APPEND) to the --call-log file, tied together by seq:
//
//	{"seq":1,"phase":"start","tool":"echo","args":{"text":"hi"},"start":"<RFC3339Nano>","pid":123}
//	{"seq":1,"phase":"end","tool":"echo","args":{"text":"hi"},"start":"<RFC3339Nano>","end":"<RFC3339Nano>","pid":123,"isError":false}
//
// The start line also has "meta": the request's _meta other than its
// progressToken (a client's traceparent and tracestate), when there is one.
// A call that makes the process exit (crash, --crash-after) leaves only its
// start line. A call that never reached the server leaves no line. seq counts
// from 1 per server process.
package testserver
