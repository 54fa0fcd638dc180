package hosts

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/freecode/freecode/schema"
)

// Literal is a value of a server written out in full, not taken from a
// variable: what a host's file may hold a token in. Every env and header
// value written out is one; in a url or a command line only what looks
// like a credential is (see secretsInURL, secretsInCommand).
type Literal struct {
	// Kind is "env", "header", "url" or "command".
	Kind string
	// Key names the value: the variable's or header's name; in a url
	// "query NAME" or "password" (of user:password@); in a command line
	// the flag it is the value of ("--api-key"), "url query NAME" or "url
	// password" of a url word, or "argument N" (N counting from the
	// program, 0).
	Key string
	// Secret says that the name or the value looks like a credential's
	// (see looksSecret); always for a url's or a command line's.
	Secret bool
}

func (l Literal) String() string { return l.Kind + " " + l.Key }

// Literals returns the values of s written out that refer to no
// variable: env, then headers, each sorted by name, then those of its url
// or command line that look like credentials, in order.
func (s Server) Literals() []Literal {
	var out []Literal
	for _, kv := range []struct {
		kind string
		m    map[string]string
	}{{"env", s.Env}, {"header", s.Headers}} {
		for _, k := range slices.Sorted(mapsKeys(kv.m)) {
			if v := kv.m[k]; v != "" && !hasReference(v) {
				out = append(out, Literal{Kind: kv.kind, Key: k, Secret: looksSecret(k, v)})
			}
		}
	}
	s.rewriteSecrets(func(l Literal, v string) string {
		out = append(out, l)
		return v
	})
	return out
}

// rewriteSecrets replaces each value of s's url or command line that
// looks like a credential (a Literal of kind "url" or "command") with what
// repl returns for it, given its value as written.
func (s *Server) rewriteSecrets(repl func(l Literal, v string) string) {
	switch s.Type {
	case schema.Remote:
		s.URL = secretsInURL(s.URL, func(key, v string) string {
			return repl(Literal{Kind: "url", Key: key, Secret: true}, v)
		})
	case schema.Local:
		s.Command = secretsInCommand(s.Command, func(key, v string) string {
			return repl(Literal{Kind: "command", Key: key, Secret: true}, v)
		})
	}
}

// secretsInURL returns u with each part that looks like a credential and
// refers to no variable replaced by what repl returns for it, given its
// key ("password" for that of user:password@, "query NAME" for a query
// value whose name or value looks like a credential's) and its text as
// written.
func secretsInURL(u string, repl func(key, v string) string) string {
	rest, frag, hasFrag := strings.Cut(u, "#")
	out, query, hasQuery := strings.Cut(rest, "?")
	if scheme, after, ok := strings.Cut(out, "://"); ok {
		auth, path := after, ""
		if i := strings.IndexByte(after, '/'); i >= 0 {
			auth, path = after[:i], after[i:]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if user, pass, ok := strings.Cut(auth[:at], ":"); ok && pass != "" && !hasReference(pass) {
				auth = user + ":" + repl("password", pass) + auth[at:]
			}
		}
		out = scheme + "://" + auth + path
	}
	if hasQuery {
		pairs := strings.Split(query, "&")
		for i, p := range pairs {
			k, v, ok := strings.Cut(p, "=")
			if !ok || v == "" || hasReference(v) {
				continue
			}
			name, val := k, v
			if n, err := url.QueryUnescape(k); err == nil {
				name = n
			}
			if x, err := url.QueryUnescape(v); err == nil {
				val = x
			}
			if looksSecret(name, val) {
				pairs[i] = k + "=" + repl("query "+name, v)
			}
		}
		out += "?" + strings.Join(pairs, "&")
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// secretsInCommand returns a copy of command with each word, or part of
// one, that looks like a credential and refers to no variable replaced by
// what repl returns for it, given its key (see Literal) and its text as
// written: the value of "--flag=VALUE" or of "Name: VALUE" whose name or
// value looks like a credential's, the word after a flag whose name does
// ("--token VALUE"), a word that starts as tokens do ("ghp_", "sk-",
// "Bearer "), and the parts of a url word as secretsInURL has them. The
// program, command[0], is never one.
func secretsInCommand(command []string, repl func(key, v string) string) []string {
	out := slices.Clone(command)
	for i := 1; i < len(out); i++ {
		w := out[i]
		if strings.Contains(w, "://") {
			out[i] = secretsInURL(w, func(key, v string) string { return repl("url "+key, v) })
			continue
		}
		if hasReference(w) {
			continue
		}
		if k, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(k, "-") {
			if v != "" && looksSecret(k, v) {
				out[i] = k + "=" + repl(k, v)
			}
			continue
		}
		if k, v, ok := strings.Cut(w, ": "); ok && !strings.ContainsAny(k, " \t") {
			if v != "" && looksSecret(k, v) {
				out[i] = k + ": " + repl(k, v)
			}
			continue
		}
		prev := command[i-1]
		switch {
		case i > 1 && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && w != "" &&
			!strings.HasPrefix(w, "-") && !strings.Contains(w, "/") && looksSecret(prev, w):
			out[i] = repl(prev, w)
		case looksSecret("", w):
			out[i] = repl(fmt.Sprintf("argument %d", i), w)
		}
	}
	return out
}

// hasReference reports whether v, in FreeCode's syntax, refers to a
// variable (a "$${" is a literal "${", not one).
func hasReference(v string) bool {
	refs := false
	schema.Expand(v, func(string) (string, bool) { refs = true; return "", true })
	return refs
}

// literalNote is the note finish gives a server whose values are copied
// as written ("" for none).
func literalNote(lits []Literal) string {
	if len(lits) == 0 {
		return ""
	}
	names := make([]string, len(lits))
	for i, l := range lits {
		names[i] = l.String()
	}
	return fmt.Sprintf("%s: copied as written; to keep a secret out of the file, write ${NAME} and set NAME where freecode runs", strings.Join(names, ", "))
}

// Reference is a variable a value was replaced with by ReferLiterals.
type Reference struct {
	Literal
	// Var is the variable now referred to.
	Var string
}

// ReferLiterals replaces each value Literals returns with a reference to
// a variable, for a file that is shared (a project's settings, which are
// committed), and returns the references, in the order of Literals. Env
// KEY becomes ${KEY}, unless taken has KEY (another server's, or the
// file's, use of the name): then, like any other value, it becomes
// ${<SERVER>_<KEY>} ("API_KEY" of server "search" becomes
// ${SEARCH_API_KEY}; a url's query value is named after its parameter, a
// command line's after its flag). A name taken or used already gets a
// number: ${SEARCH_API_KEY_2}. A value starting with an authentication
// scheme keeps it ("Bearer ${SENTRY_AUTHORIZATION}"). The note that the
// values were copied gives way to one per value saying which variable to
// set.
func (s *Server) ReferLiterals(taken map[string]bool) []Reference {
	lits := s.Literals()
	if len(lits) == 0 {
		return nil
	}
	if old := literalNote(lits); old != "" {
		s.Notes = slices.DeleteFunc(s.Notes, func(n string) bool { return n == old })
	}
	used := map[string]bool{}
	pick := func(first, alt string) string {
		n := first
		if taken[n] || used[n] {
			n = alt
		}
		for i := 2; taken[n] || used[n]; i++ {
			n = fmt.Sprintf("%s_%d", alt, i)
		}
		used[n] = true
		return n
	}
	var refs []Reference
	refer := func(l Literal, v string) string {
		r := Reference{Literal: l}
		key := strings.TrimPrefix(strings.TrimPrefix(l.Key, "url "), "query ")
		alt := varName(s.Name + "_" + key)
		if l.Kind == "env" && validVar(l.Key) {
			r.Var = pick(l.Key, alt)
		} else {
			r.Var = pick(alt, alt)
		}
		refs = append(refs, r)
		ref := "${" + r.Var + "}"
		if scheme, _, ok := strings.Cut(v, " "); ok && authScheme(scheme) {
			ref = scheme + " " + ref
		}
		return ref
	}
	for _, l := range lits {
		switch l.Kind {
		case "env":
			s.Env[l.Key] = refer(l, s.Env[l.Key])
		case "header":
			s.Headers[l.Key] = refer(l, s.Headers[l.Key])
		}
	}
	s.rewriteSecrets(refer)
	for _, r := range refs {
		s.Notes = append(s.Notes, fmt.Sprintf("%s: written as ${%s}, not its value; set %s where freecode runs", r.Literal, r.Var, r.Var))
	}
	return refs
}

// Claims returns the variable names s uses, sorted: those its values
// refer to, and the env keys of values written out, which ReferLiterals
// would make references to variables of the same names.
func (s Server) Claims() []string {
	names := map[string]bool{}
	record := func(v string) {
		schema.Expand(v, func(n string) (string, bool) { names[n] = true; return "", true })
	}
	for k, v := range s.Env {
		record(v)
		if v != "" && !hasReference(v) {
			names[k] = true
		}
	}
	for _, v := range s.Headers {
		record(v)
	}
	record(s.URL)
	for _, w := range s.Command {
		record(w)
	}
	return slices.Sorted(maps.Keys(names))
}

// shownSecret is what Shown shows for a value that looks like a
// credential: its authentication scheme, if any, and "***".
func shownSecret(_ Literal, v string) string {
	if scheme, _, ok := strings.Cut(v, " "); ok && authScheme(scheme) {
		return scheme + " ***"
	}
	return "***"
}

// varName makes s a variable name: upper case, every run of other
// characters than letters and digits one "_", never starting with a digit.
func varName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
		}
		under = true
	}
	n := strings.TrimRight(b.String(), "_")
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		n = "V_" + n
	}
	return n
}

// authScheme reports whether w is an HTTP authentication scheme a header
// value starts with.
func authScheme(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "token", "digest":
		return true
	}
	return false
}

// looksSecret reports whether the env variable or header key, of value
// v, looks like it holds a credential: a word of its name (API_KEY,
// X-Auth-Token) or the start of its value (ghp_, sk-, Bearer ) says so.
func looksSecret(key, v string) bool {
	words := strings.FieldsFunc(strings.ToUpper(key), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9')
	})
	for _, w := range words {
		switch {
		case strings.HasSuffix(w, "TOKEN"), strings.HasSuffix(w, "SECRET"), strings.HasPrefix(w, "PASS"), strings.HasPrefix(w, "AUTH"),
			strings.HasPrefix(w, "CREDENTIAL"), strings.HasPrefix(w, "APIKEY"):
			return true
		}
		switch w {
		case "KEY", "PWD", "COOKIE", "SESSION", "PAT", "PRIVATE", "SIGNATURE", "BEARER":
			return true
		}
	}
	for _, p := range []string{"ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "sk-", "sk_", "xoxb-", "xoxp-",
		"AKIA", "eyJ", "Bearer ", "Basic ", "Token "} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}
