package mcp

import "bytes"

// Walking JSON that is known to be valid (checked by json.Valid, or
// produced by encoding/json), without reflection and without checking it
// again: the top-level fields of an answer, or of a result, are found
// with one quick pass that only tracks strings and nesting. Whatever the
// walk does not expect (an escaped key, a key that only matches one of
// interest case-insensitively, as encoding/json would match it, a key
// twice) makes its caller fall back to encoding/json, so that the two
// never decode a message differently.

// objectFields calls fn with each key (between its quotes) and value of
// b, a valid JSON object, in order; it reports false if b is not an
// object, a key holds an escape, or fn returned false.
func objectFields(b []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		n := stringLen(b[i:])
		if n < 0 {
			return false
		}
		key := b[i+1 : i+n-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(b, i+n)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		n = valueLen(b[i:])
		if n <= 0 || !fn(key, b[i:i+n]) {
			return false
		}
		i = skipSpace(b, i+n)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// arrayElements calls fn with each element of b, a valid JSON array; it
// reports false if b is not an array.
func arrayElements(b []byte, fn func(elem []byte)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		n := valueLen(b[i:])
		if n <= 0 {
			return false
		}
		fn(b[i : i+n])
		i = skipSpace(b, i+n)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

// valueLen is the length of the JSON value b starts with, or -1.
func valueLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case '"':
		return stringLen(b)
	case '{', '[':
		depth := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				n := stringLen(b[i:])
				if n < 0 {
					return -1
				}
				i += n - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // a number, true, false or null
		for i, c := range b {
			switch c {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return len(b)
	}
}

// stringLen is the length of the JSON string b starts with, quotes
// included, or -1.
func stringLen(b []byte) int {
	for i := 1; i < len(b); {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return -1
		}
		i += j
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // an escape: the next byte is never the end
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// fieldOf reports which of names key is (its index), -1 for none, and
// ok false when key matches one only as encoding/json matches a field
// whose name differs in case (bytes.EqualFold): the caller then leaves
// the message to encoding/json.
func fieldOf(key []byte, names ...string) (int, bool) {
	for i, n := range names {
		if string(key) == n {
			return i, true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return -1, false
		}
	}
	return -1, true
}
