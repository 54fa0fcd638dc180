package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/jsonschema"
)

// toolList is a session's tools as the server last listed them: the
// elements as sent, the converted tools and why some were left out (mu
// guards those three), the signals of a list_changed in (relist) and of a
// changed set out (changed), and the warnings already logged. Listing is
// the session's (it needs the connection); converting and keeping is this.
type toolList struct {
	server  string       // the server's name, for the converted tools
	schemas *SchemaCache // Options.Schemas (nil shares nothing)
	log     logr.Logger  // the session's

	relist  chan struct{} // cap 1: coalesced "list tools again"
	changed chan struct{} // cap 1: Session.ToolsChanged
	// noticed says that a pending relist follows a notice of a change
	// (list_changed), which lists again even a fresh list; without it,
	// a relist (after a listen stream's acknowledgement) waits for the
	// list to go stale.
	noticed atomic.Bool

	// logged holds the tool warnings already logged (ToolWarning.String),
	// so that each is logged once per session. Only set uses it, and set
	// runs on one goroutine at a time: Connect's, then the owner's.
	logged map[string]bool

	mu       sync.Mutex // guards raw, tools and convErrs
	raw      []json.RawMessage
	tools    []Tool
	convErrs []error
}

func newToolList(server string, schemas *SchemaCache, log logr.Logger) *toolList {
	return &toolList{server: server, schemas: schemas, log: log,
		relist: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
}

// listChanged asks the owner goroutine to list the tools again, fresh or
// not; it never blocks (a re-list already pending covers this one).
func (t *toolList) listChanged() {
	t.noticed.Store(true)
	signal(t.relist)
}

// mayHaveChanged asks the owner goroutine to list the tools again unless
// the list is still fresh (see listFreshness); it never blocks.
func (t *toolList) mayHaveChanged() { signal(t.relist) }

// set converts raws and makes them the current set; it reports whether
// the converted tools differ from the previous set.
func (t *toolList) set(raws []json.RawMessage) bool {
	tools, errs := t.schemas.ConvertTools(t.server, raws)
	for _, err := range errs {
		t.log.Info("tool skipped", "err", err.Error())
	}
	t.logWarnings(tools)
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := !slices.EqualFunc(t.tools, tools, sameTool)
	t.raw, t.tools, t.convErrs = raws, tools, errs
	return changed
}

// maxLoggedWarnings bounds the tool warnings one session logs; past it,
// one line says that further ones are not logged.
const maxLoggedWarnings = 100

// logWarnings logs, once per session, each warning of tools not logged
// before (see logged).
func (t *toolList) logWarnings(tools []Tool) {
	for _, w := range ToolWarnings(tools) {
		text := w.String()
		if t.logged[text] {
			continue
		}
		if len(t.logged) == maxLoggedWarnings {
			t.log.Info("more tools kept with input schema references not followed; not logged", "logged", maxLoggedWarnings)
			t.logged[text] = true // over the bound: nothing more is logged
			return
		}
		if len(t.logged) > maxLoggedWarnings {
			return
		}
		if t.logged == nil {
			t.logged = map[string]bool{}
		}
		t.logged[text] = true
		t.log.Info("tool kept with an input schema reference not followed", "warning", text)
	}
}

// sameTool compares everything a user or model sees of a tool.
func sameTool(a, b Tool) bool {
	return a.ID == b.ID && a.Server == b.Server && a.Name == b.Name && a.Title == b.Title &&
		a.Description == b.Description && a.ReadOnly == b.ReadOnly &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.Annotations, b.Annotations) &&
		slices.EqualFunc(a.Warnings, b.Warnings, func(x, y jsonschema.Warning) bool { return x.String() == y.String() })
}

// current is the converted tool set (Session.Tools), the caller's.
func (t *toolList) current() []Tool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.tools)
}

// convertErrors is why tools of the set were left out, the caller's.
func (t *toolList) convertErrors() []error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.convErrs)
}

// warnings are the warnings of the set (ToolWarnings).
func (t *toolList) warnings() []ToolWarning {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ToolWarnings(t.tools)
}

// raws are the set's elements as the server sent them, the caller's.
func (t *toolList) raws() []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.raw)
}

// mcpgoTool is the listed tool name as mcp-go models it, with its input
// schema as sent; nil if there is none.
func (t *toolList) mcpgoTool(name string) *mcpgo.Tool {
	for _, raw := range t.raws() {
		tool, ok := decodeMCPGoTool(raw)
		if ok && tool.Name == name {
			return tool
		}
	}
	return nil
}
