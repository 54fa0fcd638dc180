package mcp

import (
	"encoding/json"
	"math"
	"sync"
	"time"
)

// maxListTTL bounds how long a list stays fresh whatever ttlMs a server
// sends: a list_changed still refreshes it sooner, but a server that
// announces nothing (or misses a notice) is looked at again after this.
const maxListTTL = time.Hour

// listTTL is the freshness a list page's caching hints (2026-07-28:
// ttlMs, cacheScope) allow: ttlMs, bounded by maxListTTL, when cacheScope
// is "public" or "private" (either lets this client, the only user of the
// session, keep it); 0 — stale at once, which is also what a page without
// hints, with a negative, fractional-overflowing or non-numeric ttlMs, or
// another cacheScope gets.
func listTTL(page map[string]json.RawMessage) time.Duration {
	var scope string
	if json.Unmarshal(page["cacheScope"], &scope) != nil || (scope != "public" && scope != "private") {
		return 0
	}
	var ms float64
	if json.Unmarshal(page["ttlMs"], &ms) != nil || math.IsNaN(ms) || ms <= 0 {
		return 0
	}
	if ms >= float64(maxListTTL/time.Millisecond) {
		return maxListTTL
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// listFreshness says until when each list (by step: tools/list,
// resources/list, ...) of a session is fresh, as its last listing's
// caching hints allow. A notice of a change (list_changed) lists again
// whatever the freshness; the acknowledgement of a subscriptions/listen
// stream, which says only that changes may have been missed, does not
// while the list is fresh (see Session.refresh). Safe for concurrent use.
type listFreshness struct {
	mu    sync.Mutex // guards until
	until map[string]time.Time
}

// set records that step was listed, fresh until until (not after now:
// stale at once).
func (f *listFreshness) set(step string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.until == nil {
		f.until = map[string]time.Time{}
	}
	f.until[step] = until
}

// fresh reports whether step's last listing is still fresh at now.
func (f *listFreshness) fresh(step string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return now.Before(f.until[step])
}
