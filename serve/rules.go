package serve

import (
	"strings"
	"sync"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
)

// rulesHolder keeps what serve takes from the last valid configuration
// besides its servers: the permission rules and call limits for the
// orchestrator, which reads them on every batch, and why the project is
// ignored, for the status. Before the first configuration is applied the
// limits are the defaults.
type rulesHolder struct {
	// phrase says why cfg's project is ignored (Options.ProjectError);
	// nil: the reason schema gives. Set before use, then only read.
	phrase func(cfg *schema.Config) string
	// outputs is where results over their cap are kept
	// (orchestrator.Limits.OutputDir). Set before use, then only read.
	outputs string

	mu         sync.Mutex // guards rules, lim and projectErr
	rules      orchestrator.Rules
	lim        *orchestrator.Limits
	projectErr string
}

func (r *rulesHolder) get() orchestrator.Rules {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rules
}

func (r *rulesHolder) limits() orchestrator.Limits {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lim == nil {
		return CallLimits(schema.Empty(""), r.outputs)
	}
	return *r.lim
}

func (r *rulesHolder) set(cfg *schema.Config) {
	lim := CallLimits(cfg, r.outputs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rules = orchestrator.Rules(cfg.Permission)
	r.lim = &lim
	r.projectErr = r.projectReason(cfg)
}

// DefsPolicy is the deferral policy cfg asks for: mcp.toolBudget and the
// alwaysLoad servers; never deferring while a rule denies tool_search,
// since nothing deferred could be loaded then.
func DefsPolicy(cfg *schema.Config) defs.Policy {
	search := registry.Tool{ID: defs.SearchToolID, Source: registry.SourceBuiltin, ReadOnly: true}
	if orchestrator.Decide(orchestrator.Rules(cfg.Permission), search).Action == orchestrator.Deny {
		return defs.Policy{}
	}
	return defs.Policy{Budget: cfg.MCP.ToolBudget, AlwaysLoad: cfg.MCP.AlwaysLoaded(), Project: ProjectServers(cfg)}
}

// ProjectServers names the servers of cfg that a project's settings
// define.
func ProjectServers(cfg *schema.Config) []string {
	var out []string
	for _, s := range cfg.MCP.Servers {
		if strings.HasPrefix(s.Source, schema.SourceProjectPrefix) {
			out = append(out, s.Name)
		}
	}
	return out
}

func (r *rulesHolder) projectReason(cfg *schema.Config) string {
	if r.phrase != nil {
		return r.phrase(cfg)
	}
	if cfg.Project == nil || cfg.Project.Trust.Err == nil {
		return ""
	}
	return cfg.Project.Trust.String()
}

func (r *rulesHolder) projectError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.projectErr
}

// CallLimits are the orchestrator's limits for cfg, whose settings schema
// has resolved: mcp.maxArgumentBytes, each running server's settings for
// its own tools and the mcp section's for the others (the built-ins), and
// outputs as the directory of results over their cap. A held server has
// no tools, and its entry may share its name with one that runs.
func CallLimits(cfg *schema.Config, outputs string) orchestrator.Limits {
	lim := orchestrator.Limits{MaxArgumentBytes: cfg.MCP.MaxArgumentBytes, OutputDir: outputs,
		Default: sourceLimits(cfg.MCP.Defaults), Sources: map[string]orchestrator.SourceLimits{}}
	for _, s := range cfg.MCP.Servers {
		if s.Hold == nil {
			lim.Sources[s.Name] = sourceLimits(s.Settings)
		}
	}
	return lim
}

func sourceLimits(s schema.Settings) orchestrator.SourceLimits {
	return orchestrator.SourceLimits{CallTimeout: s.CallTimeout, MaxOutputTokens: s.MaxOutputTokens, OwnOutputCap: s.OwnOutputCap}
}
