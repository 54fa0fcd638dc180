// Command fc-reaper is FreeCode's reaper (and guard) helper, the process
// each local server runs under (see package internal/procguard). freecode
// runs it from beside its own executable when it is installed there and
// runs itself as the helper otherwise: the guarantees are the same, but
// this program is small (no CLI, schema or protocol code to load and
// initialise), so a reaper starts faster and holds a fraction of the
// memory.
//
// It is not a command: run by hand it says so and exits with status 2.
package main

import (
	"fmt"
	"os"

	"github.com/freecode/freecode/internal/procguard"
)

func main() {
	procguard.Dispatch()
	fmt.Fprintf(os.Stderr, "%s: this is an internal helper of freecode, not a command\n", procguard.ReaperName)
	os.Exit(2)
}
