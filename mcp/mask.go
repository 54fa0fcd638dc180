package mcp

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// minMaskedPart is the length below which an expanded ${VAR} value, host or
// path is not replaced wherever it occurs in a message, only as part of the
// whole URL: short strings (a port, "v1") occur in unrelated text, and a
// secret is longer.
const minMaskedPart = 4

// urlMask rewrites text that may carry a remote server's URL as expanded
// (with its ${VAR} references resolved, secrets included) so that it shows
// the URL as written in the config (Spec.Shown) instead. Every
// message and log value package mcp builds for a remote session goes through
// one: errors of net/http (which name the request URL), of mcp-go (which
// quote bodies and endpoints), and mcp-go's own log lines.
//
// It replaces the configured URL in the forms it takes in messages (as
// configured, as Go re-encodes it, without its query), the expanded host and
// path where they differ from the written ones, and each ${VAR}'s expanded
// value (also percent-encoded) by the reference as written, so that a URL
// the server derived from the configured one (an SSE message endpoint under
// the same secret path, a redirect's target) does not show the secret
// either. A nil *urlMask changes nothing.
type urlMask struct {
	// shown is the configured URL for display: as written, without
	// userinfo and query (stripURL).
	shown string
	r     *strings.Replacer // nil: nothing to replace
}

// newURLMask is the mask of srv's URL; srv.Shown is the URL as written ("":
// unknown, then the expanded URL is shown, without userinfo and query).
func newURLMask(srv Spec) *urlMask {
	written, expanded := srv.Shown, srv.URL
	if written == "" {
		written = expanded
	}
	m := &urlMask{shown: stripURL(written)}
	var pairs [][2]string
	add := func(old, repl string, minLen int) {
		if old != repl && len(old) >= minLen {
			pairs = append(pairs, [2]string{old, repl})
		}
	}
	for _, form := range urlForms(expanded) {
		add(form, m.shown, 1)
	}
	w, e := splitURL(written), splitURL(expanded)
	add(e.userinfo, w.userinfo, minMaskedPart)
	add(e.host, w.host, minMaskedPart)
	add(hostname(e.host), hostname(w.host), minMaskedPart)
	add(e.path, w.path, minMaskedPart)
	if u, err := url.Parse(expanded); err == nil {
		add(u.Path, w.path, minMaskedPart)
		add(u.EscapedPath(), w.path, minMaskedPart)
	}
	add(e.query, w.query, minMaskedPart)
	for _, rv := range refValues(written, expanded) {
		for _, v := range valueForms(rv.value) {
			add(v, rv.ref, minMaskedPart)
		}
	}
	if len(pairs) == 0 {
		return m
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: longest first, so a whole URL wins over a part of it.
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return cmp.Compare(len(b[0]), len(a[0])) })
	flat := make([]string, 0, 2*len(pairs))
	seen := map[string]bool{}
	for _, p := range pairs {
		if !seen[p[0]] {
			seen[p[0]] = true
			flat = append(flat, p[0], p[1])
		}
	}
	m.r = strings.NewReplacer(flat...)
	return m
}

// text is s with the expanded URL and its parts replaced.
func (m *urlMask) text(s string) string {
	if m == nil || m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// err is err's message for display: a URL that net/http names in it (a
// *url.Error in the chain) loses userinfo and query, which for a URL the
// server handed out (an SSE message endpoint) hold a session id, then the
// whole message is masked (text).
func (m *urlMask) err(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *ue
		c.URL = stripURL(ue.URL)
		msg = strings.ReplaceAll(msg, ue.Error(), c.Error())
		msg = strings.ReplaceAll(msg, ue.URL, c.URL)
	}
	return m.text(msg)
}

// requestURL is a request's URL for display: the configured URL as shown,
// or another one (an SSE endpoint, a redirect's target) without userinfo
// and query, masked.
func (m *urlMask) requestURL(u *url.URL) string {
	return m.text(stripURL(u.String()))
}

// configured is the configured URL for display.
func (m *urlMask) configured() string {
	if m == nil {
		return ""
	}
	return m.shown
}

// urlForms are the strings a URL appears as in messages: as given, without
// query, re-encoded by net/url (what net/http's errors show, with a
// password as "***").
func urlForms(raw string) []string {
	forms := []string{raw, stripURL(raw)}
	if u, err := url.Parse(raw); err == nil {
		forms = append(forms, u.String(), u.Redacted(), stripURL(u.String()), redactURL(u))
	}
	return forms
}

// valueForms are the strings an expanded value appears as in a URL or an
// error: raw, percent-encoded, and decoded.
func valueForms(v string) []string {
	forms := []string{v, url.PathEscape(v), url.QueryEscape(v), (&url.URL{Path: v}).EscapedPath()}
	if d, err := url.PathUnescape(v); err == nil {
		forms = append(forms, d)
	}
	if d, err := url.QueryUnescape(v); err == nil {
		forms = append(forms, d)
	}
	return forms
}

// urlParts are a URL's pieces, split as text (no decoding, no
// re-encoding), so that a URL as written, with ${VAR} references that
// net/url would reject or escape, splits as well.
type urlParts struct {
	userinfo, host, path, query string
}

func splitURL(raw string) urlParts {
	var p urlParts
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+len("://"):]
	}
	rest, p.query, _ = strings.Cut(rest, "?")
	authority, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		p.path = "/" + path
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		p.userinfo, authority = authority[:at], authority[at+1:]
	}
	p.host = authority
	return p
}

// hostname is host without its port.
func hostname(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i >= 0 {
			return host[:i+1]
		}
		return host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		return host[:i]
	}
	return host
}

// stripURL is raw without userinfo and query (SSE endpoints carry session
// ids there, some servers take keys), as text: no part is decoded or
// re-encoded, so a URL as written keeps its ${VAR} references. Something
// that is not a URL at all loses everything from the first '?' and
// everything up to the last '@' before its first '/'.
func stripURL(raw string) string {
	s, _, _ := strings.Cut(raw, "?")
	authority := 0
	if i := strings.Index(s, "://"); i >= 0 {
		authority = i + len("://")
	}
	end := len(s)
	if i := strings.IndexByte(s[authority:], '/'); i >= 0 {
		end = authority + i
	}
	if at := strings.LastIndexByte(s[authority:end], '@'); at >= 0 {
		s = s[:authority] + s[authority+at+1:]
	}
	return s
}

// redactURL is u without userinfo and query, re-encoded by net/url.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	return c.String()
}

// refValue is one ${VAR} reference as written and the text it expanded to.
type refValue struct {
	ref, value string
}

// refValues recovers what each ${VAR} reference of written expanded to in
// expanded, by matching written's literal text (see isVarRef) against
// expanded. When a value could be split more than
// one way (two references side by side), the split is one of them; nil if
// written has no reference or expanded does not match it.
func refValues(written, expanded string) []refValue {
	var refs []string
	var re strings.Builder
	re.WriteString(`(?s)\A`)
	var lit strings.Builder
	flush := func() {
		re.WriteString(regexp.QuoteMeta(lit.String()))
		lit.Reset()
	}
	for i := 0; i < len(written); i++ {
		c := written[i]
		if c != '$' || i+1 >= len(written) {
			lit.WriteByte(c)
			continue
		}
		switch written[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
			continue
		case '{':
		default:
			lit.WriteByte(c)
			continue
		}
		end := strings.IndexByte(written[i:], '}')
		if end < 0 {
			lit.WriteString(written[i:])
			break
		}
		ref := written[i : i+end+1]
		// A reference the config would not expand (malformed) is literal.
		if !isVarRef(ref) {
			lit.WriteString(ref)
		} else {
			flush()
			re.WriteString(`(.*?)`)
			refs = append(refs, ref)
		}
		i += end
	}
	flush()
	re.WriteString(`\z`)
	if len(refs) == 0 {
		return nil
	}
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil
	}
	match := rx.FindStringSubmatch(expanded)
	if match == nil {
		return nil
	}
	out := make([]refValue, len(refs))
	for i, ref := range refs {
		out[i] = refValue{ref: ref, value: match[i+1]}
	}
	return out
}

// isVarRef reports whether ref ("${...}") is a reference the config
// expands: ${NAME} or ${NAME:-default}, NAME made of ASCII letters, digits
// and "_" and not starting with a digit, the default holding no "${". This
// is the grammar of schema.Expand; a config with any other "${" does not
// load, so a spec never holds one, but a mask that took one for text would
// only show less.
func isVarRef(ref string) bool {
	inner, ok := strings.CutPrefix(ref, "${")
	if !ok {
		return false
	}
	if inner, ok = strings.CutSuffix(inner, "}"); !ok || strings.Contains(inner, "}") {
		return false
	}
	name, def, _ := strings.Cut(inner, ":-")
	if name == "" || strings.Contains(def, "${") {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// maskSink is the log sink of a remote session: every message and value
// (including the error of Error, and those of mcp-go's own log lines, which
// reach the session's logger through logr.ToSlogHandler) passes through
// mask before the sink it wraps sees it.
type maskSink struct {
	sink logr.LogSink
	mask *urlMask
}

var _ logr.CallDepthLogSink = maskSink{}

// maskLogger is log with its sink wrapped in a maskSink.
func maskLogger(log logr.Logger, m *urlMask) logr.Logger {
	sink := log.GetSink()
	if sink == nil || m == nil {
		return log
	}
	// One more frame (ours) between the caller and the sink.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return log.WithSink(maskSink{sink: sink, mask: m})
}

func (s maskSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.sink.Init(info)
}

func (s maskSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s maskSink) Info(level int, msg string, kv ...any) {
	s.sink.Info(level, s.mask.text(msg), s.values(kv)...)
}

func (s maskSink) Error(err error, msg string, kv ...any) {
	if err != nil {
		err = errors.New(s.mask.err(err))
	}
	s.sink.Error(err, s.mask.text(msg), s.values(kv)...)
}

func (s maskSink) WithValues(kv ...any) logr.LogSink {
	return maskSink{sink: s.sink.WithValues(s.values(kv)...), mask: s.mask}
}

func (s maskSink) WithName(name string) logr.LogSink {
	return maskSink{sink: s.sink.WithName(name), mask: s.mask}
}

func (s maskSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return maskSink{sink: cd.WithCallDepth(depth), mask: s.mask}
	}
	return s
}

// values masks the values (odd positions) of a key/value list.
func (s maskSink) values(kv []any) []any {
	out := slices.Clone(kv)
	for i := 1; i < len(out); i += 2 {
		out[i] = s.value(out[i])
	}
	return out
}

// value masks one logged value: text as text; numbers, booleans, times and
// durations as they are; anything else by its printed form, kept as it was
// if masking changes nothing.
func (s maskSink) value(v any) any {
	switch x := v.(type) {
	case nil, bool, time.Duration, time.Time:
		return v
	case string:
		return s.mask.text(x)
	case error:
		return s.mask.err(x)
	case fmt.Stringer:
		return s.mask.text(x.String())
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return v
	}
	printed := fmt.Sprint(v)
	if masked := s.mask.text(printed); masked != printed {
		return masked
	}
	return v
}
