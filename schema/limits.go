package schema

import "fmt"

// Default limits of a server, used where neither the server's "limits" nor
// the file's "mcp.limits" sets one.
//
// DefaultMaxMessageBytes bounds one JSON-RPC message: a local server's
// stdout line, a remote server's JSON body or SSE event. Real servers'
// largest messages are tools/list pages and tool results; a page of 1000
// small tools is about 0.5 MiB, so 16 MiB leaves room for results that
// embed files while a hostile server costs a few tens of MiB at most.
//
// DefaultMaxListItems bounds the tools of one tools/list over all its
// pages: hosted servers and gateways list hundreds, and a small tool held
// costs about 1 KiB (raw and converted; 20000 of the test server's cost
// 17-20 MiB). DefaultMaxListPages bounds its pages, so that a server cannot
// keep a list going with tiny pages and fresh cursors, and
// DefaultMaxListBytes the bytes of all pages together, which the other two
// do not bound (every page may carry one huge tool): what a server's tools
// hold stays within about twice that.
const (
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxListItems    = 20000
	DefaultMaxListPages    = 1000
	DefaultMaxListBytes    = 32 << 20
)

// Bounds of the limits a config may set (config.cue has the same).
const (
	MinMaxMessageBytes = 64 << 10
	MaxMaxMessageBytes = 1 << 30
	MaxMaxListItems    = 1000000
	MaxMaxListPages    = 100000
	MinMaxListBytes    = 64 << 10
	MaxMaxListBytes    = 4 << 30
)

// Limits bound what one server can make FreeCode buffer. A server that goes
// over one has its session ended with an error naming the limit. Zero
// fields mean the defaults (see WithDefaults).
type Limits struct {
	// MaxMessageBytes bounds one JSON-RPC message in bytes.
	MaxMessageBytes int64 `json:"maxMessageBytes,omitempty"`
	// MaxListItems bounds the items of one list (tools/list, resources/list,
	// resources/templates/list, prompts/list, each on its own), over all its
	// pages.
	MaxListItems int `json:"maxListItems,omitempty"`
	// MaxListPages bounds the pages of one list.
	MaxListPages int `json:"maxListPages,omitempty"`
	// MaxListBytes bounds the bytes of one list, over all its pages.
	MaxListBytes int64 `json:"maxListBytes,omitempty"`
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	return l.over(Limits{DefaultMaxMessageBytes, DefaultMaxListItems, DefaultMaxListPages, DefaultMaxListBytes})
}

// over returns l with its zero fields taken from base.
func (l Limits) over(base Limits) Limits {
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = base.MaxMessageBytes
	}
	if l.MaxListItems == 0 {
		l.MaxListItems = base.MaxListItems
	}
	if l.MaxListPages == 0 {
		l.MaxListPages = base.MaxListPages
	}
	if l.MaxListBytes == 0 {
		l.MaxListBytes = base.MaxListBytes
	}
	return l
}

// rawLimits is a "limits" object as written; nil fields are absent.
type rawLimits struct {
	MaxMessageBytes *int64 `json:"maxMessageBytes"`
	MaxListItems    *int   `json:"maxListItems"`
	MaxListPages    *int   `json:"maxListPages"`
	MaxListBytes    *int64 `json:"maxListBytes"`
}

// resolve returns the limits r sets, with the others taken from base.
func (r *rawLimits) resolve(base Limits) Limits {
	if r == nil {
		return base
	}
	l := base
	if r.MaxMessageBytes != nil {
		l.MaxMessageBytes = *r.MaxMessageBytes
	}
	if r.MaxListItems != nil {
		l.MaxListItems = *r.MaxListItems
	}
	if r.MaxListPages != nil {
		l.MaxListPages = *r.MaxListPages
	}
	if r.MaxListBytes != nil {
		l.MaxListBytes = *r.MaxListBytes
	}
	return l
}

// limitMessage explains a bad value of the limits field name.
func limitMessage(name string) string {
	switch name {
	case "maxMessageBytes":
		return fmt.Sprintf("maxMessageBytes must be a whole number of bytes from %d (64 KiB) to %d (1 GiB)", MinMaxMessageBytes, MaxMaxMessageBytes)
	case "maxListItems":
		return fmt.Sprintf("maxListItems must be a whole number from 1 to %d", MaxMaxListItems)
	case "maxListPages":
		return fmt.Sprintf("maxListPages must be a whole number from 1 to %d", MaxMaxListPages)
	case "maxListBytes":
		return fmt.Sprintf("maxListBytes must be a whole number of bytes from %d (64 KiB) to %d (4 GiB)", MinMaxListBytes, MaxMaxListBytes)
	}
	return `limits must be an object with any of "maxMessageBytes", "maxListItems", "maxListPages" and "maxListBytes"`
}

// limitsField reports whether path points into a "limits" object (the
// file's mcp.limits or a server's limits), the field of it the path names
// ("" for the object itself), and the path up to that field.
func limitsField(path []string) (name string, fieldPath []string, ok bool) {
	n := 0
	switch {
	case len(path) >= 2 && path[0] == "mcp" && path[1] == "limits":
		n = 2
	case len(path) >= 4 && path[0] == "mcp" && path[1] == "servers" && path[3] == "limits":
		n = 4
	default:
		return "", nil, false
	}
	if len(path) == n {
		return "", path, true
	}
	return path[n], path[:n+1], true
}
