// Command freecode is FreeCode's MCP client host: it edits the MCP part of
// ~/.freecode/config.json, connects servers, and runs the reconciler.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}
