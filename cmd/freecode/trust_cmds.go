package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
)

// projectFile finds the project settings file for a trust command: in DIR
// if given, else from --project or the working directory.
func (a *app) projectFile(args []string) (string, error) {
	dir := a.projectFlag
	if len(args) == 1 {
		dir = args[0]
	}
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
	}
	p, ok := schema.FindProject(dir)
	if !ok {
		return "", fmt.Errorf("no %s in %s or above it in the repository", schema.ProjectFile, dir)
	}
	return p, nil
}

func (a *app) trustStore() (schema.TrustStore, error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return schema.TrustStore{}, err
	}
	return schema.TrustStore{Path: schema.TrustPath(home)}, nil
}

func (a *app) trustCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Review a project's MCP servers and permission rules and allow them to run",
		Long: `Show exactly what a project's .freecode/settings.json would run — commands,
urls, env and header keys, permission rules — and, once you confirm, record a
hash of that definition in your home (never in the repository). Project
servers never start, and project "allow" rules never apply, until then; any
later change to the definition needs a new trust.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := a.projectFile(args)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read project settings: %w", err)
			}
			v, err := a.schema()
			if err != nil {
				return err
			}
			cfg, err := v.Parse(path, data, schema.LoadOptions{NoExpand: true, Source: schema.SourceProjectPrefix + schema.ProjectDir(path)})
			if err != nil {
				return fmt.Errorf("%s is not valid, so it cannot be trusted:\n%w", path, err)
			}
			hash, err := schema.DefinitionHash(data)
			if err != nil {
				return err
			}
			store, err := a.trustStore()
			if err != nil {
				return err
			}
			recs, err := store.Load()
			if err != nil {
				return err
			}
			if rec, ok := recs[path]; ok && rec.Hash == hash {
				fmt.Fprintf(a.stdout, "%s is already trusted (since %s).\n", termtext.Neutralize(path), rec.TrustedAt.Format(time.DateTime))
				return nil
			}
			// More than anyone can review is refused, with or without --yes.
			if err := schema.CheckProjectSize(path, cfg); err != nil {
				return fmt.Errorf("%w\nIt would run:\n%s", err, strings.TrimSuffix(schema.Summary(cfg), "\n"))
			}
			fmt.Fprintf(a.stdout, "Project %s asks to run:\n", termtext.Neutralize(path))
			// Describe quotes what does not print as it reads and cuts
			// long values; Summary repeats, one short line a server, what
			// runs, so that it is what the question follows.
			desc := schema.Describe(cfg)
			if desc == "" {
				desc = "  (no servers and no permission rules)\n"
			} else {
				desc += "In short:\n" + schema.Summary(cfg)
			}
			fmt.Fprint(a.stdout, desc)
			if !yes {
				f, ok := a.stdin.(*os.File)
				if !ok || !isTerminal(f) {
					return fmt.Errorf("not trusted: read the above, then rerun with --yes to trust it (there is no terminal to ask on)")
				}
				fmt.Fprintf(a.stdout, "Trust this project definition (%s)? [y/N] ", trustCounts(cfg))
				line, _ := bufio.NewReader(f).ReadString('\n')
				if s := strings.ToLower(strings.TrimSpace(line)); s != "y" && s != "yes" {
					a.audit(c.Context(), audit.Record{Kind: audit.KindTrust, Project: path, Definition: hash, Status: "refused"})
					return fmt.Errorf("not trusted")
				}
			}
			var names []string
			for _, s := range cfg.MCP.Servers {
				names = append(names, s.Name)
			}
			if err := store.Trust(c.Context(), path, schema.TrustRecord{Hash: hash, TrustedAt: time.Now().UTC(), Servers: names}); err != nil {
				return err
			}
			a.audit(c.Context(), audit.Record{Kind: audit.KindTrust, Project: path, Definition: hash, Status: audit.StatusOK})
			fmt.Fprintf(a.stdout, "Trusted %s (definition %s) in %s.\nAny change to its servers or rules makes it untrusted again.\n", termtext.Neutralize(path), hash[:12], store.Path)
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "trust without asking (after reading what it runs)")
	return c
}

func (a *app) untrustCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "untrust [DIR]",
		Short: "Forget the trust given to a project's MCP definition; its servers stop",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := a.projectFile(args)
			if err != nil {
				return err
			}
			store, err := a.trustStore()
			if err != nil {
				return err
			}
			found, err := store.Untrust(c.Context(), path)
			if err != nil {
				return err
			}
			if !found {
				fmt.Fprintf(a.stdout, "%s was not trusted.\n", termtext.Neutralize(path))
				return nil
			}
			a.audit(c.Context(), audit.Record{Kind: audit.KindUntrust, Project: path, Status: audit.StatusOK})
			fmt.Fprintf(a.stdout, "Untrusted %s; its servers no longer run.\n", termtext.Neutralize(path))
			return nil
		},
	}
}

// trustCounts says how many servers and permission rules a project
// definition holds: "2 servers, 1 permission rule".
func trustCounts(cfg *schema.Config) string {
	p := cfg.Permission
	servers, rules := len(cfg.MCP.Servers), len(p.Allow)+len(p.Ask)+len(p.Deny)
	return fmt.Sprintf("%d server%s, %d permission rule%s", servers, plural(servers), rules, plural(rules))
}
