package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// convertErrors is what a Conn that leaves tools out of its set can say
// about them; *mcp.Session implements it.
type convertErrors interface{ ConvertErrors() []error }

// Tools returns the tools server name has in the registry, sorted by id,
// with its phase and, while a session is connected, why tools of its list
// were left out and which of them its tools filter hides (Hidden). It returns an error wrapping ErrUnknownServer for a name
// that is neither configured nor known.
func (c *Controller) Tools(name string) (wire.ServerTools, error) {
	c.mu.Lock()
	st := c.servers[name]
	var conn Conn
	d, desired := c.desiredLocked(name)
	out := wire.ServerTools{Server: name, Tools: []wire.Tool{}}
	if st != nil {
		out.Phase, conn = st.phase, st.conn
	} else if desired {
		out.Phase = wire.PhasePending
	}
	c.mu.Unlock()
	if st == nil && !desired {
		return wire.ServerTools{}, fmt.Errorf("server %q: %w", name, ErrUnknownServer)
	}
	for _, t := range c.reg.SourceTools(name) {
		n := t.Name
		if n == "" {
			n = t.ID
		}
		out.Tools = append(out.Tools, wire.Tool{ID: t.ID, Name: n, Title: t.Title, Description: t.Description,
			ReadOnly: t.ReadOnly, Annotations: t.Annotations, InputSchema: t.InputSchema, Raw: t.Raw})
	}
	if ce, ok := conn.(convertErrors); ok {
		for _, err := range ce.ConvertErrors() {
			out.Warnings = append(out.Warnings, err.Error())
		}
	}
	if conn != nil {
		kept, hidden := FilterTools(d.Tools, conn.Tools())
		for _, w := range mcp.ToolWarnings(kept) {
			out.Warnings = append(out.Warnings, w.String())
		}
		out.Hidden = hidden
	}
	return out, nil
}

// FilterTools splits tools into those filter keeps, in their order, and
// those it hides, sorted by name with the rule that hides each. Tools are
// matched by the server's own name, never by id.
func FilterTools(filter schema.ToolFilter, tools []mcp.Tool) (kept []mcp.Tool, hidden []wire.HiddenTool) {
	if filter.IsZero() {
		return tools, nil
	}
	kept = make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if reason, ok := filter.Hides(t.Name); ok {
			hidden = append(hidden, wire.HiddenTool{Name: t.Name, Reason: reason})
			continue
		}
		kept = append(kept, t)
	}
	slices.SortFunc(hidden, func(a, b wire.HiddenTool) int { return strings.Compare(a.Name, b.Name) })
	return kept, hidden
}
