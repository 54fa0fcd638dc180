package defs

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/registry"
)

// Ranking: BM25F (BM25 over weighted fields) with the usual constants.
// Each term's frequency in a field is normalized by the field's length
// against its average, weighted by the field's weight and summed over the
// fields, then saturated with k1.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Fields of a tool that the search ranks on, and their weights: a word of
// the tool's name counts most, one of its description less, one that only
// its parameters' descriptions say least. The server's name is a field of
// its own, so "memory" finds the memory server's tools without outweighing
// what they do.
const (
	fieldName = iota // the tool's own name and the tool part of its id
	fieldTitle
	fieldDescription
	fieldParams // parameter names, nested ones included
	fieldServer // the source's name and its tools' common name prefix
	fieldObject // the words of the name after its prefix and action: what it acts on
	fieldAction // the action class of the name's verb (actionClasses), as "@class"
	// fieldParamText is the parameters' descriptions and enum strings:
	// what a tool can do often shows there alone (a "state" of "open" or
	// "closed", a "subCommand" of "undo", a "resourceType" such as "pods").
	fieldParamText
	numFields
)

func fieldWeight(f int) float64 {
	switch f {
	case fieldName:
		return 3
	case fieldTitle:
		return 2
	case fieldParams:
		return 1.5
	case fieldParamText:
		return 0.5
	default: // fieldDescription, fieldServer, fieldObject, fieldAction
		return 1
	}
}

// projectWeight scales the score of a tool of a project's server (a
// source in Policy.Project): a repository's settings choose its servers and
// their descriptions, so on a tie or a near-tie the user's own tools (and
// the built-ins) come first; a project tool must match clearly better to
// rank above them.
const projectWeight = 0.8

// Scopes of a match: where its tool comes from.
const (
	ScopeBuiltin = "builtin"
	ScopeUser    = "user"
	ScopeProject = "project"
)

// maxParamDepth bounds how deep parameter names are collected from a
// schema ("entities" → items → "name" is depth 2).
const maxParamDepth = 3

// Match is one tool a search found, best first.
type Match struct {
	ID string `json:"name"`
	// Server is the source of the tool ("builtin" for FreeCode's own),
	// Scope where that server is configured: ScopeUser, ScopeProject or
	// ScopeBuiltin.
	Server      string   `json:"server"`
	Scope       string   `json:"scope"`
	Description string   `json:"description"`
	Params      []string `json:"parameters,omitempty"`
	Score       float64  `json:"score"`
}

// Index ranks a fixed set of tools for free-text queries. It is immutable
// once built and safe for concurrent use.
type Index struct {
	docs     []indexDoc
	postings map[string][]posting
	exact    map[string][]int // lower-cased id and name → docs (a name can repeat across servers)
	// named maps a term of a source's name to the sources it names: a
	// query that names a server favours its tools (serverNamedWeight).
	named map[string][]string
}

type indexDoc struct {
	id, description string
	server, scope   string
	weight          float64 // 1, or projectWeight
	params          []string
}

// posting is one document's saturated-ready term frequency: the BM25F
// weighted, length-normalized frequency of a term in the document.
type posting struct {
	doc int32
	tf  float32
}

// NewIndex indexes entries: their id, name, title, description and
// parameter names. Every source is taken as the user's.
func NewIndex(entries []registry.Entry) *Index { return NewScopedIndex(entries, nil) }

// NewScopedIndex is NewIndex where the sources in project are a project's
// servers: their tools rank with projectWeight, and their matches say so.
// A description counts each of its terms once: repeating a word does not
// make a tool match it better.
func NewScopedIndex(entries []registry.Entry, project []string) *Index {
	ix := &Index{exact: make(map[string][]int, 2*len(entries)), named: make(map[string][]string)}
	// Field lengths first: BM25 normalizes by the average.
	type fieldTerms [numFields][]int32
	terms := make([]fieldTerms, len(entries))
	var total [numFields]float64
	v := newVocab()
	type paramTerms struct {
		names       []string
		terms, text []int32
	}
	params := make(map[string]paramTerms) // by schema bytes: tools share schemas
	ctx := sourceContexts(entries, v)
	var seen []int32 // by term: the last doc (+1) whose description had it
	for i, e := range entries {
		t := e.Tool
		name := t.Name
		if name == "" {
			name = t.ID
		}
		pt, ok := params[string(e.Schema)]
		if !ok {
			var text []string
			pt.names, text = schemaWords(e.Schema)
			for _, n := range pt.names {
				pt.terms = v.add(pt.terms, n)
			}
			for _, s := range text {
				pt.text = v.add(pt.text, s)
			}
			slices.Sort(pt.text)
			pt.text = slices.Compact(pt.text)
			params[string(e.Schema)] = pt
		}
		ps := pt.names
		doc := indexDoc{id: t.ID, description: describe(t), params: ps, server: t.Source, scope: ScopeUser, weight: 1}
		switch {
		case t.Source == registry.SourceBuiltin || t.Source == "":
			doc.server, doc.scope = registry.SourceBuiltin, ScopeBuiltin
		case slices.Contains(project, t.Source):
			doc.scope, doc.weight = ScopeProject, projectWeight
		}
		ix.docs = append(ix.docs, doc)
		if doc.scope != ScopeBuiltin && (i == 0 || entries[i-1].Tool.Source != t.Source) {
			for _, term := range Terms(t.Source) {
				if !slices.Contains(ix.named[term], t.Source) {
					ix.named[term] = append(ix.named[term], t.Source)
				}
			}
		}
		lowerID := strings.ToLower(t.ID)
		ix.exact[lowerID] = append(ix.exact[lowerID], i)
		if lower := strings.ToLower(name); lower != lowerID {
			ix.exact[lower] = append(ix.exact[lower], i)
		}
		toolPart := t.ID
		if t.Source != "" && t.Source != registry.SourceBuiltin {
			if _, after, ok := strings.Cut(strings.TrimPrefix(t.ID, "mcp__"), "__"); ok {
				toolPart = after
			}
		}
		ft := &terms[i]
		ft[fieldName] = v.add(nil, name)
		if toolPart != name {
			// A name the id had to change (sanitized): both spellings.
			ft[fieldName] = v.add(ft[fieldName], toolPart)
		}
		ft[fieldTitle] = v.add(nil, t.Title)
		// A description counts each of its terms once.
		ft[fieldDescription] = v.add(nil, t.Description)
		seen = slices.Grow(seen, len(v.terms)-len(seen))[:len(v.terms)]
		ft[fieldDescription] = slices.DeleteFunc(ft[fieldDescription], func(id int32) bool {
			dup := seen[id] == int32(i+1)
			seen[id] = int32(i + 1)
			return dup
		})
		ft[fieldParams] = pt.terms
		ft[fieldParamText] = pt.text
		var prefixes map[string]bool
		if t.Source != registry.SourceBuiltin {
			sc := ctx[t.Source]
			prefixes = sc.prefixes
			ft[fieldServer] = append(v.add(nil, t.Source), sc.terms...)
		}
		action, object := splitName(name, prefixes)
		for _, c := range actionClasses(action) {
			ft[fieldAction] = append(ft[fieldAction], v.id("@"+c))
		}
		for _, w := range object {
			ft[fieldObject] = v.add(ft[fieldObject], w)
		}
		if action != "" && t.Source != registry.SourceBuiltin {
			// The name's verb counts as its action class, not as a
			// word of the name: "find_projects" is not the answer to
			// every "find …", what it finds decides.
			a := v.add(nil, action)
			ft[fieldName] = slices.DeleteFunc(ft[fieldName], func(x int32) bool { return slices.Contains(a, x) })
		}
		for f := range numFields {
			total[f] += float64(len(ft[f]))
		}
	}
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(total[f]/float64(max(len(entries), 1)), 1)
	}
	// Each doc's weighted frequencies, densely by term, then its postings.
	postings := make([][]posting, len(v.terms))
	weighted := make([]float64, len(v.terms))
	var touched []int32
	for i := range terms {
		for f := range numFields {
			n := len(terms[i][f])
			if n == 0 {
				continue
			}
			norm := fieldWeight(f) / (1 - bm25B + bm25B*float64(n)/avg[f])
			for _, id := range terms[i][f] {
				if weighted[id] == 0 {
					touched = append(touched, id)
				}
				weighted[id] += norm
			}
		}
		for _, id := range touched {
			postings[id] = append(postings[id], posting{doc: int32(i), tf: float32(weighted[id])})
			weighted[id] = 0
		}
		touched = touched[:0]
	}
	ix.postings = make(map[string][]posting, len(v.terms))
	for id, ps := range postings {
		if len(ps) > 0 {
			ix.postings[v.terms[id]] = ps
		}
	}
	return ix
}

// Len is the number of tools indexed.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns at most limit tools for query, best first; only tools
// sharing at least one term with it or with a synonym of its words. A
// query that is exactly a tool's id or name returns that tool first.
func (ix *Index) Search(query string, limit int) []Match {
	return ix.Rank(query, limit, true)
}

// Rank is Search, with the synonyms of the query's words (expand) or
// without: BM25F alone.
func (ix *Index) Rank(query string, limit int, expand bool) []Match {
	if limit <= 0 || len(ix.docs) == 0 {
		return nil
	}
	// Dense scores: a query's terms often match thousands of tools.
	scores := make([]float64, len(ix.docs))
	var ranked []int32
	n := float64(len(ix.docs))
	for term, weight := range queryTerms(query, expand, ix.postings) {
		ps := ix.postings[term]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			if scores[p.doc] == 0 {
				ranked = append(ranked, p.doc)
			}
			tf := float64(p.tf)
			scores[p.doc] += weight * idf * tf * (bm25K1 + 1) / (tf + bm25K1)
		}
	}
	var named []string
	if expand {
		for _, t := range Terms(query) {
			named = append(named, ix.named[t]...)
		}
	}
	for _, d := range ranked {
		scores[d] *= ix.docs[d].weight
		if len(named) > 0 && slices.Contains(named, ix.docs[d].server) {
			scores[d] *= serverNamedWeight
		}
	}
	if exact := ix.exact[strings.ToLower(strings.TrimSpace(query))]; len(exact) > 0 {
		top := 0.0
		for _, d := range ranked {
			top = max(top, scores[d])
		}
		for _, i := range exact {
			if scores[i] == 0 {
				ranked = append(ranked, int32(i))
			}
			scores[i] = top + 1
		}
	}
	better := func(a, b int32) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		// On a tie the user's tools and the built-ins before a project's.
		if pa, pb := ix.docs[a].scope == ScopeProject, ix.docs[b].scope == ScopeProject; pa != pb {
			if pa {
				return 1
			}
			return -1
		}
		return strings.Compare(ix.docs[a].id, ix.docs[b].id)
	}
	// The best limit of them: a bounded selection, then a sort of those.
	if len(ranked) > limit {
		top := make([]int32, 0, limit+1)
		for _, d := range ranked {
			if len(top) == limit && better(d, top[limit-1]) >= 0 {
				continue
			}
			at, _ := slices.BinarySearchFunc(top, d, better)
			top = slices.Insert(top, at, d)
			if len(top) > limit {
				top = top[:limit]
			}
		}
		ranked = top
	} else {
		slices.SortFunc(ranked, better)
	}
	out := make([]Match, len(ranked))
	for i, d := range ranked {
		doc := ix.docs[d]
		// Three decimals say all a score can: how much better one match is.
		out[i] = Match{ID: doc.id, Server: doc.server, Scope: doc.scope, Description: doc.description, Params: doc.params,
			Score: math.Round(scores[d]*1000) / 1000}
	}
	return out
}

// synonymWeight is what a term that only a synonym of the query's words
// brought in counts, against 1 for the query's own. The synonyms are
// written for what tools call the thing a request names ("folder":
// "directory"), so they count nearly as the word itself; on the tune
// tasks top-1 and MRR are flat from 0.7 to 1 and lower below.
const synonymWeight = 0.8

// wordnetSynonymWeight and wordnetHypernymWeight are what a term counts
// that WordNet (wordnet.go) relates to a query's word no tool uses: a
// word sharing one of its senses, and one naming what it is a kind of.
// Words some tool uses are not expanded: on the tune tasks, expanding
// them brought more confusable tools than right ones.
const (
	wordnetSynonymWeight  = 0.3
	wordnetHypernymWeight = 0.15
)

// serverNamedWeight scales the score of a tool whose server the query
// names ("close an issue on github", "create a database in notion").
const serverNamedWeight = 2

// queryTerms returns the terms of query with their weights: its own terms
// 1 and, when expand is set, the terms of their synonyms synonymWeight
// (unless the query has them itself) and WordNet's terms for its own terms
// that known (the index's postings) does not hold.
func queryTerms(query string, expand bool, known map[string][]posting) map[string]float64 {
	out := make(map[string]float64)
	for _, w := range words(query) {
		w = strings.ToLower(w)
		if english.IsStopWord(w) {
			continue
		}
		out[english.Stem(w, false)] = 1
	}
	if !expand {
		return out
	}
	// The query's action: its first word that names one. A word of
	// several classes ("open": a pull request, a page, a file) brings each
	// at a share of the weight.
	for _, w := range words(query) {
		if cs := actionClasses(strings.ToLower(w)); len(cs) > 0 {
			for _, c := range cs {
				out["@"+c] = 1 / float64(len(cs))
			}
			break
		}
	}
	for _, w := range words(query) {
		for _, syn := range synonyms(strings.ToLower(w)) {
			for _, t := range Terms(syn) {
				if _, own := out[t]; !own {
					out[t] = synonymWeight
				}
			}
		}
	}
	// WordNet's words for the query's own terms that no tool uses.
	own := make([]string, 0, len(out))
	for t := range out {
		if !strings.HasPrefix(t, "@") {
			own = append(own, t)
		}
	}
	wn := wordnet()
	for _, t := range own {
		if len(known[t]) > 0 {
			continue
		}
		e := wn[t]
		for _, s := range e.synonyms {
			if _, ok := out[s]; !ok {
				out[s] = wordnetSynonymWeight
			}
		}
		for _, h := range e.hypernyms {
			if _, ok := out[h]; !ok {
				out[h] = wordnetHypernymWeight
			}
		}
	}
	return out
}

// synonyms returns words that tool descriptions use for what word says in
// a request: everyday words for files, directories, records and actions on
// them. It was written against the vocabulary of the servers people run
// most (the filesystem and memory servers among them: "person" →
// "entity", "modified" → "info"), so it helps them most; the bench reports
// recall with and without it.
func synonyms(word string) []string {
	switch word {
	case "folder", "folders", "dir", "dirs":
		return []string{"directory"}
	case "remove", "erase", "forget", "drop", "rm":
		return []string{"delete"}
	case "make", "new", "add", "mkdir":
		return []string{"create"}
	case "show", "view", "display", "contents", "cat", "open", "print":
		return []string{"read", "get"}
	case "save", "store", "remember", "record":
		return []string{"write", "create", "add"}
	case "find", "lookup", "look", "locate", "grep", "query":
		return []string{"search"}
	case "rename", "mv", "relocate":
		return []string{"move"}
	case "modify", "change", "update", "patch", "replace":
		return []string{"edit"}
	case "fetch", "retrieve", "obtain", "return":
		return []string{"get"}
	case "ls", "enumerate":
		return []string{"list"}
	case "person", "people", "thing", "things", "fact", "facts":
		return []string{"entity", "observation"}
	case "picture", "photo", "png", "jpeg", "jpg":
		return []string{"image"}
	case "size", "modified", "permissions", "metadata":
		return []string{"info"}
	}
	return nil
}

// describe is what a tool's definition says it does: its description, or
// its title when it has none (as buildDefs does).
func describe(t registry.Tool) string {
	if t.Description != "" {
		return t.Description
	}
	return t.Title
}

// Terms splits s into the terms the index compares: words split at
// punctuation, underscores, dashes and camelCase humps, lower-cased,
// without English stop words, stemmed (Snowball English), so "listing",
// "lists" and "list_directory" share "list".
func Terms(s string) []string {
	var out []string
	for w := range eachWord(s) {
		if t := term(w); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// term is a word's term: lower-cased and stemmed, or "" for a stop word.
func term(w string) string {
	t := strings.ToLower(w)
	if english.IsStopWord(t) {
		return ""
	}
	return english.Stem(t, false)
}

// vocab interns the terms of an index being built. It maps each word as
// written to its term's id, so that a word the tools repeat is stemmed
// once (the stemmer would be most of what indexing costs), and the build
// counts terms in slices by id rather than in maps by string.
type vocab struct {
	words map[string]int32 // a word as written → its term's id, or -1 for a stop word
	ids   map[string]int32 // a term → its id
	terms []string         // id → term
}

func newVocab() *vocab {
	return &vocab{words: make(map[string]int32, 4096), ids: make(map[string]int32, 4096)}
}

// id returns term's id, giving it one if it has none.
func (v *vocab) id(term string) int32 {
	if id, ok := v.ids[term]; ok {
		return id
	}
	id := int32(len(v.terms))
	v.ids[term] = id
	v.terms = append(v.terms, term)
	return id
}

// add appends the ids of the terms of s (Terms) to dst.
func (v *vocab) add(dst []int32, s string) []int32 {
	for w := range eachWord(s) {
		id, ok := v.words[w]
		if !ok {
			id = -1
			if t := term(w); t != "" {
				id = v.id(t)
			}
			v.words[w] = id
		}
		if id >= 0 {
			dst = append(dst, id)
		}
	}
	return dst
}

// words splits s at every rune that is neither a letter nor a digit, and
// inside a word at a lower-to-upper case change ("readFile") and before
// the last capital of a run followed by a lower-case letter ("HTTPServer":
// "HTTP", "Server").
func words(s string) []string { return slices.Collect(eachWord(s)) }

// eachWord yields the words of s (words) without collecting them.
func eachWord(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := -1 // byte offset of the current word
		var prev rune
		for i := 0; i < len(s); {
			r, size := rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				if start >= 0 {
					if !yield(s[start:i]) {
						return
					}
					start = -1
				}
				i += size
				continue
			}
			switch {
			case start < 0:
				start = i
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				if !yield(s[start:i]) {
					return
				}
				start = i
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+size < len(s) && nextIsLower(s[i+size:]):
				if !yield(s[start:i]) {
					return
				}
				start = i
			}
			prev = r
			i += size
		}
		if start >= 0 {
			yield(s[start:])
		}
	}
}

// nextIsLower says whether s starts with a lower-case letter.
func nextIsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}

// schemaWords returns the parameter names of a canonical input schema
// (its properties and, to maxParamDepth, theirs, through items and the
// branches of anyOf/oneOf/allOf) and what it says of those parameters:
// their descriptions and the strings of their enums. Each comes once, in
// order of first appearance.
func schemaWords(schema []byte) (names, text []string) {
	if len(schema) == 0 {
		return nil, nil
	}
	v, err := jsonschema.Decode(schema)
	if err != nil {
		return nil, nil
	}
	seen := make(map[string]bool)
	seenText := make(map[string]bool)
	addText := func(s string) {
		if s != "" && !seenText[s] {
			seenText[s] = true
			text = append(text, s)
		}
	}
	var walk func(node any, depth int)
	walk = func(node any, depth int) {
		m, ok := node.(map[string]any)
		if !ok || depth > maxParamDepth {
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
			for _, k := range keys {
				walk(props[k], depth+1)
			}
		}
		if depth > 1 {
			// A parameter's own words; the schema's top level
			// describes the tool, which its description already does.
			if d, ok := m["description"].(string); ok {
				addText(d)
			}
			if e, ok := m["enum"].([]any); ok {
				for _, x := range e {
					if s, ok := x.(string); ok {
						addText(s)
					}
				}
			}
		}
		walk(m["items"], depth)
		for _, key := range []string{"anyOf", "oneOf", "allOf"} {
			if bs, ok := m[key].([]any); ok {
				for _, b := range bs {
					walk(b, depth)
				}
			}
		}
	}
	walk(v, 1)
	return names, text
}

// sourceContext is what a source's tools share: the words most of its
// tool names start with (a prefix such as "browser_", "slack_", "API-").
// They are the server's identity, indexed with its name: a query that
// names them favours its tools, and they are not taken for the action.
type sourceContext struct {
	prefixes map[string]bool // lower-cased words
	terms    []int32         // their terms' ids
}

// minContextTools is how many tools a source needs for its shared words
// to say something; contextShare the share of its tools that must have a
// word for it to be the source's.
const (
	minContextTools = 3
	contextShare    = 0.5
)

// sourceContexts returns each source's context.
func sourceContexts(entries []registry.Entry, v *vocab) map[string]sourceContext {
	type counts struct {
		n     int
		first map[string]int
	}
	by := map[string]*counts{}
	for _, e := range entries {
		t := e.Tool
		if t.Source == "" || t.Source == registry.SourceBuiltin {
			continue
		}
		c := by[t.Source]
		if c == nil {
			c = &counts{first: map[string]int{}}
			by[t.Source] = c
		}
		c.n++
		name := t.Name
		if name == "" {
			name = t.ID
		}
		for w := range eachWord(name) {
			c.first[strings.ToLower(w)]++
			break
		}
	}
	out := make(map[string]sourceContext, len(by))
	for src, c := range by {
		sc := sourceContext{prefixes: map[string]bool{}}
		if c.n >= minContextTools {
			for w, k := range c.first {
				if float64(k) >= contextShare*float64(c.n) && actionClasses(w) == nil {
					sc.prefixes[w] = true
					sc.terms = v.add(sc.terms, w)
				}
			}
			slices.Sort(sc.terms)
			sc.terms = slices.Compact(sc.terms)
		}
		out[src] = sc
	}
	return out
}

// splitName splits a tool name into its action and its object: the words
// after the source's prefixes ("browser_take_screenshot": "take",
// "screenshot"; "API-post-page": "post", "page"). The action is the first
// of them when it names one (actionClasses), else "" and every word is the
// object.
func splitName(name string, prefixes map[string]bool) (action string, object []string) {
	ws := words(name)
	for len(ws) > 1 && prefixes[strings.ToLower(ws[0])] {
		ws = ws[1:]
	}
	if len(ws) > 0 && actionClasses(strings.ToLower(ws[0])) != nil {
		return strings.ToLower(ws[0]), ws[1:]
	}
	return "", ws
}

// actionClasses returns the classes of actions a verb names, as users and
// tool names say them: "open", "file", "add" and "new" create; "kill" and
// "terminate" stop; "capture" and "screenshot" capture. A word of no class
// returns nil.
func actionClasses(word string) []string {
	switch word {
	case "create", "add", "new", "make", "file", "post", "insert", "init", "initialize", "generate", "submit", "register":
		return []string{"create"}
	case "open":
		return []string{"create", "navigate", "read"}
	case "get", "read", "retrieve", "show", "view", "see", "fetch", "describe", "display", "print", "inspect", "check", "explain":
		return []string{"read"}
	case "list", "ls", "enumerate":
		return []string{"list"}
	case "update", "edit", "patch", "modify", "change", "set", "rename", "replace", "upgrade":
		return []string{"update"}
	case "delete", "remove", "drop", "forget", "erase", "uninstall", "clean", "cleanup", "clear", "destroy", "purge":
		return []string{"delete"}
	case "stop", "kill", "terminate", "halt", "cancel", "abort", "end", "close":
		return []string{"stop"}
	case "capture", "screenshot", "snapshot", "take", "heapsnapshot", "screencast", "record":
		return []string{"capture"}
	case "search", "find", "lookup", "look", "query", "locate", "grep", "seek":
		return []string{"search"}
	case "go", "navigate", "visit", "browse", "goto":
		return []string{"navigate"}
	case "run", "execute", "exec", "evaluate", "eval", "invoke":
		return []string{"run"}
	case "start", "begin", "launch":
		return []string{"start"}
	case "send", "reply", "message", "notify", "tell":
		return []string{"send"}
	case "install", "deploy", "apply":
		return []string{"install"}
	}
	return nil
}
