package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// A descriptor a server sent (a tool, resource, template, prompt, prompt
// argument, resource content) keeps the server's object verbatim in its
// Raw field, beside the fields FreeCode decoded from it, so that what
// FreeCode does not interpret (_meta, icons, outputSchema, a field of a
// later revision) passes through the API and the CLI's --json without a
// field of its own. Its JSON is the server's object with FreeCode's fields
// written over it (marshalOver); decoding keeps the whole object as Raw
// when it has keys FreeCode has no field for (unmarshalKeep), so a client
// re-encodes what it was sent.

// marshalOver is the JSON object of decoded (the descriptor without its
// MarshalJSON, so a type of its own), with the keys of raw that decoded
// does not write after its own, in raw's order. decoded's keys win: they
// are what FreeCode decoded, resolved or rewrote (an id, a resolved
// schema, a URI). A raw that is not a JSON object (none, or invalid) adds
// nothing: the answer is decoded's own JSON. The work and the answer are
// bounded by what was received: raw is scanned in place, and only the
// values written are copied, once, unchanged.
func marshalOver(raw json.RawMessage, decoded any) ([]byte, error) {
	return MarshalOver(raw, decoded)
}

// MarshalOver is marshalOver for a type outside this package that writes
// fields of its own over a descriptor's (a struct embedding a method-less
// copy of the descriptor type, say). A key of raw that matches one of
// decoded's keys regardless of case is left out even when decoded omits
// its field only in case: encoding/json matches keys regardless of case,
// so a server's "Id" or "ReadOnly" must never decode as FreeCode's field
// on the other end. Raw that is not valid UTF-8 adds nothing either.
func MarshalOver(raw json.RawMessage, decoded any) ([]byte, error) {
	own, err := json.Marshal(decoded)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 || !utf8.Valid(raw) {
		return own, nil
	}
	extra, err := objectMembers(raw)
	if err != nil {
		return own, nil // the server's mistake: FreeCode's fields alone
	}
	mine, err := objectMembers(own)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: not a JSON object: %w", decoded, err)
	}
	// written: the keys already written. known: decoded's keys, written or
	// not, folded as encoding/json folds them (strings.EqualFold). A key of
	// the server's that is one of decoded's exactly and was left out
	// (omitempty) keeps the server's value; one that differs from one of
	// them only in case is left out, since a decoder would take it for
	// FreeCode's field.
	written := make(map[string]bool, len(mine)+len(extra))
	for _, m := range mine {
		written[m.key] = true
	}
	exact := jsonKeys(reflect.TypeOf(decoded))
	known := make(map[string]bool, len(exact))
	for k := range exact {
		known[strings.ToLower(k)] = true
	}
	var b bytes.Buffer
	b.Grow(len(own) + len(raw))
	b.WriteByte('{')
	first := true
	add := func(m member) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(m.rawKey)
		b.WriteByte(':')
		b.Write(m.value)
	}
	for _, m := range mine {
		add(m)
	}
	for _, m := range extra {
		if written[m.key] || !exact[m.key] && known[strings.ToLower(m.key)] {
			continue
		}
		written[m.key] = true // a key the server repeats is written once
		add(m)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// unmarshalKeep decodes b into decoded (a pointer to the descriptor
// without its UnmarshalJSON) and, when the object has keys decoded's type
// has no field for, keeps a copy of it, the whole object, in *raw: what
// marshalOver writes is then what b holds. An object of known keys alone
// keeps nothing, since decoded's fields say all of it.
func unmarshalKeep(b []byte, decoded any, raw *json.RawMessage) error {
	*raw = nil // a reused value keeps nothing of what it held
	if err := json.Unmarshal(b, decoded); err != nil {
		return err
	}
	members, err := objectMembers(b)
	if err != nil {
		return nil // null
	}
	known := jsonKeys(reflect.TypeOf(decoded).Elem())
	for _, m := range members {
		if !known[m.key] {
			*raw = bytes.Clone(bytes.TrimSpace(b))
			return nil
		}
	}
	return nil
}

// jsonKeys is the set of keys the JSON of struct type t has fields for,
// those of embedded structs included (none when t is not a struct).
func jsonKeys(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := make(map[string]bool, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous && (f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct):
			for k := range jsonKeys(f.Type) {
				keys[k] = true
			}
		case name == "-" || !f.IsExported():
		case name == "":
			keys[f.Name] = true
		default:
			keys[name] = true
		}
	}
	return keys
}

// member is one key and value of a JSON object: the key decoded and as
// written (quoted, escapes kept), the value as written. Both are slices of
// the object: nothing is copied.
type member struct {
	key    string
	rawKey []byte
	value  []byte
}

// objectMembers returns the members of obj, a JSON object, in order; an
// error when obj is not one (or not valid JSON). The values are slices of
// obj, so a large value FreeCode writes over costs no copy.
func objectMembers(obj []byte) ([]member, error) {
	if !json.Valid(obj) {
		return nil, errors.New("not valid JSON")
	}
	i := skipSpace(obj, 0)
	if obj[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for i = skipSpace(obj, i+1); obj[i] == '"'; {
		end := stringEnd(obj, i)
		m := member{rawKey: obj[i:end]}
		if bytes.IndexByte(m.rawKey, '\\') < 0 {
			m.key = string(m.rawKey[1 : len(m.rawKey)-1])
		} else if err := json.Unmarshal(m.rawKey, &m.key); err != nil {
			return nil, err
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		end = valueEnd(obj, i)
		m.value = obj[i:end]
		out = append(out, m)
		if i = skipSpace(obj, end); obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return out, nil
}

// The scanners below step through JSON known to be valid.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number, true, false or null
	for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
		j++
	}
	return j
}
