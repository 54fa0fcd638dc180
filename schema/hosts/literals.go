package hosts

import (
	"fmt"
	"slices"
	"strings"

	"github.com/freecode/freecode/schema"
)

// Literal is an env or header value of a server written out in full, not
// taken from a variable: what a host's file may hold a token in.
type Literal struct {
	// Kind is "env" or "header".
	Kind string
	// Key is the variable's or header's name.
	Key string
	// Secret says that the name or the value looks like a credential's
	// (see looksSecret).
	Secret bool
}

func (l Literal) String() string { return l.Kind + " " + l.Key }

// Literals returns the env and header values of s that refer to no
// variable, env first, each sorted by name.
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
// committed): env KEY becomes ${KEY}; a header becomes
// ${<SERVER>_<HEADER>}, after its scheme if it has one ("Bearer
// ${SENTRY_AUTHORIZATION}"). The note that the values were copied gives
// way to one per value saying which variable to set. It returns the
// references, in the order of Literals.
func (s *Server) ReferLiterals() []Reference {
	lits := s.Literals()
	if len(lits) == 0 {
		return nil
	}
	if old := literalNote(lits); old != "" {
		s.Notes = slices.DeleteFunc(s.Notes, func(n string) bool { return n == old })
	}
	var refs []Reference
	for _, l := range lits {
		r := Reference{Literal: l}
		switch l.Kind {
		case "env":
			r.Var = varName(l.Key)
			if !validVar(l.Key) {
				r.Var = varName(s.Name + "_" + l.Key)
			}
			s.Env[l.Key] = "${" + r.Var + "}"
		case "header":
			r.Var = varName(s.Name + "_" + l.Key)
			v := "${" + r.Var + "}"
			if scheme, _, ok := strings.Cut(s.Headers[l.Key], " "); ok && authScheme(scheme) {
				v = scheme + " " + v
			}
			s.Headers[l.Key] = v
		}
		s.Notes = append(s.Notes, fmt.Sprintf("%s: written as ${%s}, not its value; set %s where freecode runs", l, r.Var, r.Var))
		refs = append(refs, r)
	}
	return refs
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
