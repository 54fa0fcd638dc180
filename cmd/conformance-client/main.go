// Command conformance-client is the MCP client that the official conformance
// suite (@modelcontextprotocol/conformance) drives to check FreeCode's
// protocol behaviour. It is built on package mcp, the code FreeCode itself
// uses to reach servers, so the suite judges that code and nothing else.
//
// The suite starts a test server per scenario and runs
//
//	conformance-client [flags] <server-url>
//
// with the scenario's name in MCP_CONFORMANCE_SCENARIO and, for some, what a
// user would have been given in MCP_CONFORMANCE_CONTEXT. The client connects
// (initialize and tools/list), makes the tool calls the scenario expects,
// checks their results and closes the session. It exits 0 when every step
// worked, 1 with the reason on stderr when one did not, and 2 on bad usage.
//
// For the authorization scenarios the session gets what FreeCode's own
// remote sessions get — a token store and the server's oauth settings (the
// context's client id and secret, the grant, a Client ID Metadata Document
// URL) — and an in-band sign-in whose "browser" is a GET that follows the
// authorization server's redirect to the loopback callback. Discovery,
// registration, PKCE, scopes, step-up and tokens are package mcp's (its
// auth client's) alone.
//
// scripts/conformance.sh (make conformance) runs every client scenario of
// the suite and says which are expected to fail.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/freecode/freecode/schema"
)

// scenarioEnv names the environment variable through which the suite passes
// the scenario.
const scenarioEnv = "MCP_CONFORMANCE_SCENARIO"

// protocolEnv names the environment variable through which the suite says
// which protocol revision the scenario runs at ("" when it does not).
const protocolEnv = "MCP_CONFORMANCE_PROTOCOL_VERSION"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv(scenarioEnv), os.Getenv(contextEnv), os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status.
func run(args []string, envScenario, envContext string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioName := fs.String("scenario", envScenario, "scenario to run (default $"+scenarioEnv+")")
	transport := fs.String("transport", string(schema.TransportAuto), "remote transport: auto, streamable-http or sse")
	connectTimeout := fs.Duration("timeout", 10*time.Second, "bound on connecting: initialize plus tools/list")
	callTimeout := fs.Duration("call-timeout", 10*time.Second, "bound on each tool call")
	protocol := fs.String("protocol", os.Getenv(protocolEnv), "protocol revision to speak (default $"+protocolEnv+"; empty: FreeCode's default)")
	verbose := fs.Bool("v", false, "log the session's diagnostics to stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: conformance-client [flags] <server-url>\n\nscenarios: %v\n\nflags:\n", scenarioNames())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	// The suite appends the URL after whatever the command already holds.
	url := fs.Arg(fs.NArg() - 1)

	sc, err := lookupScenario(*scenarioName)
	if err != nil {
		fmt.Fprintf(stderr, "conformance-client: %v\n", err)
		return 2
	}

	log := logr.Discard()
	if *verbose {
		log = funcr.New(func(prefix, args string) {
			fmt.Fprintln(stderr, prefix, args)
		}, funcr.Options{Verbosity: 1})
	}
	cfg := config{
		URL:            url,
		Transport:      schema.Transport(*transport),
		Protocol:       *protocol,
		ConnectTimeout: *connectTimeout,
		CallTimeout:    *callTimeout,
		Logger:         log,
		Context:        envContext,
		Diag:           stderr,
	}
	if err := runScenario(context.Background(), sc, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "conformance-client: scenario %s: %v\n", sc.Name, err)
		return 1
	}
	fmt.Fprintf(stdout, "scenario %s: ok\n", sc.Name)
	return 0
}
