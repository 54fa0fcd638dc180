package registry

import (
	"context"
	"encoding/json"

	"github.com/freecode/freecode/jsonschema"
)

// compileValidator returns a Validate function for a self-contained JSON
// Schema, using the same validator as MCP tools.
func compileValidator(schema json.RawMessage) (func(context.Context, json.RawMessage) error, error) {
	v, err := jsonschema.Compile(schema)
	if err != nil {
		return nil, err
	}
	return v.ValidateContext, nil
}
