package controller

import (
	"slices"
	"strings"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// convertErrors is what a Conn that leaves tools out of its set can say
// about them; *mcp.Session implements it.
type convertErrors interface{ ConvertErrors() []error }

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
