package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at link time by `make build` (-ldflags "-X
// main.version=…", from git describe); nothing else writes it. Without it
// the version comes from the build information Go records.
var version string

// buildVersion is what `freecode --version` prints after the name: the
// version, and the Go toolchain and platform it was built with.
func buildVersion() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version // a module version, or a VCS pseudo-version
		if v == "" || v == "(devel)" {
			v = vcsVersion(info)
		}
	}
	if v == "" {
		v = "(unknown version)"
	}
	return fmt.Sprintf("%s (%s, %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// vcsVersion is "devel" and the commit the binary was built from, if Go
// recorded it.
func vcsVersion(info *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
}
