package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Decode parses the one JSON value in raw, keeping numbers as written
// (json.Number) so that re-encoding never changes them. Anything after the
// value but white space is an error.
func Decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// Encode marshals v compactly with sorted object keys and without HTML
// escaping: the same value always yields the same bytes. Resolve's output,
// the registry's canonical schemas and the provider dialects are all made
// by it.
func Encode(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Canonical returns raw re-encoded by Encode (sorted keys, no insignificant
// white space), so that two documents differing only in key order or
// spacing compare equal. Empty input stays empty (nil).
func Canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	return Encode(v)
}
