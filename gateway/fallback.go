package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

// fallback is an attached backend that, once its serve is gone, goes on
// with servers of its own (start), for the rest of the gateway's life: most
// hosts do not start a server again that went away, so a serve stopped or
// restarted must not cut its hosts off. Calls in flight to the old serve
// fail; the host's next list is the new backend's, with one list_changed
// if it differs.
type fallback struct {
	// start runs the servers in this process until ctx ends (the
	// gateway's) and returns that backend; gone reports whether no serve
	// runs for the home any more. Set before use, then only read.
	start func(ctx context.Context) (backend, error)
	gone  func() bool
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

// Resubscribing to a serve that still runs: first after
// fallbackRetry, doubling up to maxFallbackRetry.
const (
	fallbackRetry    = 100 * time.Millisecond
	maxFallbackRetry = 5 * time.Second
)

// watch watches the current backend. When serve's event stream ends and
// serve still runs (it restarted, or its connections were full), it
// subscribes again, after a growing delay; when no serve runs any more it
// starts the servers here, waits for their first starts (StartupWait at
// most), and only then makes them the backend, pokes, and watches them:
// a list read meanwhile is never that of servers not yet started.
func (f *fallback) watch(ctx context.Context, changed func()) error {
	delay := fallbackRetry
	for {
		err := f.get().watch(ctx, changed)
		if ctx.Err() != nil {
			return nil
		}
		f.mu.Lock()
		own := f.own
		f.mu.Unlock()
		if own || err == nil {
			return err
		}
		if !f.gone() {
			f.log.V(1).Info("freecode serve's event stream ended; subscribing again", "reason", err.Error(), "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			delay = min(2*delay, maxFallbackRetry)
			changed() // what changed meanwhile is read again
			continue
		}
		f.log.Info("freecode serve went away; running the servers in this process", "reason", err.Error())
		nb, serr := f.start(ctx)
		if serr != nil {
			return fmt.Errorf("%w; and the servers could not be started here: %w", err, serr)
		}
		sctx, cancel := context.WithTimeout(ctx, StartupWait)
		nb.settle(sctx)
		cancel()
		f.mu.Lock()
		f.cur, f.own = nb, true
		f.mu.Unlock()
		changed()
	}
}
