package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
)

// fallback is an attached backend that, once its serve is gone, goes on
// with servers of its own (start), for the rest of the gateway's life: most
// hosts do not start a server again that went away, so a serve stopped or
// restarted must not cut its hosts off. Calls in flight to the old serve
// fail; the host's next list is the new backend's, with one list_changed
// if it differs.
type fallback struct {
	// start runs the servers in this process until ctx ends (the
	// gateway's) and returns that backend. Set before use, then only read.
	start func(ctx context.Context) (backend, error)
	log   logr.Logger

	mu  sync.Mutex // guards cur and own
	cur backend
	own bool // cur is start's: there is nothing left to fall back to
}

func (f *fallback) get() backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

func (f *fallback) list(ctx context.Context) ([]defs.Def, map[string]toolMeta, error) {
	return f.get().list(ctx)
}

func (f *fallback) call(ctx context.Context, id string, args json.RawMessage, progress func(registry.Progress)) (registry.Result, error) {
	return f.get().call(ctx, id, args, progress)
}

func (f *fallback) features(ctx context.Context) (features, error) { return f.get().features(ctx) }

func (f *fallback) read(ctx context.Context, server, uri string) (wire.ResourceRead, error) {
	return f.get().read(ctx, server, uri)
}

func (f *fallback) getPrompt(ctx context.Context, server, name string, args map[string]string) (wire.PromptResult, error) {
	return f.get().getPrompt(ctx, server, name, args)
}

func (f *fallback) settle(ctx context.Context) { f.get().settle(ctx) }

// watch watches the current backend; when the attached serve goes away it
// starts the servers here, waits for their first starts (StartupWait at
// most), pokes, and watches them instead.
func (f *fallback) watch(ctx context.Context, changed func()) error {
	for {
		be := f.get()
		err := be.watch(ctx, changed)
		if ctx.Err() != nil {
			return nil
		}
		f.mu.Lock()
		own := f.own
		f.mu.Unlock()
		if own || err == nil {
			return err
		}
		f.log.Info("freecode serve went away; running the servers in this process", "reason", err.Error())
		nb, serr := f.start(ctx)
		if serr != nil {
			return fmt.Errorf("%w; and the servers could not be started here: %w", err, serr)
		}
		f.mu.Lock()
		f.cur, f.own = nb, true
		f.mu.Unlock()
		sctx, cancel := context.WithTimeout(ctx, StartupWait)
		nb.settle(sctx)
		cancel()
		changed()
	}
}
