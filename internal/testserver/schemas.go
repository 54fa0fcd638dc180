package testserver

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Fixed tools' input schemas. They are sent verbatim.
const (
	echoSchema     = `{"type":"object","properties":{"text":{"type":"string","description":"Text to return."}},"required":["text"],"additionalProperties":false}`
	sleepSchema    = `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"Milliseconds to sleep."}},"required":["ms"],"additionalProperties":false}`
	noteSchema     = `{"type":"object","properties":{"text":{"type":"string","description":"Note to append."}},"required":["text"],"additionalProperties":false}`
	nameSchema     = `{"type":"object","properties":{"name":{"type":"string","description":"Tool name."}},"required":["name"],"additionalProperties":false}`
	failSchema     = `{"type":"object","properties":{"message":{"type":"string","description":"Error text to return."}},"additionalProperties":false}`
	emptySchema    = `{"type":"object","properties":{},"additionalProperties":false}`
	logSchema      = `{"type":"object","properties":{"level":{"type":"string","enum":["debug","info","notice","warning","error","critical","alert","emergency"]},"logger":{"type":"string"},"text":{"type":"string"},"count":{"type":"integer","minimum":1,"maximum":100000}},"required":["level","text"],"additionalProperties":false}`
	progressSchema = `{"type":"object","properties":{"steps":{"type":"integer","minimum":1,"maximum":1000},"ms":{"type":"integer","minimum":0,"description":"Milliseconds between steps."},"hold":{"type":"boolean","description":"After the steps, wait until cancelled."}},"required":["steps"],"additionalProperties":false}`
)

// simpleSchema is an object with one required string and optional integer,
// enum, array and nested object properties.
const simpleSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to look for."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "mode": {"type": "string", "enum": ["fast", "thorough"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "options": {
      "type": "object",
      "properties": {"verbose": {"type": "boolean"}, "depth": {"type": "integer", "minimum": 0}},
      "additionalProperties": false
    }
  },
  "required": ["query"],
  "additionalProperties": false
}`

// refSchema exercises what a lossy client drops: top-level description and
// oneOf, $defs and definitions, allOf, and a recursive tree through $ref.
// {"root":{"name":"a"},"limit":1} is a valid instance.
const refSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "description": "A tree of named nodes and either a limit or a target.",
  "$defs": {
    "node": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
      },
      "required": ["name"]
    },
    "named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
  },
  "definitions": {
    "limit": {"type": "integer", "minimum": 0}
  },
  "properties": {
    "root": {"$ref": "#/$defs/node"},
    "limit": {"$ref": "#/definitions/limit"},
    "target": {
      "allOf": [
        {"$ref": "#/$defs/named"},
        {"properties": {"kind": {"type": "string", "enum": ["file", "dir"]}}}
      ]
    }
  },
  "required": ["root"],
  "oneOf": [
    {"required": ["limit"]},
    {"required": ["target"]}
  ]
}`

// externalSchema has references no client can follow without fetching
// (a remote URL, a file) or at all (a pointer to nothing), beside a
// required string. {"name":"a","config":{"any":1},"extra":{}} is valid as
// far as a client that does not fetch can tell; "extra" must still be an
// object.
const externalSchema = `{
  "type": "object",
  "description": "Settings whose parts are defined elsewhere.",
  "properties": {
    "name": {"type": "string"},
    "config": {"$ref": "https://schemas.example.com/config.json"},
    "extra": {"$ref": "other.json#/definitions/extra", "type": "object"},
    "local": {"$ref": "#/$defs/missing"}
  },
  "required": ["name"]
}`

// generatedToolName is the name of the i-th generated tool.
func generatedToolName(i int) string { return fmt.Sprintf("tool_%03d", i) }

// generatedSchema returns the input schema of the i-th generated tool for the
// given style, compacted so that it is one JSON value of stable bytes.
func generatedSchema(style string, i int) json.RawMessage {
	src := simpleSchema
	switch {
	case style == SchemasRef || (style == SchemasMixed && i%2 == 1):
		src = refSchema
	case style == SchemasExternal:
		src = externalSchema
	}
	return compact(src)
}

// compact panics on invalid JSON: every input is a constant of this package.
func compact(src string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(src)); err != nil {
		panic(fmt.Sprintf("testserver: invalid built-in schema: %v", err))
	}
	return buf.Bytes()
}
