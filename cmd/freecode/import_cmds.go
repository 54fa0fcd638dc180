package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/schema/hosts"
)

func (a *app) importCmd() *cobra.Command {
	var (
		from      string
		dryRun    bool
		toProject bool
		skip      []string
	)
	c := &cobra.Command{
		Use:   "import [--from HOST|FILE] [--dry-run] [--to-project]",
		Short: "Add the MCP servers of another host's config (Claude Code, Claude Desktop, Cursor, VS Code, Codex, Gemini CLI, OpenCode)",
		Long: `Add the MCP servers that another host has configured to FreeCode's config,
translating its format: ${env:VAR}, $VAR and {env:VAR} become ${VAR}, a VS
Code ${input:id} becomes a variable named after it, Codex's env_vars and
bearer_token_env_var become env and header references. It shows what it
adds, and what it skips and why (a name configured already, a field FreeCode
has no equivalent for). All servers are added in one edit, or none.

Servers go to your user config, where they run in every directory. A
project's servers never do: those of its own files (.mcp.json,
.cursor/mcp.json, .vscode/mcp.json, .codex/config.toml,
.gemini/settings.json, opencode.json), which come with the repository, and
those a host keeps for one project (Claude Code's entries of ~/.claude.json
under "projects") are skipped, naming the project, unless --to-project is
given in that project's directory. With --to-project only the project's
servers are imported, into the project's .freecode/settings.json, where
they run once you trust the project (freecode mcp trust). A project's file
never replaces a server of your own of the same name.

--from takes a host (` + strings.Join(hosts.IDs(), ", ") + `), which reads
that host's user and project files, or a FILE in any of their formats. A
FILE under any repository's root, or, outside one, named as a project's
file (.mcp.json, .cursor/mcp.json, ...) is that project's: refused without
--to-project, and with it imported only in its own project. A FILE
elsewhere goes to your user config. Without --from it lists what it finds
and writes nothing.

Values written out in env and headers (not ${VAR} references), and what
looks like a token in a url or command line (shown as ***), may be
secrets. Imported into your user config from a file only you can read, or
looking like a token, they make the config readable by you only (0600).
The project's settings file is shared (committed), so it never gets them:
each becomes a ${NAME} reference (${<SERVER>_<KEY>} for an env key another
server uses too), and the import says which variables to set.`,
		Args: exactArgs(0, "no arguments (give the source with --from)"),
		RunE: func(c *cobra.Command, args []string) error {
			env, err := a.hostEnv()
			if err != nil {
				return err
			}
			if from == "" {
				return a.surveyHosts(env)
			}
			servers, err := a.readHost(from, env, toProject)
			if err != nil {
				return err
			}
			return a.importServers(c, env, servers, importOpts{skip: skip, dryRun: dryRun, toProject: toProject})
		},
	}
	c.Flags().StringVar(&from, "from", "", "`HOST` ("+strings.Join(hosts.IDs(), ", ")+") or FILE to import from")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be added; write nothing")
	c.Flags().StringArrayVar(&skip, "skip", nil, "leave out the server `NAME` (repeatable)")
	c.Flags().BoolVar(&toProject, "to-project", false, "import only this project's servers, into its .freecode/settings.json (they run once it is trusted)")
	return c
}

// hostEnv is where the other hosts keep their files for this user, and
// the project directory (--project, else the working directory).
func (a *app) hostEnv() (hosts.Env, error) {
	home := a.getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return hosts.Env{}, fmt.Errorf("find home directory: %w", err)
		}
	}
	env := hosts.Env{Home: home, ConfigDir: a.getenv("XDG_CONFIG_HOME"), CodexHome: a.getenv("CODEX_HOME"), Dir: a.projectFlag}
	if env.ConfigDir == "" {
		env.ConfigDir = filepath.Join(home, ".config")
	}
	if env.CodexHome == "" {
		env.CodexHome = filepath.Join(home, ".codex")
	}
	if runtime.GOOS == "darwin" {
		env.AppSupport = filepath.Join(home, "Library", "Application Support")
	}
	if env.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return hosts.Env{}, fmt.Errorf("working directory: %w", err)
		}
		env.Dir = wd
	}
	dir, err := filepath.Abs(env.Dir)
	if err != nil {
		return hosts.Env{}, fmt.Errorf("project directory: %w", err)
	}
	env.Dir = dir
	return env, nil
}

// readHost reads the servers of from, a host's ID or a file, in the
// order of the host's files (see dedupeServers for which of a name given
// twice is imported). A file inside the project is the project's
// (Scope "project"), refused unless toProject.
func (a *app) readHost(from string, env hosts.Env, toProject bool) ([]hosts.Server, error) {
	var locs []hosts.Location
	if h := hosts.Lookup(from); h != nil {
		var looked []string
		for _, loc := range h.Locations(env) {
			looked = append(looked, loc.Path)
			if _, err := os.Stat(loc.Path); err == nil {
				loc.Host = h
				locs = append(locs, loc)
			}
		}
		if len(locs) == 0 {
			return nil, fmt.Errorf("no %s config found (looked for %s)", h.Name, strings.Join(dedupe(looked), ", "))
		}
	} else {
		data, err := os.ReadFile(from)
		if errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(from, `/\.`) {
			return nil, usageError{fmt.Errorf("--from %s: no such host or file (hosts: %s)", from, strings.Join(hosts.IDs(), ", "))}
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", from, err)
		}
		h, err := hosts.Detect(from, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		scope := "file"
		if root, ok := projectOwns(from, env); ok {
			here := thisProject(root, env)
			abs, err := filepath.Abs(from)
			if err != nil {
				return nil, fmt.Errorf("--from %s: %w", from, err)
			}
			switch {
			case !toProject && here:
				return nil, fmt.Errorf("--from %s: the file is in project %s, and a project's servers never go to your user config, where they would run in every directory without asking; import them into %s, where they run once you trust the project, with `freecode mcp import --from %s --to-project`",
					from, root, projectSettings(env.Dir), from)
			case !toProject:
				return nil, fmt.Errorf("--from %s: the file is in project %s, and a project's servers never go to your user config, where they would run in every directory without asking; import them into that project's %s, where they run once you trust it, with `freecode mcp import --from %s --to-project` in %s",
					from, root, schema.ProjectFile, termtext.ShellCommand(abs), root)
			case !here:
				return nil, fmt.Errorf("--from %s --to-project: the file is in project %s, not this one (%s), and a project's servers go only into its own %s; run `freecode mcp import --from %s --to-project` in %s",
					from, root, projectDirOf(env), schema.ProjectFile, termtext.ShellCommand(abs), root)
			}
			scope = "project"
		}
		locs = []hosts.Location{{Host: h, Path: from, Scope: scope}}
	}
	var out []hosts.Server
	for _, loc := range locs {
		data, err := os.ReadFile(loc.Path)
		if err != nil {
			return nil, fmt.Errorf("read %s config: %w", loc.Host.Name, err)
		}
		servers, err := hosts.Read(loc, data, env)
		if err != nil {
			return nil, err
		}
		out = append(out, servers...)
	}
	return out, nil
}

// projectOwns reports whether the file at path is a project's rather
// than the user's, and the project's directory: unless it is one of the
// files the hosts read as the user's, it is the project's of the
// repository root holding it (a home directory kept in git is not a
// project), or, outside a repository, it is named as one of the files the
// hosts read in a project (.mcp.json, .cursor/mcp.json, ...; see
// hosts.ProjectFileDir), wherever it is, and is that directory's. A
// symlink counts both where it is and where it points.
func projectOwns(path string, env hosts.Env) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	user := map[string]bool{}
	for _, h := range hosts.Hosts() {
		for _, loc := range h.Locations(env) {
			if loc.Scope != "project" {
				user[filepath.Clean(loc.Path)] = true
			}
		}
	}
	if user[abs] {
		return "", false
	}
	paths := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		paths = append(paths, real)
	}
	for _, p := range paths {
		if root := projectRoot(filepath.Dir(p), env.Home); root != "" {
			return root, true
		}
		if dir, ok := hosts.ProjectFileDir(p); ok {
			return dir, true
		}
	}
	return "", false
}

// projectRoot is the repository root holding dir, "" outside one or in one
// rooted at home (a home directory kept in git is not a project).
func projectRoot(dir, home string) string {
	root := schema.RepoRoot(dir)
	if root != "" && (filepath.Clean(root) == filepath.Clean(home) || realPath(root) == realPath(home)) {
		return ""
	}
	return root
}

// thisProject reports whether dir, a project's directory (projectOwns),
// is the one the import runs for: the repository root holding env.Dir,
// else env.Dir.
func thisProject(dir string, env hosts.Env) bool {
	cur := projectDirOf(env)
	return filepath.Clean(dir) == filepath.Clean(cur) || realPath(dir) == realPath(cur)
}

// projectDirOf is the directory of the project the import runs for: the
// repository root holding env.Dir, else env.Dir.
func projectDirOf(env hosts.Env) string {
	if root := projectRoot(env.Dir, env.Home); root != "" {
		return root
	}
	return env.Dir
}

// realPath is path with its symlinks resolved, else path.
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// importOpts are what `mcp import` was asked for.
type importOpts struct {
	skip      []string
	dryRun    bool
	toProject bool
}

// ownProject says whether s belongs to one project rather than to the
// user: a server of a project's file, or one a host keeps for a project.
func ownProject(s hosts.Server) bool {
	return s.Project != "" || s.Location.Scope == "project"
}

// skipByTarget skips the servers that do not go where this import writes.
// Without --to-project that is the user config: a server of a project's
// file, or one a host keeps for one project, is skipped, naming it. With
// it, the project's settings file in dir: only the project's own servers
// go there.
func skipByTarget(servers []hosts.Server, dir string, toProject bool) {
	for i := range servers {
		s := &servers[i]
		if s.Skip != "" {
			continue
		}
		switch {
		case s.Project != "" && s.Project != dir:
			s.Skip = fmt.Sprintf("%s runs it only in project %s; to import it into that project's %s, run `freecode mcp import --from %s --to-project` there",
				s.Location.Host.Name, s.Project, schema.ProjectFile, s.Location.Host.ID)
		case s.Project != "" && !toProject:
			s.Skip = fmt.Sprintf("%s runs it only in this project (%s), not everywhere as your user config would; import it into %s with --to-project",
				s.Location.Host.Name, s.Project, projectSettings(dir))
		case s.Location.Scope == "project" && !toProject:
			s.Skip = fmt.Sprintf("a project's server runs only in the project, once you trust it, never from your user config; import it into %s with `freecode mcp import --from %s --to-project` in %s",
				projectSettings(dir), s.Location.Host.ID, dir)
		case toProject && !ownProject(*s):
			s.Skip = "it is one of your own servers, not the project's; import it without --to-project"
		}
	}
}

// dedupeServers skips all but one of the servers to be imported that have
// the same name. A later file of a host (a project's) takes precedence,
// as in the host itself, except over a server of the user's own: a
// project's file, which comes with a repository, never replaces one.
func dedupeServers(servers []hosts.Server) {
	byName := map[string]int{}
	for i := range servers {
		s := &servers[i]
		if s.Skip != "" {
			continue
		}
		j, ok := byName[s.Name]
		if !ok {
			byName[s.Name] = i
			continue
		}
		if prev := &servers[j]; !ownProject(*prev) && ownProject(*s) {
			s.Skip = fmt.Sprintf("your own server of the same name in %s is imported; a project's file never replaces it", prev.Location.Path)
			continue
		}
		servers[j].Skip = fmt.Sprintf("defined again in %s, which is imported instead", s.Location.Path)
		byName[s.Name] = i
	}
}

func dedupe(paths []string) []string {
	var out []string
	for _, p := range paths {
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// surveyHosts lists the hosts' files that exist and how many servers
// each has; it writes nothing.
func (a *app) surveyHosts(env hosts.Env) error {
	found := false
	for _, h := range hosts.Hosts() {
		for _, loc := range h.Locations(env) {
			data, err := os.ReadFile(loc.Path)
			if err != nil {
				continue
			}
			loc.Host = h
			servers, err := hosts.Read(loc, data, env)
			if err != nil {
				fmt.Fprintf(a.stdout, "%s (%s): cannot read it: %s\n", h.Name, loc.Path, termtext.Neutralize(err.Error()))
				continue
			}
			if len(servers) == 0 {
				continue
			}
			found = true
			// Read sorts by project: one line per project (a project's
			// file is its directory's; "" is the user's).
			for len(servers) > 0 {
				project := servers[0].Project
				if loc.Scope == "project" {
					project = env.Dir
				}
				n := 1
				for n < len(servers) && servers[n].Project == servers[0].Project {
					n++
				}
				names := make([]string, n)
				for i, s := range servers[:n] {
					names[i] = s.From
				}
				list := fmt.Sprintf("%d server%s (%s)", n, plural(n), termtext.Neutralize(strings.Join(names, ", ")))
				switch {
				case project == "":
					fmt.Fprintf(a.stdout, "%s, %s: %s; import with `freecode mcp import --from %s`\n", h.Name, loc.Path, list, h.ID)
				case project == env.Dir:
					fmt.Fprintf(a.stdout, "%s, %s (this project's): %s; import them into %s with `freecode mcp import --from %s --to-project`\n",
						h.Name, loc.Path, list, projectSettings(env.Dir), h.ID)
				default:
					fmt.Fprintf(a.stdout, "%s, %s (project %s's): %s; import them into its %s with `freecode mcp import --from %s --to-project` there\n",
						h.Name, loc.Path, cell(project), list, schema.ProjectFile, h.ID)
				}
				servers = servers[n:]
			}
		}
	}
	if !found {
		fmt.Fprintln(a.stdout, "No MCP servers of another host found; give a file with `freecode mcp import --from FILE`.")
	}
	return nil
}

// importServers adds the servers that can be imported to the user config
// (with toProject: to the project's settings file in env.Dir) in one edit
// (or, with dryRun, checks that it would work), and shows what it added
// and skipped.
func (a *app) importServers(c *cobra.Command, env hosts.Env, servers []hosts.Server, o importOpts) error {
	v, err := a.schema()
	if err != nil {
		return err
	}
	for i := range servers {
		for _, name := range o.skip {
			if s := &servers[i]; s.Skip == "" && (s.Name == name || s.From == name) {
				s.Skip = "left out (--skip)"
			}
		}
	}
	skipByTarget(servers, env.Dir, o.toProject)
	dedupeServers(servers)
	path, err := a.configPath()
	if err != nil {
		return err
	}
	if o.toProject {
		userPath := path
		if path, err = a.importProjectFile(env.Dir); err != nil {
			return err
		}
		if err := skipUserNames(v, userPath, servers); err != nil {
			return err
		}
	}
	var refs []named // variables the project's servers now refer to
	var taken map[string]bool
	if o.toProject {
		if taken, err = takenVars(path, servers); err != nil {
			return err
		}
	}
	for i := range servers {
		s := &servers[i]
		if s.Skip != "" {
			continue
		}
		if o.toProject {
			for _, r := range s.ReferLiterals(taken) {
				taken[r.Var] = true
				refs = append(refs, named{s.Name, fmt.Sprintf("%s (server %s's %s)", r.Var, cell(s.Name), r.Literal)})
			}
		}
		// One server FreeCode refuses is skipped, not the whole import.
		var re *schema.RefusedEdit
		if err := v.CheckEntry(s.Fields()); errors.As(err, &re) {
			var why []string
			for _, e := range re.Errors {
				why = append(why, strings.TrimPrefix(schema.FormatPath(e.Path[min(3, len(e.Path)):])+": ", ": ")+e.Msg)
			}
			s.Skip = "FreeCode would refuse it: " + strings.Join(why, "; ")
		} else if err != nil {
			return err
		}
	}
	// Values written out, from a file only the user can read or looking
	// like tokens, must not land in a file others can read.
	private, err := privateValues(servers)
	if err != nil {
		return err
	}
	var was fs.FileMode // the user config's mode before it was made 0600
	if !o.toProject && len(private) > 0 {
		if was, err = keepPrivate(path, o.dryRun); err != nil {
			return err
		}
	}
	var added []string
	exists := map[string]bool{}
	fn := func(d *schema.Doc) error {
		// fn may run again on a file that changed meanwhile: start over.
		added, exists = nil, map[string]bool{}
		for _, s := range servers {
			switch {
			case s.Skip != "":
			case d.HasServer(s.Name):
				exists[s.Name] = true
			default:
				if err := d.AddServer(s.Fields()); err != nil {
					return err
				}
				added = append(added, s.Name)
			}
		}
		return nil
	}
	switch {
	case o.dryRun:
		err = v.TryEdit(path, fn)
	case o.toProject:
		err = v.Edit(c.Context(), path, fn)
	default:
		path, err = a.edit(c, "", fn)
	}
	for i := range servers {
		if exists[servers[i].Name] && servers[i].Skip == "" {
			servers[i].Skip = fmt.Sprintf("a server named %q is configured already in %s (remove it first to import this one)", servers[i].Name, path)
		}
	}
	a.printImport(servers, env.Dir)
	if err != nil {
		return fmt.Errorf("nothing was imported: %w", err)
	}
	switch {
	case len(added) == 0:
		fmt.Fprintln(a.stdout, "Nothing to import.")
	case o.dryRun:
		fmt.Fprintf(a.stdout, "Would add %d server%s to %s (--dry-run: nothing written).\n", len(added), plural(len(added)), path)
	case o.toProject:
		fmt.Fprintf(a.stdout, "Added %d server%s to %s.\n", len(added), plural(len(added)), path)
		fmt.Fprintf(a.stdout, "Project servers run once you trust the project (again, after this change): review it with `%s`.\n",
			cell(termtext.ShellCommand("freecode", "mcp", "trust", schema.ProjectDir(path))))
	default:
		fmt.Fprintf(a.stdout, "Added %d server%s to %s.\n", len(added), plural(len(added)), path)
	}
	if refs := ofAdded(refs, added); len(refs) > 0 {
		fmt.Fprintf(a.stdout, "%s is shared, so values written out in env and headers, and what looks like a secret in a url or command line, were not copied into it; set these variables where freecode runs: %s.\n",
			path, strings.Join(refs, ", "))
	}
	if private := ofAdded(private, added); was != 0 && len(private) > 0 {
		now := "is now"
		if o.dryRun {
			now = "would be made"
		}
		fmt.Fprintf(a.stdout, "%s was readable by others (mode %04o) and %s readable by you only (mode %04o): it holds values written out that may be secrets (%s).\n",
			path, was, now, was&^0o077, strings.Join(private, ", "))
	}
	if len(added) > 0 && !o.dryRun && !o.toProject {
		a.printApplies(added, true)
	}
	return nil
}

// named is a text about the server of that name.
type named struct{ server, text string }

// ofAdded returns the texts about the servers added.
func ofAdded(list []named, added []string) []string {
	var out []string
	for _, n := range list {
		if slices.Contains(added, n.server) {
			out = append(out, n.text)
		}
	}
	return out
}

// takenVars are the variable names an env value written out must not be
// made a reference to under its own name (ReferLiterals), lest two servers
// share one variable for different values: those the project settings
// file at path refers to, and those more than one of the servers to be
// imported uses (Claims).
func takenVars(path string, servers []hosts.Server) (map[string]bool, error) {
	taken := map[string]bool{}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	schema.Expand(string(data), func(n string) (string, bool) { taken[n] = true; return "", true })
	uses := map[string]int{}
	for _, s := range servers {
		if s.Skip != "" {
			continue
		}
		for _, n := range s.Claims() {
			if uses[n]++; uses[n] > 1 {
				taken[n] = true
			}
		}
	}
	return taken, nil
}

// privateValues lists the values written out (not ${VAR} references:
// env, headers, and what looks like a credential in a url or command line,
// see hosts.Literals) of the servers to be imported that must stay private: from
// a file only its owner can read, or looking like a token. It names them,
// never their values.
func privateValues(servers []hosts.Server) ([]named, error) {
	mode := map[string]fs.FileMode{}
	var out []named
	for _, s := range servers {
		if s.Skip != "" {
			continue
		}
		lits := s.Literals()
		if len(lits) == 0 {
			continue
		}
		m, ok := mode[s.Location.Path]
		if !ok {
			fi, err := os.Stat(s.Location.Path)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", s.Location.Path, err)
			}
			m = fi.Mode().Perm()
			mode[s.Location.Path] = m
		}
		for _, l := range lits {
			if l.Secret || m&0o077 == 0 {
				out = append(out, named{s.Name, fmt.Sprintf("server %s's %s", cell(s.Name), l)})
			}
		}
	}
	return out, nil
}

// keepPrivate makes the config file at path readable and writable by its
// owner only (the mode a new one gets) before values that must stay
// private are written to it, unless dry. It returns the mode it had when
// that was more open, else 0.
func keepPrivate(path string, dry bool) (fs.FileMode, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // created 0600
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	was := fi.Mode().Perm()
	if was&0o077 == 0 {
		return 0, nil
	}
	if !dry {
		if err := os.Chmod(path, was&^0o077); err != nil {
			return 0, fmt.Errorf("make %s readable by you only (it holds values written out, which may be secrets; run chmod 600 %s): %w", path, path, err)
		}
	}
	return was, nil
}

// projectSettings is the project settings file of dir: the one of the
// project dir is in, else a new one in dir.
func projectSettings(dir string) string {
	if path, ok := schema.FindProject(dir); ok {
		return path
	}
	return filepath.Join(dir, schema.ProjectFile)
}

// importProjectFile is the project settings file --to-project writes
// (projectSettings), never one in FreeCode's home.
func (a *app) importProjectFile(dir string) (string, error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return "", err
	}
	path := projectSettings(dir)
	if filepath.Dir(path) == filepath.Clean(home) {
		return "", fmt.Errorf("--to-project: %s is FreeCode's home, not a project; run the import in the project's directory", dir)
	}
	return path, nil
}

// skipUserNames skips the servers whose names the user config at path
// has: a name defined in both files runs neither copy.
func skipUserNames(v *schema.Validator, path string, servers []hosts.Server) error {
	return v.TryEdit(path, func(d *schema.Doc) error {
		for i := range servers {
			if s := &servers[i]; s.Skip == "" && d.HasServer(s.Name) {
				s.Skip = fmt.Sprintf("your user config %s has a server named %q; a name in both files runs neither (rename or remove one first)", path, s.Name)
			}
		}
		return nil
	})
}

// printImport shows each server under the file it came from: "+" with
// its type and command line or URL and notes, or "-" with why it is
// skipped. dir is the project directory the import runs for.
func (a *app) printImport(servers []hosts.Server, dir string) {
	width := 0
	for _, s := range servers {
		width = max(width, len(cell(s.Name)))
	}
	var at hosts.Location
	project := ""
	for i, s := range servers {
		if i == 0 || s.Location.Path != at.Path || s.Location.Scope != at.Scope || s.Project != project {
			at, project = s.Location, s.Project
			what := at.Host.Name + ", " + at.Scope
			switch {
			case at.Scope == "file":
				what = at.Host.Name + " format"
			case at.Scope == "project":
				what = at.Host.Name + ", this project's file"
			case project == dir:
				what = at.Host.Name + ", this project's"
			case project != "":
				what = at.Host.Name + ", project " + project + "'s"
			}
			fmt.Fprintf(a.stdout, "%s (%s):\n", cell(at.Path), cell(what))
		}
		name := cell(s.Name)
		pad := strings.Repeat(" ", width-len(name))
		if s.Skip != "" {
			fmt.Fprintf(a.stdout, "  - %s%s  skipped: %s\n", name, pad, termtext.Neutralize(s.Skip))
			continue
		}
		fmt.Fprintf(a.stdout, "  + %s%s  %-6s  %s\n", name, pad, s.Type, cell(s.Shown()))
		for _, n := range s.Notes {
			fmt.Fprintf(a.stdout, "      note: %s\n", termtext.Neutralize(n))
		}
	}
}

func (a *app) addJSONCmd() *cobra.Command {
	var disabled bool
	c := &cobra.Command{
		Use:   "add-json <name> <json>",
		Short: "Add a server given as JSON: FreeCode's entry, or Claude/Cursor style",
		Long: `Add one server given as JSON, in FreeCode's format:
  freecode mcp add-json fs '{"type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}'
or as Claude Code, Claude Desktop, Cursor and most server READMEs write it:
  freecode mcp add-json fs '{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {}}'
  freecode mcp add-json gh '{"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}'`,
		Args: exactArgs(2, "<name> and <json>"),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			s, err := hosts.FromJSON(name, []byte(args[1]))
			if err != nil {
				return fmt.Errorf("add-json %s: %w", name, err)
			}
			if disabled {
				s.Disabled = true
			}
			path, err := a.edit(c, "", func(d *schema.Doc) error { return d.AddServer(s.Fields()) })
			if err != nil {
				return err
			}
			state := ""
			if s.Disabled {
				state = "disabled "
			}
			fmt.Fprintf(a.stdout, "Added %s%s server %q to %s\n", state, s.Type, name, path)
			for _, n := range s.Notes {
				fmt.Fprintf(a.stdout, "note: %s\n", termtext.Neutralize(n))
			}
			a.printApplies([]string{name}, true)
			return nil
		},
	}
	c.Flags().BoolVar(&disabled, "disabled", false, "add the server disabled")
	return c
}
