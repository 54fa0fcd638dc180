// Package benchtools gives the registry's benchmarks their tools: the test
// server's generated tools (--schemas mixed: half with $ref), converted by
// mcp.ConvertTools exactly as a session would.
package benchtools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// Tools returns server's 100 generated test-server tools as registry
// tools. With distinct set, each input schema gets a "$comment" naming the
// server and tool, so that no two tools share schema bytes.
func Tools(tb testing.TB, server string, distinct bool) []registry.Tool {
	tb.Helper()
	s, err := testserver.New(testserver.Config{Tools: 100, Schemas: testserver.SchemasMixed})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	listed, err := s.ListTools(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	var raws []json.RawMessage
	for _, raw := range listed {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(raw, &t); err != nil {
			tb.Fatal(err)
		}
		if !strings.HasPrefix(string(t["name"]), `"tool_`) {
			continue
		}
		if distinct {
			c, _ := json.Marshal(server + " " + string(t["name"]))
			t["inputSchema"] = json.RawMessage(`{"$comment":` + string(c) + `,` + strings.TrimPrefix(string(t["inputSchema"]), "{"))
		}
		if raw, err = json.Marshal(t); err != nil {
			tb.Fatal(err)
		}
		raws = append(raws, raw)
	}
	converted, errs := mcp.ConvertTools(server, raws)
	if len(errs) > 0 {
		tb.Fatal(errors.Join(errs...))
	}
	call := func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		return wire.CallResult{}, nil
	}
	out := make([]registry.Tool, len(converted))
	for i, t := range converted {
		out[i] = registry.Tool{ID: t.ID, Source: server, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Annotations: t.Annotations, ReadOnly: t.ReadOnly, Call: call}
	}
	return out
}
