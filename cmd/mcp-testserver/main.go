// Command mcp-testserver is a configurable MCP server for tests, benchmarks
// and demos. See package internal/testserver for its flags and tools.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/freecode/freecode/internal/testserver"
)

func main() {
	fs := flag.NewFlagSet("mcp-testserver", flag.ExitOnError)
	cfg := testserver.Flags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := testserver.Run(context.Background(), *cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-testserver: %v\n", err)
		os.Exit(1)
	}
}
