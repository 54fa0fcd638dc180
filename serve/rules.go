package serve

import (
	"sync"
	"time"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
)

// rulesHolder keeps what serve takes from the last valid configuration
// besides its servers: the permission rules and call limits for the
// orchestrator, which reads them on every batch, the deferral policy for
// the definitions, and why the project is ignored, for the status. Before
// the first configuration is applied the limits and the policy are the
// defaults.
type rulesHolder struct {
	// phrase says why cfg's project is ignored (Options.ProjectError);
	// nil: the reason schema gives. Set before use, then only read.
	phrase func(cfg *schema.Config) string
	// outputs is where results over their cap are kept
	// (orchestrator.Limits.OutputDir). Set before use, then only read.
	outputs string

	mu         sync.Mutex // guards rules, lim, policy and projectErr
	rules      orchestrator.Rules
	lim        *orchestrator.Limits
	policy     *defs.Policy
	projectErr string
}

func (r *rulesHolder) defsPolicy() defs.Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.policy == nil {
		return defs.Policy{Budget: schema.DefaultToolBudget}
	}
	return *r.policy
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
		return orchestrator.Limits{CallTimeout: schema.DefaultCallTimeout,
			OutputDir: r.outputs, MaxOutputTokens: schema.DefaultMaxOutputTokens}
	}
	return *r.lim
}

func (r *rulesHolder) set(cfg *schema.Config) {
	lim := callLimits(cfg, r.outputs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rules = orchestrator.Rules(cfg.Permission)
	r.lim = &lim
	r.policy = &defs.Policy{Budget: cfg.MCP.ToolBudget, AlwaysLoad: cfg.MCP.AlwaysLoaded()}
	if searchDenied(cfg) {
		// Deferred tools could never be loaded: advertise them all.
		r.policy.Budget = 0
	}
	r.projectErr = r.projectReason(cfg)
}

// searchDenied reports whether cfg's rules deny tool_search.
func searchDenied(cfg *schema.Config) bool {
	search := registry.Tool{ID: defs.SearchToolID, Source: registry.SourceBuiltin, ReadOnly: true}
	return orchestrator.Decide(orchestrator.Rules(cfg.Permission), search).Action == orchestrator.Deny
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

// callLimits are the orchestrator's limits for cfg: mcp.maxArgumentBytes,
// mcp.callTimeout and mcp.maxOutputTokens for every tool, each server's
// callTimeout and maxOutputTokens for its own, and outputs as the
// directory of results over their cap.
func callLimits(cfg *schema.Config, outputs string) orchestrator.Limits {
	lim := orchestrator.Limits{MaxArgumentBytes: cfg.MCP.MaxArgumentBytes, CallTimeout: cfg.MCP.CallTimeoutOf(schema.Server{}),
		OutputDir: outputs, MaxOutputTokens: cfg.MCP.MaxOutputTokensOf(schema.Server{})}
	for _, s := range cfg.MCP.Servers {
		if s.MaxOutputTokens > 0 {
			if lim.SourceMaxOutputTokens == nil {
				lim.SourceMaxOutputTokens = map[string]int{}
			}
			lim.SourceMaxOutputTokens[s.Name] = s.MaxOutputTokens
		}
		if s.CallTimeout > 0 {
			if lim.SourceCallTimeouts == nil {
				lim.SourceCallTimeouts = map[string]time.Duration{}
			}
			lim.SourceCallTimeouts[s.Name] = s.CallTimeout
		}
	}
	return lim
}
