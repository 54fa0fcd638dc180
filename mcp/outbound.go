package mcp

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// outbound sends the session's own requests (lists, calls, reads) over its
// client: it numbers them (seq), gives them the protocol's _meta and
// headers, bounds the lists, follows the progress of the calls in flight
// (progress) and tells the server of the requests abandoned. What to do
// about a failure (the process's exit, a lost connection) is the session's.
//
// client and proto are set by the handshake, on Connect's goroutine, and
// read-only once Connect returned; the other fields are set by
// newOutbound.
type outbound struct {
	srv        Spec
	clientInfo mcpgo.Implementation // Options.ClientName and ClientVersion
	log        logr.Logger          // the session's
	mask       *urlMask
	limits     *limitTrip
	// ctx and life are the session's: a cancellation notice is background
	// work within ctx, which the session's end waits for.
	ctx  context.Context
	life *lifetime
	// tools are the listed tools, whose x-mcp-header annotations a
	// tools/call over HTTP follows; in declares the roots.
	tools *toolList
	in    *inbound
	// lost is told of each failure of a request that may mean the
	// connection is gone (Session.connectionLost).
	lost func(error)

	client *client.Client
	proto  string // the protocol revision client speaks

	seq      atomic.Uint64 // numbers the requests (and progress tokens)
	progress progressWatches
	// fresh says which lists are still fresh (2026-07-28 caching hints);
	// listPages sets it.
	fresh listFreshness
	// meta is requestMeta's capabilities and client info, encoded once a
	// client is connected: the same on every request of a session, so
	// not marshalled by reflection on each.
	meta atomic.Pointer[encodedMeta]
}

// encodedMeta is the part of a 2026-07-28 request's _meta that is the
// same on every request of the session, at version.
type encodedMeta struct {
	version    string
	caps, info json.RawMessage
}

func newOutbound(ctx context.Context, srv Spec, opts Options, log logr.Logger, mask *urlMask, limits *limitTrip, life *lifetime,
	tools *toolList, in *inbound, lost func(error)) *outbound {
	return &outbound{srv: srv, clientInfo: mcpgo.Implementation{Name: opts.ClientName, Version: opts.ClientVersion},
		log: log, mask: mask, limits: limits, ctx: ctx, life: life, tools: tools, in: in, lost: lost}
}
