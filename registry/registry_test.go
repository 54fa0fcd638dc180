package registry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/wire"
)

func nopCall(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
	return wire.TextResult("ok"), nil
}

func tool(id, desc, schema string) Tool {
	t := Tool{ID: id, Description: desc, Call: nopCall}
	if schema != "" {
		t.InputSchema = json.RawMessage(schema)
	}
	return t
}

func drain(ch <-chan event.Message) []event.Event {
	var out []event.Event
	for {
		select {
		case m := <-ch:
			out = append(out, m.Event)
		default:
			return out
		}
	}
}

func TestRegistryChangedSemantics(t *testing.T) {
	bus := event.NewBus()
	events, cancel := bus.Subscribe(16)
	defer cancel()
	r := NewRegistry(bus)

	base := []Tool{
		tool("mcp__s__b", "B", `{"type":"object","properties":{"x":{"type":"string"}}}`),
		tool("mcp__s__a", "A", `{"type":"object"}`),
	}
	changed, err := r.ReplaceSource("s", base)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []event.Event{ToolsChanged{Source: "s"}}, drain(events))

	// Same content: different order, key order, whitespace and fresh closures.
	same := []Tool{
		tool("mcp__s__a", "A", `{ "type" : "object" }`),
		tool("mcp__s__b", "B", `{"properties":{"x":{"type":"string"}},"type":"object"}`),
	}
	same[0].Call = func(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
		return wire.CallResult{}, nil
	}
	gen := r.Generation()
	changed, err = r.ReplaceSource("s", same)
	require.NoError(t, err)
	require.False(t, changed)
	require.Empty(t, drain(events))
	require.Equal(t, gen, r.Generation())

	mutations := map[string]func(ts []Tool){
		"description": func(ts []Tool) { ts[0].Description = "A2" },
		"title":       func(ts []Tool) { ts[0].Title = "Title" },
		"schema":      func(ts []Tool) { ts[0].InputSchema = json.RawMessage(`{"type":"object","required":[]}`) },
		"annotations": func(ts []Tool) { ts[0].Annotations = json.RawMessage(`{"readOnlyHint":true}`) },
		"readonly":    func(ts []Tool) { ts[0].ReadOnly = true },
		"added":       func(ts []Tool) { ts[0].ID = "mcp__s__c" },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			_, err := r.ReplaceSource("s", same)
			require.NoError(t, err)
			drain(events)
			next := []Tool{same[0], same[1]}
			mutate(next)
			changed, err := r.ReplaceSource("s", next)
			require.NoError(t, err)
			require.True(t, changed)
			require.Equal(t, []event.Event{ToolsChanged{Source: "s"}}, drain(events))
		})
	}

	// Removing a tool is a change; removing the source is a change once.
	_, err = r.ReplaceSource("s", same)
	require.NoError(t, err)
	drain(events)
	changed, err = r.ReplaceSource("s", same[:1])
	require.NoError(t, err)
	require.True(t, changed)
	require.True(t, r.RemoveSource("s"))
	require.False(t, r.RemoveSource("s"))
	require.Equal(t, []event.Event{ToolsChanged{Source: "s"}, ToolsChanged{Source: "s"}}, drain(events))
	require.Empty(t, r.List())
	require.Empty(t, r.Sources())
}

func TestRegistryOwnershipAndErrors(t *testing.T) {
	r := NewRegistry(nil)
	_, err := r.ReplaceSource("a", []Tool{tool("x", "", ""), tool("y", "", "")})
	require.NoError(t, err)

	_, err = r.ReplaceSource("b", []Tool{tool("z", "", ""), tool("x", "", "")})
	require.ErrorContains(t, err, `tool id "x" is already provided by a`)
	_, ok := r.Get("z")
	require.False(t, ok, "a failed replace changes nothing")

	_, err = r.ReplaceSource("b", []Tool{tool("z", "", ""), tool("z", "", "")})
	require.ErrorContains(t, err, `duplicate tool id "z"`)
	_, err = r.ReplaceSource("", []Tool{tool("z", "", "")})
	require.Error(t, err)
	_, err = r.ReplaceSource("b", []Tool{{ID: "z"}})
	require.ErrorContains(t, err, "no Call")
	_, err = r.ReplaceSource("b", []Tool{tool("z", "", "{bad")})
	require.ErrorContains(t, err, "input schema")
	wrong := tool("z", "", "")
	wrong.Source = "c"
	_, err = r.ReplaceSource("b", []Tool{wrong})
	require.Error(t, err)

	// Moving a tool between sources works once the old owner dropped it.
	_, err = r.ReplaceSource("a", []Tool{tool("y", "", "")})
	require.NoError(t, err)
	_, err = r.ReplaceSource("b", []Tool{tool("x", "", "")})
	require.NoError(t, err)

	got, ok := r.Get("x")
	require.True(t, ok)
	require.Equal(t, "b", got.Source)
	require.Equal(t, []string{"a", "b"}, r.Sources())
	var ids []string
	for _, tl := range r.List() {
		ids = append(ids, tl.ID)
	}
	require.Equal(t, []string{"x", "y"}, ids)
	require.Len(t, r.SourceTools("a"), 1)
}
