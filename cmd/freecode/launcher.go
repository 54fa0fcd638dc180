package main

import (
	"github.com/go-logr/logr"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/serve"
)

// launcher runs local servers under the reapers of processes (see there);
// log gets the subreaper's errors and each reaper's start at V(1).
func (a *app) launcher(log logr.Logger) mcp.Launcher {
	return serve.ReaperLauncher(a.processes(log), log)
}
