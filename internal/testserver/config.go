package testserver

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Schema styles for generated tools.
const (
	SchemasSimple   = "simple"
	SchemasRef      = "ref"
	SchemasMixed    = "mixed"
	SchemasExternal = "external"
)

// How a server that is not --modern answers server/discover (--discover):
// with an empty result, as servers that answer every request they do not
// know with {} do; not at all, as servers that ignore unknown requests do;
// or by exiting, as servers that end on an unknown request do.
const (
	DiscoverEmpty  = "empty"
	DiscoverSilent = "silent"
	DiscoverExit   = "exit"
)

// HTTP modes for [Server.ServeHTTP].
const (
	ModeStreamable = "streamable"
	ModeSSE        = "sse"
)

// Config describes one test server. The zero value plus [Config.defaults] is a
// stdio server with the fixed tools only. Fields map one to one onto the flags
// listed in the package documentation.
type Config struct {
	Name          string
	Version       string
	Tools         int
	Schemas       string
	ReadOnlyEvery int
	PageSize      int

	InitDelay time.Duration
	HangInit  bool
	// InitStderrEvery, while initialize is delayed or hangs, writes a
	// stderr line this often; InitBusy keeps a CPU busy meanwhile.
	InitStderrEvery time.Duration
	InitBusy        bool
	// RequireEnv names a variable without which the server exits at start.
	RequireEnv    string
	CrashAfter    int
	ExitAtStart   *int // nil: disabled
	GarbageStdout bool
	StderrFlood   int
	StderrEcho    bool
	// BigTool adds the tool big {bytes}: a text result of that many
	// bytes, numbered lines, whose last line says it is the end.
	BigTool bool
	// BigHint, when positive, is big's _meta size hint
	// ("anthropic/maxResultSizeChars").
	BigHint       int
	Grandchild    bool
	GrandchildPID string
	SetsidHelper  string // pid file of the helper; "" for none
	Hold          bool
	Modern        bool
	// ModernOnly (with Modern) answers initialize with method-not-found,
	// as a server of the 2026-07-28 revision only does.
	ModernOnly bool
	// Replay is a file of recorded answers (Answers, JSON): the server
	// answers every request with the one recorded for its method, at
	// once, and nothing else (see Replay).
	Replay string
	// CacheTTLMs and CacheScope, when CacheScope is set, are the caching
	// hints (ttlMs, cacheScope) of every list result (2026-07-28); any
	// value is sent as given, hostile ones included.
	CacheTTLMs int64
	CacheScope string
	// RequestLog, if set, gets a line with the method of every request
	// the server receives.
	RequestLog string
	// Discover says how server/discover is answered when Modern is not
	// set: "" method-not-found, or one of the Discover* modes.
	Discover string
	// StartDelay waits before reading stdin (stdio), as a server that
	// takes long to start does.
	StartDelay time.Duration
	// Logging declares the logging capability and adds the tool log;
	// Progress adds the tool progress.
	Logging  bool
	Progress bool
	EvilText bool
	// ClientRequests adds the tools sample and roots, which ask the client.
	ClientRequests bool
	// UnknownContent adds the tool hologram, whose result holds
	// UnknownBlock.
	UnknownContent bool
	// Resources, when positive, declares resources: that many text
	// resources, BinaryURI, ItemTemplate and their tools (see features.go).
	Resources int
	// ReadDelay, when positive, makes every read of a resource wait that
	// long (or until the read is cancelled) before it is answered.
	ReadDelay time.Duration
	// Prompts declares the prompts greet and plain and their tool.
	Prompts bool
	// Completions declares completions: of greet's arguments and
	// ItemTemplate's id (complete.go).
	Completions bool
	// Rich declares resources and prompts and adds the fixture of
	// rich.go: a tool, resource, template and prompt, and their results,
	// with every field a client passes on without interpreting.
	Rich bool
	// Instructions are the initialize result's instructions; without
	// them, InstructionsBytes makes that many bytes of them.
	Instructions      string
	InstructionsBytes int
	// Conformance adds the fixture the official conformance suite's
	// server scenarios call (conformance.go), with every capability it
	// declares.
	Conformance bool
	// Ask adds the tools ask, ask_url and capabilities, which
	// send the client requests (see the package documentation).
	Ask bool
	// AskAfterInit, over stdio, sends one form elicitation (AskForm) once
	// the client sends notifications/initialized, outside any call, and
	// writes the answer it got to Stderr (see askAfterInit).
	AskAfterInit bool

	CallLog  string
	PIDFile  string
	StartLog string
	HTTP     string
	SSE      bool
	// BasePath prefixes the HTTP endpoints ("/v1/key" serves /v1/key/mcp,
	// or /v1/key/sse and /v1/key/message).
	BasePath string

	// Hostile behaviours.
	DescriptionBytes int
	StdoutFlood      string // "", FloodStart or FloodCall
	HTTPAttack       string // "", AttackErrorBody or AttackSSELine
	FloodBytes       int64  // 0: endless
	EndlessPages     bool
	// EndlessResourcePages does for resources/list what EndlessPages does
	// for tools/list.
	EndlessResourcePages bool

	// Exit ends the process; nil means os.Exit. crash, --crash-after and
	// --exit-at-start call it and expect it not to return. If it returns, the
	// interrupted tools/call is never answered: its handler waits until the
	// serving context ends, and Run returns an error for --exit-at-start.
	Exit func(code int)
	// Stderr receives diagnostics from the server; nil means os.Stderr.
	Stderr io.Writer
}

// Flags registers every flag on fs and returns the Config they fill in.
// Call fs.Parse before using it.
func Flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Name, "name", "testserver", "server name reported by initialize")
	fs.IntVar(&c.Tools, "tools", 0, "number of generated tools tool_000..")
	fs.StringVar(&c.Schemas, "schemas", SchemasSimple, "input schemas of generated tools: simple|ref|mixed|external")
	fs.IntVar(&c.ReadOnlyEvery, "readonly-every", 0, "every K-th generated tool has readOnlyHint true")
	fs.IntVar(&c.PageSize, "page-size", 0, "tools/list page size (0: one page)")
	fs.DurationVar(&c.InitDelay, "init-delay", 0, "delay before answering initialize")
	fs.BoolVar(&c.HangInit, "hang-init", false, "never answer initialize")
	fs.DurationVar(&c.InitStderrEvery, "init-stderr-every", 0, "while initialize waits (--init-delay, --hang-init), write a stderr line every `DURATION`")
	fs.BoolVar(&c.InitBusy, "init-busy", false, "while initialize waits (--init-delay, --hang-init), keep a CPU busy")
	fs.StringVar(&c.RequireEnv, "require-env", "", "exit with status 1 at start, saying so on stderr, unless environment variable `NAME` is set")
	fs.IntVar(&c.CrashAfter, "crash-after", 0, "exit with status 3 on the N-th tools/call")
	fs.Func("exit-at-start", "write a line to stderr and exit with `CODE` at start", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("exit code: %w", err)
		}
		c.ExitAtStart = &n
		return nil
	})
	fs.BoolVar(&c.GarbageStdout, "garbage-stdout", false, "write non-JSON lines to stdout")
	fs.IntVar(&c.StderrFlood, "stderr-flood", 0, "write N lines to stderr at start")
	fs.BoolVar(&c.StderrEcho, "stderr-echo", false, "echo also writes its text to stderr")
	fs.BoolVar(&c.BigTool, "big-tool", false, "add the tool big {bytes}: a text result of that many bytes")
	fs.IntVar(&c.BigHint, "big-hint", 0, `with --big-tool: big's _meta {"anthropic/maxResultSizeChars": N}`)
	fs.BoolVar(&c.Grandchild, "grandchild", false, "start a child process that inherits stdout and blocks")
	fs.StringVar(&c.GrandchildPID, "grandchild-pid-file", "", "write the grandchild's pid to FILE")
	fs.StringVar(&c.SetsidHelper, "setsid-helper", "", "start a helper in a new session that blocks, and write its pid to `FILE`")
	fs.BoolVar(&c.Hold, "hold", false, "internal: block until killed")
	fs.BoolVar(&c.Modern, "modern", false, "answer server/discover instead of method-not-found")
	fs.StringVar(&c.Replay, "replay", "", "answer each request over stdio with the answer recorded for its method in `FILE` (JSON: method → {\"result\"} or {\"error\"}), and do nothing else")
	fs.BoolVar(&c.ModernOnly, "modern-only", false, "with --modern: answer initialize with method-not-found, as a 2026-07-28-only server")
	fs.Int64Var(&c.CacheTTLMs, "ttl-ms", 0, "with --cache-scope: the ttlMs of every list result (sent as given)")
	fs.StringVar(&c.CacheScope, "cache-scope", "", "the cacheScope of every list result (sent as given), with --ttl-ms")
	fs.StringVar(&c.RequestLog, "request-log", "", "append the method of every request received to `FILE`, one a line")
	fs.StringVar(&c.Discover, "discover", "", "without --modern, answer server/discover with: empty ({} as a result), silent (no answer), exit (exit with status 1)")
	fs.DurationVar(&c.StartDelay, "start-delay", 0, "wait `DURATION` before reading stdin")
	fs.BoolVar(&c.Logging, "logging", false, "declare the logging capability and add the tool log")
	fs.BoolVar(&c.Progress, "progress", false, "add the tool progress")
	fs.BoolVar(&c.EvilText, "evil-text", false, "put terminal escapes (EvilText) in an evil tool's title, description, schema and result and in stderr")
	fs.BoolVar(&c.UnknownContent, "unknown-content", false, "add a tool hologram whose result holds a text block and a block of an unknown type (UnknownBlock)")
	fs.IntVar(&c.Resources, "resources", 0, "declare resources: `N` text resources test://text/<i>, test://binary, the template test://items/{id} and the tools set_resource, remove_resource, links, relist")
	fs.DurationVar(&c.ReadDelay, "read-delay", 0, "with --resources: wait `DURATION` (or until cancelled) before answering each resources/read")
	fs.BoolVar(&c.Prompts, "prompts", false, "declare the prompts greet {name required, greeting} and plain, and the tools add_prompt and relist")
	fs.BoolVar(&c.Completions, "completions", false, "declare completions: of the prompt greet's arguments (with --prompts) and the template test://items/{id}'s id (with --resources)")
	fs.BoolVar(&c.Rich, "rich", false, "declare resources and prompts and add the tool, resource, template and prompt "+RichTool+" with title, icons, outputSchema, annotations and _meta, whose results carry _meta")
	fs.StringVar(&c.Instructions, "instructions", "", "the initialize result's instructions")
	fs.IntVar(&c.InstructionsBytes, "instructions-bytes", 0, "instructions of `N` bytes (two-byte characters after a short sentence)")
	fs.BoolVar(&c.Conformance, "conformance", false, "add the conformance suite's server fixture: the tools test_*, the resources test://static-text, test://static-binary, test://watched-resource, the template test://template/{id}/data, the prompts test_*_prompt*, logging and completions")
	fs.BoolVar(&c.Ask, "ask", false, "add the tools ask, ask_url and capabilities, which send the client elicitation requests")
	fs.BoolVar(&c.AskAfterInit, "ask-after-init", false, "over stdio, after notifications/initialized send one form elicitation (AskForm) and write the answer to stderr")
	fs.BoolVar(&c.ClientRequests, "client-requests", false, "add the tools sample and roots, which ask the client (sampling/createMessage, roots/list) and return its answer")
	fs.StringVar(&c.CallLog, "call-log", "", "append JSON lines for every tools/call to FILE")
	fs.StringVar(&c.PIDFile, "pid-file", "", "write the server pid to FILE")
	fs.StringVar(&c.StartLog, "start-log", "", "append the server pid and a newline to `FILE` at every start")
	fs.StringVar(&c.HTTP, "http", "", "serve streamable HTTP on ADDR instead of stdio")
	fs.BoolVar(&c.SSE, "sse", false, "with --http: serve legacy SSE")
	fs.StringVar(&c.BasePath, "base-path", "", "with --http: serve the endpoints under `PATH` (e.g. /v1/key)")
	fs.IntVar(&c.DescriptionBytes, "description-bytes", 0, "make echo's description N bytes long")
	fs.StringVar(&c.StdoutFlood, "stdout-flood-no-newline", "", "flood stdout with one endless line: start|call")
	fs.StringVar(&c.HTTPAttack, "http-attack", "", "with --http: error-body|sse-line")
	fs.Int64Var(&c.FloodBytes, "flood-bytes", 0, "bytes of a flood (0: endless)")
	fs.BoolVar(&c.EndlessPages, "endless-pages", false, "answer every tools/list page with a fresh nextCursor")
	fs.BoolVar(&c.EndlessResourcePages, "endless-resource-pages", false, "declare resources and answer every resources/list page with a fresh nextCursor")
	return c
}

// withDefaults returns a copy of c with empty fields defaulted, or an error
// naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		c.Name = "testserver"
	}
	if c.Version == "" {
		c.Version = "1.0.0"
	}
	if c.Schemas == "" {
		c.Schemas = SchemasSimple
	}
	switch c.Schemas {
	case SchemasSimple, SchemasRef, SchemasMixed, SchemasExternal:
	default:
		return c, fmt.Errorf("--schemas %q: want simple, ref, mixed or external", c.Schemas)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--tools", c.Tools}, {"--readonly-every", c.ReadOnlyEvery}, {"--page-size", c.PageSize}, {"--crash-after", c.CrashAfter}, {"--stderr-flood", c.StderrFlood},
		{"--description-bytes", c.DescriptionBytes}, {"--resources", c.Resources}, {"--instructions-bytes", c.InstructionsBytes}} {
		if f.v < 0 {
			return c, fmt.Errorf("%s %d: must not be negative", f.name, f.v)
		}
	}
	if c.InitStderrEvery < 0 {
		return c, fmt.Errorf("--init-stderr-every %s: must not be negative", c.InitStderrEvery)
	}
	if c.ReadDelay < 0 {
		return c, fmt.Errorf("--read-delay %s: must not be negative", c.ReadDelay)
	}
	if c.FloodBytes < 0 {
		return c, fmt.Errorf("--flood-bytes %d: must not be negative", c.FloodBytes)
	}
	switch c.StdoutFlood {
	case "", FloodStart, FloodCall:
	default:
		return c, fmt.Errorf("--stdout-flood-no-newline %q: want %s or %s", c.StdoutFlood, FloodStart, FloodCall)
	}
	switch {
	case c.HTTPAttack == "":
	case c.HTTP == "":
		return c, fmt.Errorf("--http-attack needs --http ADDR")
	case c.HTTPAttack == AttackErrorBody && c.SSE:
		return c, fmt.Errorf("--http-attack %s is for streamable HTTP, not --sse", c.HTTPAttack)
	case c.HTTPAttack != AttackErrorBody && c.HTTPAttack != AttackSSELine:
		return c, fmt.Errorf("--http-attack %q: want %s or %s", c.HTTPAttack, AttackErrorBody, AttackSSELine)
	}
	switch c.Discover {
	case "", DiscoverEmpty, DiscoverSilent, DiscoverExit:
	default:
		return c, fmt.Errorf("--discover %q: want %s, %s or %s", c.Discover, DiscoverEmpty, DiscoverSilent, DiscoverExit)
	}
	if c.Discover != "" && c.Modern {
		return c, fmt.Errorf("--discover %s and --modern: a modern server answers server/discover", c.Discover)
	}
	if c.ModernOnly && !c.Modern {
		return c, fmt.Errorf("--modern-only needs --modern")
	}
	if c.StartDelay < 0 {
		return c, fmt.Errorf("--start-delay %s: must not be negative", c.StartDelay)
	}
	if c.Exit == nil {
		c.Exit = os.Exit
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.BasePath != "" && (!strings.HasPrefix(c.BasePath, "/") || strings.HasSuffix(c.BasePath, "/")) {
		return c, fmt.Errorf("--base-path %q: want /SEGMENT[/SEGMENT...], without a trailing /", c.BasePath)
	}
	return c, nil
}
