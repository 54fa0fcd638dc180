package mcp

import (
	"context"
	"net/url"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Roots are the directories a server may work in, when its Spec lists
// them (Spec.Roots). Only then does the session declare the roots
// capability and answer roots/list, with a file:// URI per directory: a
// roots-aware server such as server-filesystem replaces its command-line
// directories with them, so a session that declared roots it has not been
// given would take those away.
//
// The capability says listChanged: false. Roots come from the server's
// configuration, and a change of it is a change of spec, which restarts
// the server: the new session answers with the new roots, and no session
// ever sees its roots change.

// rootsHandler answers roots/list with a session's roots.
type rootsHandler struct{ roots []mcpgo.Root }

func (h rootsHandler) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	return &mcpgo.ListRootsResult{Roots: h.roots}, nil
}

// fileURI is the file:// URI of the absolute path p.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// roots returns the client option that answers roots/list and the
// capability to declare, or nil and nil when the spec lists no roots.
func (in *inbound) roots() (client.ClientOption, *struct {
	ListChanged bool `json:"listChanged,omitempty"`
}) {
	if len(in.srv.Roots) == 0 {
		return nil, nil
	}
	return client.WithRootsHandler(rootsHandler{roots: in.rootList()}), &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}
}

// rootList is the answer to roots/list: a file:// URI per directory of
// Spec.Roots (none when it lists none).
func (in *inbound) rootList() []mcpgo.Root {
	roots := make([]mcpgo.Root, 0, len(in.srv.Roots))
	for _, dir := range in.srv.Roots {
		roots = append(roots, mcpgo.Root{URI: fileURI(dir), Name: filepath.Base(dir)})
	}
	return roots
}
