package jsonschema

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Pointer returns the value that the JSON Pointer ptr (RFC 6901) names in
// doc, a decoded JSON document: "" is doc itself, "/a/0" member "a"'s first
// item; "~1" stands for "/" and "~0" for "~" in a token. An array index must
// be written canonically ("1", never "01" or "+1"). A pointer that names
// nothing fails with an error wrapping ErrUnresolvedRef.
func Pointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("pointer %q does not start with \"/\": %w", ptr, ErrUnresolvedRef)
	}
	cur := doc
	// at is the pointer walked so far, for messages: ptr up to the current
	// token (tokens are canonical once they unescape without error).
	for at, rest := "", ptr[1:]; ; {
		raw, after, more := strings.Cut(rest, "/")
		tok, err := unescapeToken(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, ErrUnresolvedRef)
		}
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no %q at %q: %w", tok, "#"+pointerFragment(at), ErrUnresolvedRef)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != tok {
				return nil, fmt.Errorf("no index %q at %q: %w", tok, "#"+pointerFragment(at), ErrUnresolvedRef)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q is not an object or array: %w", "#"+pointerFragment(at), ErrUnresolvedRef)
		}
		if !more {
			break
		}
		at, rest = ptr[:len(ptr)-len(after)-1], after
	}
	return cur, nil
}

// Lookup returns the target of ref, a reference local to doc: "" or "#"
// (doc itself) or "#" and a JSON pointer, percent-encoded as a URI fragment
// ("#/$defs/a%20b"). This is how Resolve follows a pointer, and what its
// output's references ("#" and "#/$defs/<name>") mean. A reference to
// another document fails with ErrExternalRef, an anchor or a pointer that
// names nothing with ErrUnresolvedRef; errors name ref.
func Lookup(doc any, ref string) (any, error) {
	ptr, err := refPointer(ref)
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	if ptr != "" && ptr[0] != '/' {
		return nil, fmt.Errorf("$ref %q: no anchor %q: %w", ref, ptr, ErrUnresolvedRef)
	}
	target, err := Pointer(doc, ptr)
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	return target, nil
}

// refPointer returns the decoded fragment of local, the part of a
// reference that is local to the document ("" or "#…"): a JSON pointer, or
// an anchor name when it does not start with "/". Errors do not name the
// reference; they wrap ErrExternalRef or ErrUnresolvedRef.
func refPointer(local string) (string, error) {
	if local != "" && local[0] != '#' {
		return "", ErrExternalRef
	}
	frag, err := url.PathUnescape(strings.TrimPrefix(local, "#"))
	if err != nil {
		return "", fmt.Errorf("bad percent-encoding: %w", ErrUnresolvedRef)
	}
	return frag, nil
}
