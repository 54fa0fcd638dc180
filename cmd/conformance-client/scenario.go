package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// scenario is what the client does for one of the suite's client scenarios.
// Every scenario connects (initialize, then tools/list when the server has
// tools), makes Calls in order, and closes the session.
type scenario struct {
	Name string
	// What the suite checks, for the reader.
	Checks string
	Calls  []toolCall
	// Auth: the server is protected. The session gets a token store and an
	// in-band sign-in (see signIn), as FreeCode's own remote sessions get
	// a store and `freecode mcp login`.
	Auth bool
	// Grant is the OAuth grant the scenario's server expects, as the
	// server's "oauth.grant" setting would say ("" is the default,
	// authorization code).
	Grant auth.Grant
	// Default: a scenario this driver has no case for; its Calls are made
	// only for tools the server lists, and the calls the suite's context
	// names are made as given.
	Default bool
	// EchoSchema names a listed tool whose input schema, as FreeCode
	// converted it, is sent back through the tool SchemaEcho (the JSON
	// Schema preservation scenarios).
	EchoSchema, SchemaEcho string
	// WhileAsked is a call made once, while the first elicitation waits
	// for its answer: another request in the middle of a multi round-trip
	// request (SEP-2322), which must carry none of its state.
	WhileAsked *toolCall
}

// toolCall is one tools/call the scenario's test server expects, and the
// text its result must contain.
type toolCall struct {
	Tool     string
	Args     json.RawMessage
	WantText string
	// AsGiven: the suite's context gave the arguments, to see what the
	// session sends for them (a null for a header parameter, say): they
	// are sent without the schema check FreeCode makes of a model's.
	AsGiven bool
}

// testToolCall is the call every authorization scenario's server expects:
// its one tool, test-tool, answers "test".
var testToolCall = toolCall{Tool: "test-tool", Args: json.RawMessage(`{}`), WantText: "test"}

// authScenario is an authorization scenario whose server offers test-tool
// behind OAuth.
func authScenario(name, checks string) scenario {
	return scenario{Name: name, Checks: checks, Calls: []toolCall{testToolCall}, Auth: true}
}

// scenarios lists the client scenarios of @modelcontextprotocol/conformance
// (0.1.16), as that suite's test servers define them. Every one of them is
// attempted; scripts/conformance.sh says which are expected to fail and why.
func scenarios() []scenario {
	cc := func(sc scenario) scenario { sc.Grant = auth.GrantClientCredentials; return sc }
	return []scenario{
		{
			Name:   "initialize",
			Checks: "initialize carries a supported protocolVersion and clientInfo name and version",
		},
		{
			Name:   "tools_call",
			Checks: "add_numbers is called with numbers a and b over streamable HTTP",
			Calls: []toolCall{{
				Tool:     "add_numbers",
				Args:     json.RawMessage(`{"a":5,"b":3}`),
				WantText: "The sum of 5 and 3 is 8",
			}},
		},
		{
			Name: "elicitation-sep1034-client-defaults",
			Checks: "the tool asks the client for input with a schema of defaults; the client accepts " +
				"with empty content and must fill in every default (SEP-1034)",
			Calls: []toolCall{{
				Tool:     "test_client_elicitation_defaults",
				Args:     json.RawMessage(`{}`),
				WantText: `Elicitation completed: {`,
			}},
		},
		{
			Name: "sse-retry",
			Checks: "the server ends the tools/call SSE stream after a primed event id and retry: 500; " +
				"the client resumes with GET and Last-Event-ID after 450-700 ms and gets the result there (SEP-1699)",
			Calls: []toolCall{{
				Tool:     "test_reconnection",
				Args:     json.RawMessage(`{}`),
				WantText: "Reconnection test completed successfully",
			}},
		},
		{
			Name: "sep-2322-client-request-state",
			Checks: "tools answer input_required with an elicitation: the retry echoes requestState exactly (or sends " +
				"none when there was none) under a new id; a call made meanwhile carries no MRTR state; a result " +
				"without resultType is complete (SEP-2322, 2026-07-28)",
			Calls: []toolCall{
				{Tool: "test_mrtr_echo_state", Args: json.RawMessage(`{}`), WantText: "echo-state-ok"},
				{Tool: "test_mrtr_no_state", Args: json.RawMessage(`{}`), WantText: "no-state-ok"},
				{Tool: "test_mrtr_no_result_type", Args: json.RawMessage(`{}`), WantText: "no-result-type-test-ok"},
			},
			WhileAsked: &toolCall{Tool: "test_mrtr_unrelated", Args: json.RawMessage(`{}`), WantText: "unrelated-ok"},
		},
		authScenario("auth/metadata-default", "protected resource metadata at the path-based well-known URL; authorization server metadata by RFC 8414"),
		authScenario("auth/metadata-var1", "protected resource metadata at the root well-known URL; OpenID discovery with path insertion"),
		authScenario("auth/metadata-var2", "authorization server metadata at the RFC 8414 path-inserted URL"),
		authScenario("auth/metadata-var3", "authorization server metadata by OpenID discovery with path appending"),
		authScenario("auth/basic-cimd", "the authorization server supports Client ID Metadata Documents: the client's metadata URL is its client_id"),
		authScenario("auth/scope-from-www-authenticate", "the scope of the 401 challenge is requested"),
		authScenario("auth/scope-from-scopes-supported", "without a challenge scope, the protected resource's scopes_supported are requested"),
		authScenario("auth/scope-omitted-when-undefined", "no scope is requested when none is defined"),
		authScenario("auth/scope-step-up", "a 403 insufficient_scope on tools/call re-authorizes with the wider scope and the call is sent again"),
		authScenario("auth/scope-retry-limit", "repeated 403 insufficient_scope answers end after a bounded number of re-authorizations"),
		authScenario("auth/token-endpoint-auth-basic", "the registered client authenticates to the token endpoint with client_secret_basic"),
		authScenario("auth/token-endpoint-auth-post", "the registered client authenticates to the token endpoint with client_secret_post"),
		authScenario("auth/token-endpoint-auth-none", "a public client: no client authentication at the token endpoint"),
		authScenario("auth/pre-registration", "no dynamic registration: the pre-registered client_id and secret from the context are used"),
		authScenario("auth/2025-03-26-oauth-metadata-backcompat", "a 2025-03-26 server: no protected resource metadata, authorization server metadata at the root"),
		authScenario("auth/2025-03-26-oauth-endpoint-fallback", "a 2025-03-26 server without metadata: the default /authorize, /token and /register endpoints"),
		authScenario("auth/resource-mismatch", "the protected resource metadata names another resource: the client must not authorize"),
		authScenario("auth/offline-access-scope", "offline_access is requested when the authorization server offers it (SEP-2207)"),
		authScenario("auth/offline-access-not-supported", "offline_access is not requested when the authorization server does not offer it (SEP-2207)"),
		cc(authScenario("auth/client-credentials-jwt", "client credentials grant with private_key_jwt client authentication (RFC 7523)")),
		cc(authScenario("auth/client-credentials-basic", "client credentials grant with client_secret_basic client authentication")),
		{
			Name:   "json-schema-ref-no-deref",
			Checks: "a tool's input schema holds a network $ref: the client lists tools and never fetches it (the server answers tools/list only)",
		},
		{
			Name: "json-schema-2020-12-preservation",
			Checks: "the input schema of json_schema_2020_12_tool, as FreeCode converted it, is sent back through " +
				"json_schema_echo; the suite diffs it against the server's for stripped 2020-12 keywords",
			EchoSchema: "json_schema_2020_12_tool",
			SchemaEcho: "json_schema_echo",
		},
		authScenario("auth/cross-app-access-complete-flow", "enterprise-managed authorization: IdP token exchange to an ID-JAG, then the JWT bearer grant (SEP-990)"),
	}
}

func scenarioNames() []string {
	var names []string
	for _, sc := range scenarios() {
		names = append(names, sc.Name)
	}
	return names
}

func lookupScenario(name string) (scenario, error) {
	if name == "" {
		return scenario{}, fmt.Errorf("no scenario: set %s or -scenario (one of %s)", scenarioEnv, strings.Join(scenarioNames(), ", "))
	}
	for _, sc := range scenarios() {
		if sc.Name == name {
			return sc, nil
		}
	}
	// A scenario without a case of its own runs the default flow (see
	// defaultCalls), so that it measures package mcp as it is.
	return scenario{Name: name, Checks: "the default flow", Auth: true, Default: true}, nil
}

// config is how to reach the scenario's test server.
type config struct {
	URL       string
	Transport schema.Transport
	// Protocol is the revision to speak, as a server's "protocol" setting.
	Protocol       string
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	Logger         logr.Logger
	// Context is MCP_CONFORMANCE_CONTEXT ("" if unset).
	Context string
	// Diag gets the sign-in's output and notes on the context.
	Diag io.Writer
}

// runScenario connects to the test server, makes the scenario's calls and
// closes the session, writing one line per step to out. It returns the first
// failure; the session is closed in every case.
func runScenario(ctx context.Context, sc scenario, cfg config, out io.Writer) (err error) {
	// Resolved as a config file's entry with nothing more would be.
	srv := schema.MCP{}.Resolve(schema.Server{
		Name:      "conformance",
		Type:      schema.Remote,
		URL:       cfg.URL,
		Transport: cfg.Transport,
		Protocol:  cfg.Protocol,
		Enabled:   true,
		Timeout:   cfg.ConnectTimeout,
	})
	spec := controller.MCPSpec(srv)
	var sess *mcp.Session // set before any call, so before any elicitation
	opts := mcp.Options{
		Logger:        cfg.Logger,
		ClientName:    "freecode-conformance-client",
		ClientVersion: "0.1.0",
		Elicit:        acceptDefaults,
	}
	if sc.WhileAsked != nil {
		var once sync.Once
		opts.Elicit = func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
			var err error
			once.Do(func() {
				err = callTool(ctx, sess, sess.Tools(), *sc.WhileAsked, cfg.CallTimeout)
				fmt.Fprintf(out, "tools/call %s while asked: %v\n", sc.WhileAsked.Tool, err)
			})
			if err != nil {
				return mcp.ElicitResult{}, err
			}
			return acceptDefaults(ctx, e)
		}
	}
	if sc.Auth {
		as, err := newAuthSetup(sc, cfg.Context, cfg.Diag)
		if err != nil {
			return err
		}
		defer as.cleanup()
		spec.OAuth, opts.Tokens, opts.Interaction = as.cfg, as.store, as.in
	}
	sess, err = mcp.Connect(ctx, spec, opts)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		// A session that ended on its own before Close is a failure too.
		select {
		case <-sess.Done():
			if endErr := sess.Err(); endErr != nil && err == nil {
				err = fmt.Errorf("session ended early: %w", endErr)
			}
		default:
		}
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()

	tools := sess.Tools()
	fmt.Fprintf(out, "connected to %s: %d tools\n", cfg.URL, len(tools))
	for _, cerr := range sess.ConvertErrors() {
		fmt.Fprintf(out, "tool skipped: %v\n", cerr)
	}

	calls := sc.Calls
	if sc.Default {
		if calls, err = defaultCalls(tools, cfg.Context); err != nil {
			return err
		}
	}
	if sc.EchoSchema != "" {
		i := slices.IndexFunc(tools, func(t mcp.Tool) bool { return t.Name == sc.EchoSchema })
		if i < 0 {
			return fmt.Errorf("server did not list tool %q", sc.EchoSchema)
		}
		args, err := json.Marshal(map[string]json.RawMessage{"schema": tools[i].InputSchema})
		if err != nil {
			return err
		}
		calls = append(calls, toolCall{Tool: sc.SchemaEcho, Args: args})
	}
	for _, call := range calls {
		if err := callTool(ctx, sess, tools, call, cfg.CallTimeout); err != nil {
			return err
		}
		fmt.Fprintf(out, "tools/call %s: ok\n", call.Tool)
	}
	return nil
}

// acceptDefaults answers a form with its defaults, as any client of serve's
// API can: it accepts with no content, and package mcp fills in the
// default of every field left out (SEP-1034) and checks the result
// against the form before it is sent. Anything else is declined: the
// client has nobody to ask.
func acceptDefaults(_ context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
	if e.Mode != mcp.ElicitForm {
		return mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
	}
	return mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
}

// caller is the part of *mcp.Session a tool call needs.
type caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage, progress func(wire.Progress)) (*wire.CallResult, error)
}

// callTool checks that the server listed call.Tool, validates the arguments
// against its converted schema as FreeCode does before any call, calls it
// within timeout and checks the result.
func callTool(ctx context.Context, sess caller, tools []mcp.Tool, call toolCall, timeout time.Duration) error {
	i := slices.IndexFunc(tools, func(t mcp.Tool) bool { return t.Name == call.Tool })
	if i < 0 {
		var names []string
		for _, t := range tools {
			names = append(names, t.Name)
		}
		return fmt.Errorf("server did not list tool %q (listed: %v)", call.Tool, names)
	}
	if v := tools[i].Validator; v != nil && !call.AsGiven {
		if err := v.Validate(call.Args); err != nil {
			return fmt.Errorf("arguments for %q rejected by its input schema: %w", call.Tool, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := sess.CallTool(cctx, call.Tool, call.Args, nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("tools/call %q: no result within %s: %w", call.Tool, timeout, err)
		}
		return fmt.Errorf("tools/call %q: %w", call.Tool, err)
	}
	return checkResult(call, res)
}

// checkResult reports whether res is the successful result call expects,
// reading its text as FreeCode does (wire.CallResult.Text).
func checkResult(call toolCall, res *wire.CallResult) error {
	if res == nil {
		return fmt.Errorf("tools/call %q: empty result", call.Tool)
	}
	text := res.Text()
	if res.IsError {
		return fmt.Errorf("tools/call %q: the tool reported an error: %q", call.Tool, text)
	}
	if !strings.Contains(text, call.WantText) {
		return fmt.Errorf("tools/call %q: result text %q does not contain %q", call.Tool, text, call.WantText)
	}
	return nil
}

// defaultCalls is the default flow's calls: every tool the session listed
// (what package mcp kept of the server's list), in name order, with the
// arguments the suite's context gives for it, or else the least arguments
// its schema asks for (minimalArgs). The calls the context names for tools
// the session did not list are made too, and fail: a tool the client
// dropped that the scenario expects called.
func defaultCalls(tools []mcp.Tool, rawContext string) ([]toolCall, error) {
	asked, err := contextCalls(rawContext)
	if err != nil {
		return nil, err
	}
	var calls []toolCall
	for _, t := range slices.SortedFunc(slices.Values(tools), func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) }) {
		i := slices.IndexFunc(asked, func(c toolCall) bool { return c.Tool == t.Name })
		if i >= 0 {
			calls = append(calls, asked[i])
			asked = slices.Delete(asked, i, i+1)
			continue
		}
		calls = append(calls, toolCall{Tool: t.Name, Args: minimalArgs(t.InputSchema)})
	}
	return append(calls, asked...), nil
}

// minimalArgs is an object with a value for each required property of the
// object schema: its const, default or first enum value, else a value of its
// type ("conformance", 1, true, [], {}). A schema it cannot read gets {}.
func minimalArgs(schema json.RawMessage) json.RawMessage {
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type    any               `json:"type"`
			Const   json.RawMessage   `json:"const"`
			Default json.RawMessage   `json:"default"`
			Enum    []json.RawMessage `json:"enum"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return json.RawMessage(`{}`)
	}
	args := map[string]json.RawMessage{}
	for _, name := range s.Required {
		p := s.Properties[name]
		switch {
		case len(p.Const) > 0:
			args[name] = p.Const
		case len(p.Default) > 0:
			args[name] = p.Default
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		default:
			typ, _ := p.Type.(string)
			if list, ok := p.Type.([]any); ok && len(list) > 0 {
				typ, _ = list[0].(string)
			}
			switch typ {
			case "integer", "number":
				args[name] = json.RawMessage(`1`)
			case "boolean":
				args[name] = json.RawMessage(`true`)
			case "array":
				args[name] = json.RawMessage(`[]`)
			case "object":
				args[name] = json.RawMessage(`{}`)
			case "null":
				args[name] = json.RawMessage(`null`)
			default:
				args[name] = json.RawMessage(`"conformance"`)
			}
		}
	}
	out, err := json.Marshal(args)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}
