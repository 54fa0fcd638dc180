package defs

import (
	"context"
	"encoding/json"
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func nopCall(context.Context, json.RawMessage, func(wire.Progress)) (wire.CallResult, error) {
	return wire.TextResult("ok"), nil
}

// tool is a tool of the given id, description and schema ("" for none).
func tool(id, desc, schema string) registry.Tool {
	t := registry.Tool{ID: id, Description: desc, Call: nopCall}
	if schema != "" {
		t.InputSchema = json.RawMessage(schema)
	}
	return t
}
