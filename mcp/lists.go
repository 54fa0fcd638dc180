package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// listTools issues tools/list itself, page by page, to keep each tool's raw
// JSON: mcp-go's own types drop parts of input schemas. It counts what it
// received in prog and ends the session (a *LimitError) when the list goes
// over the server's MaxListPages, MaxListItems or MaxListBytes.
func (o *outbound) listTools(ctx context.Context, prog *listProgress) ([]json.RawMessage, error) {
	raws, err := o.listPages(ctx, stepToolsList, "tools", prog)
	if err != nil {
		return nil, err
	}
	return o.validHeaderTools(raws), nil
}

// listPages issues step, a list method (tools/list, resources/list,
// resources/templates/list, prompts/list), page by page and returns the
// elements of key of every page as the server sent them. It counts what it
// received in prog and ends the session (a *LimitError naming step) when
// the list goes over the server's MaxListPages, MaxListItems or
// MaxListBytes: each list is bounded on its own, as tools/list is.
func (o *outbound) listPages(ctx context.Context, step, key string, prog *listProgress) ([]json.RawMessage, error) {
	lim := o.srv.Limits
	var raws []json.RawMessage
	var size int64 // bytes of the results so far, cursors included
	seen := map[string]bool{}
	cursor := ""
	// The list is fresh as long as its least fresh page (2026-07-28; a
	// page without hints is stale at once).
	var until time.Time
	idPrefix := strings.ReplaceAll(step, "/", "-")
	for {
		if prog.pages >= lim.MaxListPages {
			return nil, o.listLimit(step, limitListPages, int64(lim.MaxListPages))
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		resp, err := o.send(ctx, o.newRequest(idPrefix, step, params, nil))
		if err != nil {
			return nil, transport.NewError(err)
		}
		if resp.Error != nil {
			return nil, resp.Error.AsError()
		}
		if size += int64(len(resp.Result)); size > lim.MaxListBytes {
			return nil, o.listLimit(step, limitListBytes, lim.MaxListBytes)
		}
		received := time.Now()
		var page map[string]json.RawMessage
		if err := json.Unmarshal(resp.Result, &page); err != nil {
			return nil, fmt.Errorf("decode %s result: %w", step, err)
		}
		if pageUntil := received.Add(listTTL(page)); until.IsZero() || pageUntil.Before(until) {
			until = pageUntil
		}
		var items []json.RawMessage
		if raw, ok := page[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("decode %s result: %s: %w", step, key, err)
			}
		}
		var next string
		if raw, ok := page["nextCursor"]; ok {
			if err := json.Unmarshal(raw, &next); err != nil {
				return nil, fmt.Errorf("decode %s result: nextCursor: %w", step, err)
			}
		}
		prog.pages++
		if len(raws)+len(items) > lim.MaxListItems {
			return nil, o.listLimit(step, limitListItems, int64(lim.MaxListItems))
		}
		raws = append(raws, items...)
		prog.items = len(raws)
		if next == "" {
			if o.modern() {
				o.fresh.set(step, until)
			}
			return raws, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: server repeated cursor %q", step, next)
		}
		seen[next] = true
		cursor = next
	}
}

// listLimit ends the session because the list step went over limit.
func (o *outbound) listLimit(step, limit string, value int64) error {
	return o.limits.over(step, limit, value)
}

// listNoun is what the items of the list step are called in messages.
func listNoun(step string) string {
	switch step {
	case stepResourcesList:
		return "resources"
	case stepTemplatesList:
		return "resource templates"
	case stepPromptsList:
		return "prompts"
	}
	return "tools"
}
