// Command freecode is FreeCode's MCP client host: it edits the MCP part of
// ~/.freecode/config.json, connects servers, and runs the reconciler.
package main

import (
	"os"

	"github.com/freecode/freecode/internal/procguard"
)

func main() {
	// A reaper or guard is this same executable: it must start before
	// anything heavy (cobra, the CUE schema) is set up.
	procguard.Dispatch()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}
