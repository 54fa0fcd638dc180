package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// node is a JSON value with the byte offsets it occupies in its document.
// The tree lets edits splice bytes in place, so everything an edit does not
// touch — other keys, their order, whitespace — stays byte-for-byte the same.
type node struct {
	kind    byte // '{', '[', '"', 'n' (number), 't', 'f', 'z' (null)
	start   int  // offset of the value's first byte
	end     int  // offset just past the value's last byte
	members []member
	elems   []*node
	str     string // decoded value of a string node
}

type member struct {
	key      string
	keyStart int
	val      *node
}

// member returns the value of key in an object node, or nil.
func (n *node) member(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	// Last one wins, as with encoding/json.
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].val
		}
	}
	return nil
}

// SyntaxError is a JSON syntax error with its position.
type SyntaxError struct {
	Offset    int
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

type jsonParser struct {
	data  []byte
	pos   int
	depth int
}

const maxJSONDepth = 1000

// parseTree parses a complete JSON document.
func parseTree(data []byte) (*node, error) {
	p := &jsonParser{data: data}
	p.skipSpace()
	if p.pos == len(p.data) {
		return nil, p.errorf("empty file: expected a JSON object")
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected %s after the top-level value", p.describe())
	}
	return n, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line, col := lineCol(p.data, p.pos)
	return &SyntaxError{Offset: p.pos, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) describe() string {
	if p.pos >= len(p.data) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (*node, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of file: expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", 't')
	case c == 'f':
		return p.literal("false", 'f')
	case c == 'n':
		return p.literal("null", 'z')
	default:
		return nil, p.errorf("unexpected %s: expected a value", p.describe())
	}
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errorf("nesting deeper than %d levels", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) object() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &node{kind: '{', start: p.pos}
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("unexpected %s: expected a quoted key", p.describe())
		}
		keyStart := p.pos
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("unexpected %s: expected ':' after key %q", p.describe(), k.str)
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: k.str, keyStart: keyStart, val: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of file: expected ',' or '}'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errorf("unexpected %s: expected ',' or '}'", p.describe())
		}
	}
}

func (p *jsonParser) array() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &node{kind: '[', start: p.pos}
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of file: expected ',' or ']'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errorf("unexpected %s: expected ',' or ']'", p.describe())
		}
	}
}

func (p *jsonParser) string() (*node, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == '\\':
			p.pos += 2
		case c == '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				p.pos = start
				return nil, p.errorf("invalid string: %v", err)
			}
			return &node{kind: '"', start: start, end: p.pos, str: s}, nil
		case c < 0x20:
			return nil, p.errorf("control character in string")
		default:
			p.pos++
		}
	}
	p.pos = start
	return nil, p.errorf("unterminated string")
}

func (p *jsonParser) number() (*node, error) {
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.pos++
			continue
		}
		break
	}
	if !json.Valid(p.data[start:p.pos]) {
		p.pos = start
		return nil, p.errorf("invalid number")
	}
	return &node{kind: 'n', start: start, end: p.pos}, nil
}

func (p *jsonParser) literal(word string, kind byte) (*node, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.errorf("unexpected %s: expected a value", p.describe())
	}
	n := &node{kind: kind, start: p.pos, end: p.pos + len(word)}
	p.pos += len(word)
	return n, nil
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func lineCol(data []byte, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(data); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// lineIndex holds the offset of each line's first byte of one document, so
// that positioning many errors costs O(log n) each rather than a scan from
// the start of the file.
type lineIndex struct {
	size   int
	starts []int
}

func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{size: len(data), starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

// lineCol is lineCol(data, off) for the indexed document.
func (li *lineIndex) lineCol(off int) (line, col int) {
	off = max(min(off, li.size), 0)
	i := sort.Search(len(li.starts), func(i int) bool { return li.starts[i] > off }) - 1
	return i + 1, off - li.starts[i] + 1
}
