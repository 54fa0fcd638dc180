package hosts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/freecode/freecode/schema"
)

// ErrWholeConfig is wrapped by FromJSON's error when it is given a whole
// config (servers by name) instead of one server.
var ErrWholeConfig = errors.New("a whole config, not one server")

// FromJSON reads one server named name from data: an entry in FreeCode's
// own format ({"type": "local", "command": [...]} or {"type": "remote",
// "url": ...}), or one in the Claude/Cursor style ({"command": "npx",
// "args": [...], "env": {...}}, {"type": "http", "url": ...}). FreeCode's
// entries are taken as they are (the schema checks them when they are
// written); the others are translated like an import's.
func FromJSON(name string, data []byte) (Server, error) {
	obj, err := parseObject(data)
	if err != nil {
		return Server{}, err
	}
	for _, k := range []string{"mcpServers", "servers", "mcp", "mcp_servers"} {
		if obj.has(k) {
			return Server{}, fmt.Errorf("it holds %q, %w: give one server's object, or import the file with `freecode mcp import --from FILE`", k, ErrWholeConfig)
		}
	}
	if n, ok := obj.str("name"); ok && n != name {
		return Server{}, fmt.Errorf("the JSON names the server %s, not %s", quote(n), quote(name))
	}
	typ, _ := obj.str("type")
	var s Server
	switch {
	case typ == string(schema.Local) || typ == string(schema.Remote):
		s, err = freecodeEntry(name, obj, schema.ServerType(typ))
		if err != nil {
			return Server{}, err
		}
	default:
		s = claudeStyle(name, data, &translator{syn: genericVars}, false)
	}
	s.Name = name
	if s.Skip == "" && s.Type == "" {
		s.Skip = "it has neither a command nor a url"
	}
	if s.Skip != "" {
		return s, fmt.Errorf("cannot add %s: %s", quote(name), s.Skip)
	}
	return s, nil
}

// freecodeEntry reads an entry in FreeCode's format. Fields it does not
// know are refused; values are left for the schema to check.
func freecodeEntry(name string, obj object, typ schema.ServerType) (Server, error) {
	s := Server{From: name, Name: name, Type: typ}
	if err := commandShape(obj, typ); err != nil {
		return Server{}, err
	}
	for k, raw := range obj {
		var err error
		switch k {
		case "name", "type":
		case "command":
			err = json.Unmarshal(raw, &s.Command)
		case "url":
			err = json.Unmarshal(raw, &s.URL)
		case "transport":
			err = json.Unmarshal(raw, &s.Transport)
		case "env":
			err = json.Unmarshal(raw, &s.Env)
		case "headers":
			err = json.Unmarshal(raw, &s.Headers)
		case "enabled":
			var e bool
			err = json.Unmarshal(raw, &e)
			s.Disabled = !e
		case "timeout":
			s.TimeoutMS, err = positive(raw)
		case "callTimeout":
			s.CallTimeoutMS, err = positive(raw)
		case "limits":
			err = json.Unmarshal(raw, &s.Limits)
		default:
			return Server{}, fmt.Errorf("%s is not a field of a FreeCode server entry (name, type, command, url, transport, env, headers, enabled, timeout, callTimeout, limits)", quote(k))
		}
		if err != nil {
			return Server{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	return s, nil
}

// positive parses a whole number of milliseconds above 0.
func positive(raw json.RawMessage) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of milliseconds above 0, not %s", raw)
	}
	return n, nil
}

// commandShape refuses a FreeCode entry whose command is written as other
// hosts write it — a string "command", an "args" member — with the one
// list to write instead.
func commandShape(obj object, typ schema.ServerType) error {
	_, isString := obj.str("command")
	if typ != schema.Local || (!isString && !obj.has("args")) {
		return nil
	}
	fix := "write the program and its arguments as one list"
	if words, ok := oneList(obj); ok {
		fix += `, "command": ` + schema.RenderCommand(words)
	}
	if obj.has("args") {
		return fmt.Errorf(`a FreeCode entry ("type": "local") has no "args": %s, and delete "args"`, fix)
	}
	return fmt.Errorf(`"command" must be a list, not one string: %s`, fix)
}

// oneList is the command list an entry means by its "command" and "args",
// each a string (a command line, split) or a list of strings; ok is false
// when either is of another shape.
func oneList(obj object) (words []string, ok bool) {
	for _, k := range []string{"command", "args"} {
		if !obj.has(k) {
			continue
		}
		var w []string
		if line, isString := obj.str(k); isString {
			if w, ok = schema.SplitCommand(line); !ok {
				return nil, false
			}
		} else if json.Unmarshal(obj[k], &w) != nil {
			return nil, false
		}
		words = append(words, w...)
	}
	return words, len(words) > 0
}
