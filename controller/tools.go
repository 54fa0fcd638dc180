package controller

import (
	"fmt"

	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/mcp"
)

// convertErrors is what a Conn that leaves tools out of its set can say
// about them; *mcp.Session implements it.
type convertErrors interface{ ConvertErrors() []error }

// Tools returns the tools server name has in the registry, sorted by id,
// with its phase and, while a session is connected, why tools of its list
// were left out. It returns an error wrapping ErrUnknownServer for a name
// that is neither configured nor known.
func (c *Controller) Tools(name string) (wire.ServerTools, error) {
	c.mu.Lock()
	st := c.servers[name]
	_, desired := c.desiredLocked(name)
	var conn Conn
	out := wire.ServerTools{Server: name, Tools: []wire.Tool{}}
	if st != nil {
		out.Phase, conn = st.phase, st.conn
	} else if desired {
		out.Phase = PhasePending
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
			ReadOnly: t.ReadOnly, Annotations: t.Annotations, InputSchema: t.InputSchema})
	}
	if ce, ok := conn.(convertErrors); ok {
		for _, err := range ce.ConvertErrors() {
			out.Warnings = append(out.Warnings, err.Error())
		}
	}
	if conn != nil {
		for _, w := range mcp.ToolWarnings(conn.Tools()) {
			out.Warnings = append(out.Warnings, w.String())
		}
	}
	return out, nil
}
