package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

// Package mcp states how a start failed (mcp.ExitError,
// mcp.StartTimeoutError); the functions here add what the user can do about
// it, for the one-shot commands and for the status of serve
// (serve.Options.Remedy) alike.

// remedyError is a failure with what to do about it on the lines after it.
type remedyError struct {
	err    error
	remedy string
}

func (e *remedyError) Error() string { return e.err.Error() + "\n" + e.remedy }
func (e *remedyError) Unwrap() error { return e.err }

// withRemedy adds a.remedy's advice to err, a failure of srv.
func (a *app) withRemedy(srv schema.Server, err error) error {
	if r := a.remedy(srv, err); r != "" {
		return &remedyError{err: err, remedy: r}
	}
	return err
}

// remedy says what to do about err, a failure to start or run srv, or ""
// when the error says all there is: a variable the server did not get, a
// timeout to raise. It is pure: the controller calls it under its lock.
func (a *app) remedy(srv schema.Server, err error) string {
	var exit *mcp.ExitError
	var timeout *mcp.StartTimeoutError
	var advice []string
	switch {
	case errors.As(err, &exit):
		advice = append(advice, a.withheldRemedy(srv, exit.Withheld))
	case errors.As(err, &timeout):
		advice = append(advice, a.withheldRemedy(srv, timeout.Withheld), a.timeoutRemedy(srv, timeout))
	case srv.Type == schema.Remote && errors.Is(err, mcp.ErrUnreachable):
		at := "its url"
		if srv.Shown != "" {
			at = termtext.Quote(srv.Shown) // as written: no expanded secret
		}
		advice = append(advice, fmt.Sprintf("Nothing answers at %s: start the server there, or correct its url in %s; under `freecode serve` FreeCode keeps trying (`freecode mcp logs %s` shows each attempt).",
			at, a.entryFile(srv), srv.Name))
	}
	var out []string
	for _, s := range advice {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}

// withheldRemedy is the fix for a server that missed variables of the
// caller's environment: pass them in its env.
func (a *app) withheldRemedy(srv schema.Server, names []string) string {
	if len(names) == 0 {
		return ""
	}
	var flags, entries []string
	for _, n := range names {
		flags = append(flags, "--env "+n+"='${"+n+"}'")
		entries = append(entries, fmt.Sprintf(`%q: "${%s}"`, n, n))
	}
	subject, verb, them := names[0], "is", "it"
	if len(names) > 1 {
		subject, verb, them = strings.Join(names[:len(names)-1], ", ")+" and "+names[len(names)-1], "are", "them"
	}
	return fmt.Sprintf("%s %s set in your environment, but servers get only an allow-list of it (PATH, HOME, LANG, …): "+
		"pass %s on in the server's env, \"env\": {%s} in its entry in %s%s; with `freecode mcp add`: %s",
		subject, verb, them, strings.Join(entries, ", "), a.entryFile(srv), a.retrustNote(srv), strings.Join(flags, " "))
}

// timeoutRemedy is what to do about a start that ran out of time: raise the
// timeout when the server is slow, or a package runner still downloads.
func (a *app) timeoutRemedy(srv schema.Server, e *mcp.StartTimeoutError) string {
	raise := func(to time.Duration) string {
		to = min(to, schema.MaxTimeout)
		return fmt.Sprintf(`raise the server's timeout: "timeout": %d (milliseconds) in its entry in %s%s`,
			to.Milliseconds(), a.entryFile(srv), a.retrustNote(srv))
	}
	// A start that was still working has already been waited for past its
	// timeout, up to controller.MaxStartTimeout (see the controller and
	// serve.OneShotOptions.StartBound): e.Timeout is what it had.
	runner := packageRunner(srv.Command)
	switch {
	case runner != "" && e.Progress != "":
		return fmt.Sprintf("A first run of %s downloads the package, which can take a minute: to start it in one go, %s, or run the command once by hand.",
			runner, raise(max(time.Minute, 2*e.Timeout)))
	case runner != "":
		return fmt.Sprintf("A first run of %s downloads the package, which can take longer than %s: %s, or run the command once by hand.",
			runner, e.Timeout, raise(max(time.Minute, 2*e.Timeout)))
	case e.Progress != "":
		return fmt.Sprintf("If it is only slow to start, %s.", raise(4*e.Timeout))
	}
	return fmt.Sprintf("It showed no sign of work at the end (no CPU time, no stderr): it may be waiting for something. If it is only slow to start, %s.",
		raise(4*e.Timeout))
}

// packageRunner names the package runner srv's command starts with (npx,
// uvx, `pnpm dlx`, …), which downloads the package on its first run, or
// returns "".
func packageRunner(command []string) string {
	if len(command) == 0 {
		return ""
	}
	base := filepath.Base(command[0])
	sub := ""
	if len(command) > 1 {
		sub = command[1]
	}
	switch {
	case base == "npx" || base == "pnpx" || base == "bunx" || base == "uvx":
		return base
	case base == "pipx" && sub == "run", base == "npm" && sub == "exec", base == "pnpm" && sub == "dlx",
		base == "yarn" && sub == "dlx", base == "bun" && sub == "x":
		return base + " " + sub
	case base == "uv" && sub == "tool" && len(command) > 2 && command[2] == "run":
		return "uv tool run"
	}
	return ""
}

// entryFile is the file that defines srv.
func (a *app) entryFile(srv schema.Server) string {
	if dir, ok := strings.CutPrefix(srv.Source, schema.SourceProjectPrefix); ok {
		return filepath.Join(dir, schema.ProjectFile)
	}
	if p, err := a.configPath(); err == nil {
		return p
	}
	return "the config"
}

// retrustNote reminds that a changed project server must be trusted again.
func (a *app) retrustNote(srv schema.Server) string {
	if dir, ok := strings.CutPrefix(srv.Source, schema.SourceProjectPrefix); ok {
		return " (then trust the project again: `freecode mcp trust " + dir + "`)"
	}
	return ""
}
