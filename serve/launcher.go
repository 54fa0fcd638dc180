package serve

import (
	"os"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/mcp"
)

// ReaperLauncher returns the mcp.Launcher that starts every local server
// under a reaper of r (see procguard); log gets each reaper's start at V(1).
func ReaperLauncher(r *procguard.Reaper, log logr.Logger) mcp.Launcher {
	return reaperLauncher{reaper: r, log: log}
}

// reaperLauncher starts local servers for package mcp, each under a reaper
// process of procguard's.
type reaperLauncher struct {
	reaper *procguard.Reaper
	log    logr.Logger
}

func (l reaperLauncher) Launch(c mcp.LaunchSpec) (mcp.LaunchedProcess, error) {
	p, err := l.reaper.Start(procguard.Command{Path: c.Path, Args: c.Args, Env: c.Env, Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr})
	if err != nil {
		return nil, err
	}
	l.log.V(1).Info("started reaper", "pid", p.ReaperPid(), "server", p.Pid, "reaper", l.reaper.Path())
	return reapedProcess{p}, nil
}

// reapedProcess is a server under its reaper, which does the group kills
// itself (it holds the server unreaped while it sends them).
type reapedProcess struct{ p *procguard.Process }

func (r reapedProcess) Pid() int                        { return r.p.Pid }
func (r reapedProcess) Terminate()                      { r.p.Terminate() }
func (r reapedProcess) Kill()                           { r.p.Kill() }
func (r reapedProcess) Wait() (*os.ProcessState, error) { return r.p.Wait() }
