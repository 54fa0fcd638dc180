package serve

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// TokenDir is where a FreeCode home keeps the OAuth tokens of remote
// servers (an auth.Store: 0700, files 0600).
func TokenDir(home string) string { return filepath.Join(home, "auth") }

// ProtocolCacheFile is where a FreeCode home remembers which protocol
// revision each server speaks (mcp.OpenProtocolCache: a 0600 file in a
// 0700 directory), shared by serve, the gateway and the one-shot
// commands, so that a server is asked once, not once per process.
func ProtocolCacheFile(home string) string { return filepath.Join(home, "cache", "protocols.json") }

// protocolCache is the home's protocol cache; without a home (a test's
// Core), one in memory.
func protocolCache(home string, log logr.Logger) *mcp.ProtocolCache {
	if home == "" {
		return mcp.NewProtocolCache()
	}
	return mcp.OpenProtocolCache(ProtocolCacheFile(home), log.WithName("protocols"))
}

// ManifestDir is where a FreeCode home keeps each server's manifest
// (mcp.ManifestStore: 0600 files in a 0700 directory), written after
// every connect by serve, the gateway and the one-shot commands, and read
// to advertise on-demand servers without starting them.
func ManifestDir(home string) string { return filepath.Join(home, "cache", "manifests") }

// manifestStore is the home's manifest store; without a home (a test's
// Core) none: on-demand servers are then started to be listed.
func manifestStore(home string, log logr.Logger) *mcp.ManifestStore {
	if home == "" {
		return nil
	}
	return mcp.OpenManifestStore(ManifestDir(home), log.WithName("manifests"))
}

// SignIn reads srv's sign-in from store, for the status: nil for a server
// FreeCode does not sign in to (a local one, one with an Authorization
// header of its own), or with no store. It makes no request and holds no
// token. A store it cannot read is a needs-login state that says why.
func SignIn(store *auth.Store, srv schema.Server) *wire.SignIn {
	if store == nil || !srv.SignsIn() {
		return nil
	}
	si, err := mcp.NewSignIn(controller.MCPSpec(srv), mcp.Options{Tokens: store})
	if err != nil {
		return &wire.SignIn{State: wire.SignInNeedsLogin, Reason: err.Error()}
	}
	defer si.Close()
	st, err := si.Status()
	if err != nil {
		return &wire.SignIn{State: wire.SignInNeedsLogin, Reason: err.Error()}
	}
	out := &wire.SignIn{Grant: string(st.Grant), Issuer: st.Issuer, Account: st.Account, Scopes: st.Scopes,
		Expiry: st.Expiry, Refreshable: st.Refreshable, Reason: st.Reason}
	switch st.State {
	case auth.StateSignedIn:
		out.State = wire.SignInSignedIn
	case auth.StateNeedsLogin:
		out.State = wire.SignInNeedsLogin
	default:
		out.State = wire.SignInNone
	}
	return out
}

// tokenDebounce is how long watchTokens waits for a burst of events (a
// write is a temporary file, its rename, and a directory sync) to settle.
const tokenDebounce = 30 * time.Millisecond

// watchTokens tells ctrl to look again whenever a file in the token store
// changes (a sign-in or sign-out from another terminal, a renewal), until
// ctx ends. An event only says "look again": the controller reads the
// store itself (controller.Options.SignIn), also at every poll, so a file
// system without events (NFS) only makes it slower. Without a watcher it
// logs why and returns at once.
func watchTokens(ctx context.Context, store *auth.Store, ctrl *controller.Controller, log logr.Logger) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error(err, "cannot watch the token store; sign-ins are noticed at the next poll")
		return
	}
	defer fw.Close()
	dir := filepath.Join(store.Dir(), "tokens")
	if err := fw.Add(dir); err != nil {
		log.Error(err, "cannot watch the token store; sign-ins are noticed at the next poll", "dir", dir)
		return
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			// A token file written (renamed into place) or removed;
			// not its lock or temporary file.
			if filepath.Ext(ev.Name) == ".json" {
				debounce.Reset(tokenDebounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				log.V(1).Info("watching the token store", "err", err.Error())
			}
			debounce.Reset(tokenDebounce)
		case <-debounce.C:
			ctrl.Recheck()
		}
	}
}
