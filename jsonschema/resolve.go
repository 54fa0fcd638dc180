package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Bounds on the work Resolve does for one schema.
const (
	// MaxSchemaBytes is the largest raw schema Resolve accepts.
	MaxSchemaBytes = 2 << 20
	// MaxOutputBytes approximates the largest resolved schema Resolve produces.
	MaxOutputBytes = 4 << 20
	// MaxDepth bounds the nesting of schemas, in the input and in the output.
	MaxDepth = 128
	// MaxRefTargets bounds the number of distinct locations references point to.
	MaxRefTargets = 1000
	// MaxWarnings bounds the warnings Resolve lists for one schema; the
	// last one listed counts the rest (Warning.More).
	MaxWarnings = 20
)

// Sentinel errors; Resolve wraps them with the reference or location
// concerned. ErrExternalRef and ErrUnresolvedRef never fail Resolve: they
// are the Err of its Warnings (and Lookup's errors).
var (
	ErrExternalRef   = errors.New("reference outside the schema is not fetched")
	ErrUnresolvedRef = errors.New("reference target not found")
	ErrRefCycle      = errors.New("reference cycle never reaches a nested value")
	ErrUnsupported   = errors.New("unsupported keyword")
	ErrTooComplex    = errors.New("schema too complex")
)

// A Warning is a reference that Resolve could not follow: a reference to
// another document (never fetched) or a local pointer or anchor that names
// nothing. Resolve resolves the schema object holding it as if the $ref
// were {}, any value, and leaves out the keywords for which that would
// reject more rather than less (see the package doc).
type Warning struct {
	// Ref is the reference as written.
	Ref string
	// At is where the schema object holding Ref is in the input, as a URI
	// fragment: "#/properties/config" ("#" for the root).
	At string
	// Err says why Ref was not followed; it wraps ErrExternalRef or
	// ErrUnresolvedRef.
	Err error
	// LeftOut lists the keywords left out because of Ref, where they are in
	// the output: first the guard keyword Ref lies below, if any, then the
	// unevaluatedProperties and unevaluatedItems whose outcome Ref takes
	// part in, innermost first. Nil when only Ref itself became {}.
	LeftOut []LeftOut
	// More is set on the last warning of a list Resolve cut at MaxWarnings:
	// how many further references of the schema were treated the same way
	// without a warning of their own.
	More int
}

// LeftOut is a keyword Resolve left out of the schema object at At (a URI
// fragment) because of a reference it could not follow. "if" stands for if,
// then and else; "contains" for contains, minContains and maxContains.
type LeftOut struct {
	Keyword, At string
}

// String describes w for a user: the reference, where it is, why it was
// not followed, and what the schema accepts instead.
func (w Warning) String() string {
	var b strings.Builder
	if errors.Is(w.Err, ErrExternalRef) {
		fmt.Fprintf(&b, "$ref %q at %s is not fetched", w.Ref, w.At)
	} else {
		fmt.Fprintf(&b, "$ref %q at %s: %v", w.Ref, w.At, w.Err)
	}
	rest := w.LeftOut
	if len(rest) > 0 && guardKeywords[rest[0].Keyword] != nil {
		kw := rest[0].Keyword
		if kw == "if" {
			kw = "if/then/else"
		}
		fmt.Fprintf(&b, "; the %s at %s is left out, so that value is not checked against it", kw, rest[0].At)
		rest = rest[1:]
	} else {
		b.WriteString("; that value accepts anything")
	}
	for _, l := range rest {
		fmt.Fprintf(&b, "; the %s at %s is left out as well", l.Keyword, l.At)
	}
	if w.More > 0 {
		fmt.Fprintf(&b, " (and %d more reference%s of this schema, not listed, treated the same way)", w.More, pluralS(w.More))
	}
	return b.String()
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// guardKeywords are the in-place keywords whose holder does not accept
// more when their subschemas accept more, each with the keywords that only
// mean something beside it: a reference Resolve cannot follow below one of
// them leaves out the outermost such keyword rather than becoming {}.
// contains is one only beside maxContains.
var guardKeywords = map[string][]string{
	"not":      {"not"},
	"oneOf":    {"oneOf"},
	"if":       {"if", "then", "else"},
	"contains": {"contains", "minContains", "maxContains"},
}

// unevaluatedKeywords accept more when fewer parts of the instance are
// evaluated in place: a reference Resolve cannot follow in place below
// their schema object (whose target would have evaluated parts) leaves
// them out.
var unevaluatedKeywords = []string{"unevaluatedItems", "unevaluatedProperties"}

// Prepared is a schema as Prepare returns it.
type Prepared struct {
	// Schema is the resolved, self-contained schema.
	Schema json.RawMessage
	// Validator is Schema compiled.
	Validator *Validator
	// Warnings lists the references Resolve could not follow, in the order
	// it met them; nil when there were none.
	Warnings []Warning
}

// Resolve's own rules on keywords; what each keyword is comes from the
// keyword table (KeywordOf).
var (
	// droppedKeywords never reach the output (see the package doc).
	droppedKeywords = map[string]bool{
		"$defs": true, "definitions": true, "$id": true, "$anchor": true,
		"$dynamicAnchor": true, "$recursiveAnchor": true, "$schema": true,
	}
	// plainKeywords are the only keywords an allOf member may use to be merged.
	plainKeywords = map[string]bool{
		"type": true, "properties": true, "required": true,
		"title": true, "description": true, "$comment": true,
	}
	mergedAnnotations = []string{"title", "description", "$comment"}
)

// defsKeyword reports whether the validator knows the draft named by a
// $schema value, and which keyword holds definitions in that draft.
func defsKeyword(schemaURL string) (string, bool) {
	u := strings.TrimSuffix(schemaURL, "#")
	u, ok := strings.CutPrefix(u, "http://")
	if !ok {
		u, _ = strings.CutPrefix(u, "https://")
	}
	switch u {
	case "json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema":
		return "definitions", true
	case "json-schema.org/draft/2019-09/schema", "json-schema.org/draft/2020-12/schema", "json-schema.org/schema":
		return "$defs", true
	}
	return "", false
}

// Resolve returns raw as a self-contained schema, following the rules in the
// package documentation, and the references it could not follow (at most
// MaxWarnings of them; nil when there were none). It never fetches
// anything. The result always compiles: a schema that the validator
// rejects (e.g. "minLength": -1) is an error here.
func Resolve(raw json.RawMessage) (json.RawMessage, []Warning, error) {
	p, err := Prepare(raw)
	return p.Schema, p.Warnings, err
}

// Prepare is Resolve followed by Compile of its result, compiling only once.
func Prepare(raw json.RawMessage) (Prepared, error) {
	schema, v, warnings, err := prepareRaw(raw)
	if err != nil {
		return Prepared{}, err
	}
	return Prepared{Schema: schema, Validator: v, Warnings: warnings}, nil
}

func prepareRaw(raw json.RawMessage) (json.RawMessage, *Validator, []Warning, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, nil, nil, fmt.Errorf("schema is %d bytes, more than %d: %w", len(raw), MaxSchemaBytes, ErrTooComplex)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	doc, err := Decode(trimmed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse schema: %w", err)
	}
	if b, ok := doc.(bool); ok && b {
		doc = map[string]any{}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, nil, fmt.Errorf("schema must be a JSON object, got %s", jsonKind(doc))
	}
	r := &resolver{
		root:     root,
		anchors:  map[string]string{},
		targets:  map[string]int{"": 0},
		keys:     []string{""},
		defsKey:  "$defs",
		budget:   MaxOutputBytes,
		defNames: map[string]string{},
		used:     map[string]bool{},
		warned:   map[string]bool{},
	}
	if s, ok := root["$schema"].(string); ok {
		if k, known := defsKeyword(s); known {
			r.schemaURL, r.defsKey = s, k
		}
	}
	if id, ok := root["$id"].(string); ok {
		r.rootID = strings.TrimSuffix(id, "#")
	}
	out, err := r.run()
	if err != nil {
		return nil, nil, nil, err
	}
	resolved, err := Encode(out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("encode schema: %w", err)
	}
	// Keywords are copied, not checked; the validator's metaschema decides
	// whether the result is a schema at all.
	v, err := Compile(resolved)
	if err != nil {
		return nil, nil, nil, err
	}
	return resolved, v, r.warnings, nil
}

type resolver struct {
	root      map[string]any
	rootID    string
	schemaURL string // known $schema of the root, "" if none
	defsKey   string // "$defs" or "definitions"

	anchors map[string]string // anchor name -> canonical pointer
	refs    []string          // every $ref value seen, in walk order
	targets map[string]int    // canonical pointer -> graph node; the root is 0
	keys    []string          // graph node -> canonical pointer
	edges   []map[int]bool    // node -> nodes referenced from its subtree
	inPlace []map[int]bool    // the subset of edges reached through in-place keywords only

	recursive map[string]bool   // pointers that must stay references
	defNames  map[string]string // recursive pointer -> name under defsKey
	used      map[string]bool   // recursive pointers referenced by the output
	stack     []string          // pointers being inlined, for a last-resort guard
	budget    int               // output bytes left

	// degraded marks the graph nodes whose output accepts more than the
	// input would: their subtree, or a target they reach, holds a
	// reference that cannot be followed.
	degraded []bool
	// guard is the outermost guard keyword being resolved, nil if none;
	// evaluating the schema objects with unevaluated keywords that the
	// current position is in place of, outermost first.
	guard      *leaving
	evaluating []*leaving
	leftOut    bool // a keyword was left out
	warnings   []Warning
	warned     map[string]bool // warning keys: one per reference and outcome
}

// leaving is keywords that are left out of the schema object at a
// (canonical pointer) if a reference below them cannot be followed.
type leaving struct {
	keywords []string // guard: the keyword first, then its companions
	at       string
	hit      bool // a reference below could not be followed
}

func (r *resolver) run() (any, error) {
	// Pass 1: anchors and reference targets, with the input depth bound.
	if err := r.index(r.root, "", 0); err != nil {
		return nil, err
	}
	for _, ref := range r.refs {
		key, _, err := r.lookup(ref)
		if err != nil {
			continue // reported if the output needs this reference
		}
		if _, ok := r.targets[key]; !ok {
			if len(r.keys) > MaxRefTargets {
				return nil, fmt.Errorf("more than %d distinct $ref targets: %w", MaxRefTargets, ErrTooComplex)
			}
			r.targets[key] = len(r.keys)
			r.keys = append(r.keys, key)
		}
	}
	// Pass 2: which targets reach which.
	r.edges = make([]map[int]bool, len(r.keys))
	r.inPlace = make([]map[int]bool, len(r.keys))
	for i := range r.keys {
		r.edges[i], r.inPlace[i] = map[int]bool{}, map[int]bool{}
	}
	r.degraded = make([]bool, len(r.keys))
	r.walkEdges(r.root, "", nil)
	r.spreadDegraded()
	if cyc := cyclic(r.inPlace); len(cyc) > 0 {
		return nil, fmt.Errorf("$ref %q: %w", "#"+pointerFragment(r.keys[cyc[0]]), ErrRefCycle)
	}
	r.recursive = map[string]bool{}
	var named []string
	for _, n := range cyclic(r.edges) {
		r.recursive[r.keys[n]] = true
		if n != 0 {
			named = append(named, r.keys[n])
		}
	}
	slices.Sort(named)
	taken := map[string]bool{}
	for _, key := range named {
		base := defName(key)
		name := base
		for i := 2; taken[name]; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		taken[name] = true
		r.defNames[key] = name
	}

	// Pass 3: emit.
	r.stack = []string{""}
	out, err := r.node(r.root, "", 0)
	if err != nil {
		return nil, err
	}
	defs := map[string]any{}
	for len(defs) < len(r.used) {
		var pending []string
		for key := range r.used {
			if _, done := defs[r.defNames[key]]; !done {
				pending = append(pending, key)
			}
		}
		slices.Sort(pending)
		for _, key := range pending {
			_, target, err := r.lookup("#" + pointerFragment(key))
			if err != nil {
				return nil, err
			}
			r.stack = []string{key}
			def, err := r.node(target, key, 0)
			if err != nil {
				return nil, err
			}
			defs[r.defNames[key]] = def
		}
	}
	if r.leftOut {
		// A keyword left out may have held the only reference to a
		// definition: keep the ones the output still reaches, so that the
		// output is what resolving it again gives.
		pruneDefs(out, defs, "#/"+r.defsKey+"/")
	}
	return r.finishRoot(out, defs)
}

// pruneDefs removes from defs the definitions that out does not reach
// through references "<prefix><name>", directly or through other
// definitions.
func pruneDefs(out any, defs map[string]any, prefix string) {
	reached := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, prefix); ok && !reached[name] {
				reached[name] = true
				walk(defs[name])
			}
		}
		_ = Subschemas(m, func(_ Position, sub any) error {
			walk(sub)
			return nil
		})
	}
	walk(out)
	for name := range defs {
		if !reached[name] {
			delete(defs, name)
		}
	}
}

// index records anchors and $ref values, and enforces MaxDepth on the input.
func (r *resolver) index(v any, ptr string, depth int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if depth > MaxDepth {
		return fmt.Errorf("at %q: schemas nested more than %d deep: %w", "#"+pointerFragment(ptr), MaxDepth, ErrTooComplex)
	}
	if a, ok := m["$anchor"].(string); ok {
		if err := r.addAnchor(a, ptr); err != nil {
			return err
		}
	}
	if id, ok := m["$id"].(string); ok && strings.HasPrefix(id, "#") && len(id) > 1 {
		if err := r.addAnchor(id[1:], ptr); err != nil {
			return err
		}
	}
	if ref, ok := m["$ref"].(string); ok {
		r.refs = append(r.refs, ref)
	}
	return Subschemas(m, func(at Position, child any) error {
		return r.index(child, at.Pointer(ptr), depth+1)
	})
}

func (r *resolver) addAnchor(name, ptr string) error {
	if prev, ok := r.anchors[name]; ok && prev != ptr {
		return fmt.Errorf("anchor %q defined at %q and %q", name, "#"+pointerFragment(prev), "#"+pointerFragment(ptr))
	}
	r.anchors[name] = ptr
	return nil
}

// frame is a reference target enclosing the walk's current position.
type frame struct {
	node    int
	inPlace bool // reached from the target through in-place keywords only
}

// walkEdges adds an edge from every enclosing target to each target
// referenced below it. Subschemas under $defs/definitions are not part of
// their holder's output, so the enclosing targets are forgotten there.
func (r *resolver) walkEdges(v any, ptr string, enclosing []frame) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if n, ok := r.targets[ptr]; ok {
		enclosing = append(slices.Clip(enclosing), frame{node: n, inPlace: true})
	}
	if ref, ok := m["$ref"].(string); ok {
		if key, _, err := r.lookup(ref); err == nil {
			to := r.targets[key]
			for _, f := range enclosing {
				r.edges[f.node][to] = true
				if f.inPlace {
					r.inPlace[f.node][to] = true
				}
			}
		} else {
			for _, f := range enclosing {
				r.degraded[f.node] = true
			}
		}
	}
	_ = Subschemas(m, func(at Position, child any) error {
		next := enclosing
		switch KeywordOf(at.Keyword).Applies {
		case AppliesThroughRef:
			next = nil
		case AppliesInPlace:
		default:
			next = make([]frame, len(enclosing))
			for i, f := range enclosing {
				next[i] = frame{node: f.node}
			}
		}
		r.walkEdges(child, at.Pointer(ptr), next)
		return nil
	})
}

// spreadDegraded marks every target that reaches a degraded one.
func (r *resolver) spreadDegraded() {
	for changed := true; changed; {
		changed = false
		for n, to := range r.edges {
			if r.degraded[n] {
				continue
			}
			for m := range to {
				if r.degraded[m] {
					r.degraded[n], changed = true, true
					break
				}
			}
		}
	}
}

// cyclic returns the nodes that lie on a cycle of g (including self-loops),
// in ascending order, using Tarjan's strongly connected components.
func cyclic(g []map[int]bool) []int {
	n := len(g)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack, out []int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedInts(g[v]) {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) > 1 || g[v][v] {
			out = append(out, scc...)
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	slices.Sort(out)
	return out
}

// lookup resolves a local reference to its canonical pointer and target;
// errors name ref.
func (r *resolver) lookup(ref string) (string, any, error) {
	key, target, err := r.find(ref)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	return key, target, nil
}

// find is lookup with errors that do not name ref. They wrap
// ErrExternalRef or ErrUnresolvedRef.
func (r *resolver) find(ref string) (string, any, error) {
	rest := ref
	if r.rootID != "" {
		if after, ok := strings.CutPrefix(ref, r.rootID); ok && (after == "" || after[0] == '#') {
			rest = after
		}
	}
	frag, err := refPointer(rest)
	if err != nil {
		return "", nil, err
	}
	if frag != "" && frag[0] != '/' {
		key, ok := r.anchors[frag]
		if !ok {
			return "", nil, fmt.Errorf("no anchor %q: %w", frag, ErrUnresolvedRef)
		}
		frag = key
	}
	target, err := Pointer(r.root, frag)
	if err != nil {
		return "", nil, err
	}
	// A pointer Pointer accepts is canonical: every token's escapes are
	// valid, so unescaping and escaping it again gives it back.
	return frag, target, nil
}

// node resolves the subschema v found at pointer ptr.
func (r *resolver) node(v any, ptr string, depth int) (any, error) {
	if depth > 4*MaxDepth {
		return nil, fmt.Errorf("at %q: resolved schema nested more than %d deep: %w", "#"+pointerFragment(ptr), 4*MaxDepth, ErrTooComplex)
	}
	if err := r.spend(1); err != nil {
		return nil, err
	}
	switch s := v.(type) {
	case bool:
		return s, nil
	case map[string]any:
		refVal, isRef := s["$ref"]
		if isRef {
			if _, ok := refVal.(string); !ok {
				return nil, fmt.Errorf("at %q: $ref must be a string, got %s", "#"+pointerFragment(ptr), jsonKind(refVal))
			}
		}
		var uneval *leaving
		for _, kw := range unevaluatedKeywords {
			if _, ok := s[kw]; ok {
				if uneval == nil {
					uneval = &leaving{at: ptr}
				}
				uneval.keywords = append(uneval.keywords, kw)
			}
		}
		if uneval != nil {
			r.evaluating = append(r.evaluating, uneval)
			defer func() { r.evaluating = r.evaluating[:len(r.evaluating)-1] }()
		}
		if !isRef {
			out, err := r.keywords(s, ptr, depth, uneval)
			if err != nil {
				return nil, err
			}
			return mergeAllOf(out), nil
		}
		return r.ref(s, refVal.(string), ptr, depth, uneval)
	default:
		return nil, fmt.Errorf("at %q: a schema must be an object or a boolean, got %s", "#"+pointerFragment(ptr), jsonKind(v))
	}
}

// ref resolves a schema object holding $ref; uneval is its unevaluated
// keywords, nil if none.
func (r *resolver) ref(s map[string]any, ref, ptr string, depth int, uneval *leaving) (any, error) {
	key, target, err := r.find(ref)
	var resolved any
	switch {
	case err != nil:
		// Not followed: accept any value (or drop the guard keyword).
		r.warn(Warning{Ref: ref, At: "#" + pointerFragment(ptr), Err: err})
		resolved = map[string]any{}
	case key == "" && r.recursive[key]:
		r.keptRef(key)
		resolved = map[string]any{"$ref": "#"}
	case r.recursive[key]:
		r.keptRef(key)
		r.used[key] = true
		resolved = map[string]any{"$ref": "#/" + r.defsKey + "/" + r.defNames[key]}
	case slices.Contains(r.stack, key):
		// The cycle analysis marks every self-reaching target recursive, so
		// this is unreachable; it guards against unbounded inlining.
		return nil, fmt.Errorf("$ref %q: %w", ref, ErrRefCycle)
	default:
		r.stack = append(r.stack, key)
		resolved, err = r.node(target, key, depth+1)
		r.stack = r.stack[:len(r.stack)-1]
		if err != nil {
			return nil, err
		}
	}
	siblings := make(map[string]any, len(s))
	for k, v := range s {
		if k != "$ref" {
			siblings[k] = v
		}
	}
	sib, err := r.keywords(siblings, ptr, depth, uneval)
	if err != nil {
		return nil, err
	}
	sib = mergeAllOf(sib)
	if len(sib) == 0 {
		return resolved, nil
	}
	return combineRef(resolved, sib), nil
}

// warn records w, a reference not followed, and marks the keywords that
// must be left out because of it.
func (r *resolver) warn(w Warning) {
	for _, l := range r.hit() {
		if l == r.guard {
			w.LeftOut = append(w.LeftOut, LeftOut{Keyword: l.keywords[0], At: "#" + pointerFragment(l.at)})
		} else {
			for _, kw := range l.keywords {
				w.LeftOut = append(w.LeftOut, LeftOut{Keyword: kw, At: "#" + pointerFragment(l.at)})
			}
		}
	}
	key := w.At
	for _, l := range w.LeftOut {
		key += "\x00" + l.Keyword + "\x00" + l.At
	}
	if r.warned[key] {
		return
	}
	r.warned[key] = true
	if len(r.warnings) == MaxWarnings {
		r.warnings[MaxWarnings-1].More++
		return
	}
	r.warnings = append(r.warnings, w)
}

// hit marks the open guard and unevaluated keywords as to be left out and
// returns them: the guard first, then the unevaluated ones innermost
// first.
func (r *resolver) hit() []*leaving {
	var out []*leaving
	if r.guard != nil {
		out = append(out, r.guard)
	}
	for i := len(r.evaluating) - 1; i >= 0; i-- {
		out = append(out, r.evaluating[i])
	}
	for _, l := range out {
		l.hit = true
	}
	return out
}

// keptRef is called for a reference kept in the output: when its target
// accepts more than the input's did, the keywords above it go as for a
// reference not followed (the warning is the target's own).
func (r *resolver) keptRef(key string) {
	if r.degraded[r.targets[key]] {
		r.hit()
	}
}

// combineRef joins a resolved $ref target with its resolved siblings.
func combineRef(resolved any, sib map[string]any) any {
	resMap, isMap := resolved.(map[string]any)
	if resolved == true {
		resMap, isMap = map[string]any{}, true
	}
	if isMap && (!hasConstraints(resMap) || !hasConstraints(sib)) {
		merged := make(map[string]any, len(resMap)+len(sib))
		for k, v := range resMap {
			merged[k] = v
		}
		for k, v := range sib {
			merged[k] = v
		}
		return mergeAllOf(merged)
	}
	outer := map[string]any{}
	cons := map[string]any{}
	for k, v := range sib {
		if KeywordOf(k).Constraint {
			cons[k] = v
		} else {
			outer[k] = v
		}
	}
	if len(cons) == 0 {
		cons = nil
	}
	members := []any{resolved}
	if cons != nil {
		members = append(members, cons)
	}
	outer["allOf"] = members
	return mergeAllOf(outer)
}

func hasConstraints(m map[string]any) bool {
	for k := range m {
		if KeywordOf(k).Constraint {
			return true
		}
	}
	return false
}

// keywords resolves every keyword of the schema object s except $ref;
// uneval is its unevaluated keywords, nil if none, which it leaves out
// when a reference in place below them was not followed.
func (r *resolver) keywords(s map[string]any, ptr string, depth int, uneval *leaving) (map[string]any, error) {
	for _, kw := range sortedKeys(s) {
		v := s[kw]
		if err := r.spend(len(kw) + 3); err != nil {
			return nil, err
		}
		switch {
		case kw == "$ref" || droppedKeywords[kw]:
			continue
		case kw == "$dynamicRef" || kw == "$recursiveRef":
			return nil, fmt.Errorf("at %q: %s: %w", "#"+pointerFragment(ptr+"/"+escapeToken(kw)), kw, ErrUnsupported)
		}
		// Values are copied verbatim: charge them (subschemas are charged
		// as they are resolved).
		switch KeywordOf(kw).Holds {
		case HoldsNone:
			if err := r.spendValue(v); err != nil {
				return nil, err
			}
		case HoldsMapOrNames:
			obj, _ := v.(map[string]any)
			for _, name := range sortedKeys(obj) {
				if names, ok := obj[name].([]any); ok {
					if err := r.spendValue(names); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	dropped := func(kw string, _ Keyword) bool { return kw == "$ref" || droppedKeywords[kw] }
	var leftOut []string // guard keywords to leave out, with their companions
	out, err := Rewrite(s, dropped, func(at Position, sub any) (any, error) {
		if KeywordOf(at.Keyword).Holds == HoldsMap {
			if err := r.spend(len(at.Name) + 3); err != nil {
				return nil, err
			}
		}
		if KeywordOf(at.Keyword).Applies != AppliesInPlace {
			// What a part of the instance evaluates is not the holder's.
			saved := r.evaluating
			r.evaluating = nil
			defer func() { r.evaluating = saved }()
		}
		if r.guard != nil || !isGuard(s, at.Keyword) {
			return r.node(sub, at.Pointer(ptr), depth+1)
		}
		g := &leaving{keywords: guardKeywords[at.Keyword], at: ptr}
		r.guard = g
		res, err := r.node(sub, at.Pointer(ptr), depth+1)
		r.guard = nil
		if g.hit {
			leftOut = append(leftOut, g.keywords...)
		}
		return res, err
	})
	var se *ShapeError
	if errors.As(err, &se) && se.At == "" {
		se.At = ptr + "/" + escapeToken(se.Keyword)
	}
	if err != nil {
		return nil, err
	}
	if uneval != nil && uneval.hit {
		leftOut = append(leftOut, uneval.keywords...)
	}
	for _, kw := range leftOut {
		delete(out, kw)
		r.leftOut = true
	}
	return out, nil
}

// isGuard reports whether kw of the schema object s is a guard keyword
// (guardKeywords).
func isGuard(s map[string]any, kw string) bool {
	if kw == "contains" {
		_, ok := s["maxContains"]
		return ok
	}
	_, ok := guardKeywords[kw]
	return ok
}

// mergeAllOf folds the allOf of m into m when the package's allOf rule allows,
// and returns m unchanged otherwise. m is not modified.
func mergeAllOf(m map[string]any) map[string]any {
	members, ok := m["allOf"].([]any)
	if !ok || len(members) == 0 {
		return m
	}
	if _, ok := m["additionalProperties"]; ok {
		return m
	}
	if _, ok := m["unevaluatedProperties"]; ok {
		return m
	}
	parts := []map[string]any{}
	for _, member := range members {
		if member == true {
			continue
		}
		mm, ok := member.(map[string]any)
		if !ok {
			return m
		}
		for k := range mm {
			if !plainKeywords[k] {
				return m
			}
		}
		parts = append(parts, mm)
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "allOf" {
			out[k] = v
		}
	}
	all := append([]map[string]any{out}, parts...)
	typed := false
	for _, p := range all {
		if t, ok := p["type"]; ok {
			if t != "object" {
				return m
			}
			typed = true
		}
	}
	for _, a := range mergedAnnotations {
		if _, ok := out[a]; ok {
			continue
		}
		var val any
		for _, p := range parts {
			if v, ok := p[a]; ok {
				if val != nil && !reflect.DeepEqual(val, v) {
					return m
				}
				val = v
			}
		}
		if val != nil {
			out[a] = val
		}
	}
	props := map[string]any{}
	var required []any
	seen := map[string]bool{}
	anyProps, anyRequired := false, false
	for _, p := range all {
		if pv, ok := p["properties"]; ok {
			pm, ok := pv.(map[string]any)
			if !ok {
				return m
			}
			anyProps = true
			for name, schema := range pm {
				if prev, ok := props[name]; ok && !reflect.DeepEqual(prev, schema) {
					return m
				}
				props[name] = schema
			}
		}
		if rv, ok := p["required"]; ok {
			rl, ok := rv.([]any)
			if !ok {
				return m
			}
			anyRequired = true
			for _, n := range rl {
				s, ok := n.(string)
				if !ok {
					return m
				}
				if !seen[s] {
					seen[s] = true
					required = append(required, s)
				}
			}
		}
	}
	if anyProps {
		out["properties"] = props
	}
	if anyRequired {
		if required == nil {
			required = []any{}
		}
		out["required"] = required
	}
	if typed {
		out["type"] = "object"
	}
	return out
}

// finishRoot attaches the recursive definitions and applies the top-level rules.
func (r *resolver) finishRoot(out any, defs map[string]any) (any, error) {
	if out == true {
		out = map[string]any{}
	}
	root, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema accepts nothing (false): tool arguments can never be valid")
	}
	if len(defs) > 0 {
		root[r.defsKey] = defs
	}
	if r.schemaURL != "" {
		root["$schema"] = r.schemaURL
	}
	t, typed := root["type"]
	if !typed {
		objectish := !hasConstraints(root)
		for k := range root {
			if KeywordOf(k).Object {
				objectish = true
			}
		}
		if !hasConstraints(root) {
			if _, ok := root["properties"]; !ok {
				root["properties"] = map[string]any{}
			}
		}
		if objectish {
			root["type"] = "object"
		}
		return root, nil
	}
	switch t := t.(type) {
	case string:
		if t != "object" {
			return nil, fmt.Errorf(`schema "type" must be "object", got %q: tool arguments are always an object`, t)
		}
	case []any:
		if !slices.Contains(t, any("object")) {
			return nil, fmt.Errorf(`schema "type" must include "object": tool arguments are always an object`)
		}
	default:
		return nil, fmt.Errorf(`schema "type" must be "object", got %s`, jsonKind(t))
	}
	return root, nil
}

// spend charges n bytes of output against the budget.
func (r *resolver) spend(n int) error {
	r.budget -= n
	if r.budget < 0 {
		return fmt.Errorf("resolved schema would exceed %d bytes: %w", MaxOutputBytes, ErrTooComplex)
	}
	return nil
}

// spendValue charges a verbatim value by its approximate encoded size.
func (r *resolver) spendValue(v any) error {
	switch x := v.(type) {
	case string:
		return r.spend(len(x) + 2)
	case json.Number:
		return r.spend(len(x))
	case []any:
		if err := r.spend(2); err != nil {
			return err
		}
		for _, e := range x {
			if err := r.spendValue(e); err != nil {
				return err
			}
		}
	case map[string]any:
		if err := r.spend(2); err != nil {
			return err
		}
		for k, e := range x {
			if err := r.spend(len(k) + 3); err != nil {
				return err
			}
			if err := r.spendValue(e); err != nil {
				return err
			}
		}
	default:
		return r.spend(5)
	}
	return nil
}

// defName derives a definition name from the last token of a pointer.
func defName(ptr string) string {
	tok := ptr[strings.LastIndexByte(ptr, '/')+1:]
	tok, _ = unescapeToken(tok)
	var b strings.Builder
	for _, c := range tok {
		if c == '_' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "schema"
	}
	return b.String()
}

func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func unescapeToken(tok string) (string, error) {
	for i := 0; i < len(tok); i++ {
		if tok[i] == '~' && (i+1 == len(tok) || (tok[i+1] != '0' && tok[i+1] != '1')) {
			return "", fmt.Errorf("bad JSON pointer escape in %q", tok)
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"), nil
}

// pointerFragment renders a canonical pointer as a URI fragment.
func pointerFragment(ptr string) string {
	return (&url.URL{Fragment: ptr}).EscapedFragment()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
