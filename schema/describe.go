package schema

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/freecode/freecode/internal/termtext"
)

// What a repository writes in its settings file is hostile until bounded:
// every display of a project's definition (trust, list, get, status) shows
// at most ShownValueChars characters of one value, and a definition with a
// value over MaxProjectValueBytes, or values over MaxProjectDefinitionBytes
// in all, cannot be trusted (CheckProjectSize).
const (
	// ShownValueChars is how many characters of one value (a command
	// word, an env or header entry, a url, a permission rule) a display
	// of a project's definition shows; the rest is counted, not shown.
	ShownValueChars = 200
	// MaxProjectValueBytes is the largest value a trusted project may
	// hold.
	MaxProjectValueBytes = 4 << 10
	// MaxProjectDefinitionBytes is the most a trusted project's values
	// (its servers' and its rules') may hold in all.
	MaxProjectDefinitionBytes = 16 << 10
)

// summaryListChars is how many characters of env or header names one
// summary line lists before it only counts the rest.
const summaryListChars = 60

// summaryProgramChars is how many characters of a program a summary line
// shows.
const summaryProgramChars = 40

// ShowValue renders one value of a project's definition for display:
// quoted like termtext.Quote where it does not print as it reads, and cut
// after ShownValueChars characters with the rest counted.
func ShowValue(s string) string { return termtext.QuoteCut(s, ShownValueChars) }

// Describe lists what a project settings file would run, for a user about to
// trust it: per server its program and each argument on a line of its own,
// or its url, its env and headers as written (unexpanded: a
// "${AWS_SECRET_ACCESS_KEY}" shows that the server would get that
// variable), its oauth object, and the project's permission rules. cfg
// must be parsed with NoExpand.
//
// Validation refuses control characters in these values; anything else a
// terminal would not show as it reads (a zero-width space, a no-break
// space, U+2800 BRAILLE PATTERN BLANK, a combining mark with no base) is
// shown quoted with escapes (termtext.Quote), and every value is cut after
// ShownValueChars characters, so what the user reads is what runs and no
// value can push the rest off the screen. Summary says it again in one
// line per server.
func Describe(cfg *Config) string {
	var b strings.Builder
	for _, s := range cfg.MCP.Servers {
		state := ""
		if !s.Enabled {
			state = " (disabled)"
		}
		fmt.Fprintf(&b, "  server %q%s\n", s.Name, state)
		if s.Type == Remote {
			fmt.Fprintf(&b, "    %-9s %s (%s)\n", "url:", ShowValue(s.URL), s.Transport)
		} else if len(s.Command) > 0 {
			fmt.Fprintf(&b, "    %-9s %s\n", "program:", shownWord(s.Command[0]))
			for i, a := range s.Command[1:] {
				fmt.Fprintf(&b, "    %-9s %s\n", "arg "+strconv.Itoa(i+1)+":", shownWord(a))
			}
		}
		// Values as the project wrote them: a ${VAR} in one shows which of
		// the user's variables the server would receive.
		for _, kv := range []struct {
			label string
			m     map[string]string
		}{{"env", s.Env}, {"header", s.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(kv.m)) {
				fmt.Fprintf(&b, "    %-9s %s\n", kv.label+":", ShowValue(k+"="+kv.m[k]))
			}
		}
		if s.OAuth != nil {
			fmt.Fprintf(&b, "    %-9s %s\n", "oauth:", describeOAuth(s.OAuth))
		}
	}
	for _, r := range []struct {
		name  string
		rules []string
	}{{"allow", cfg.Permission.Allow}, {"ask", cfg.Permission.Ask}, {"deny", cfg.Permission.Deny}} {
		if len(r.rules) > 0 {
			rules := make([]string, len(r.rules))
			for i, rule := range r.rules {
				rules[i] = ShowValue(rule)
			}
			fmt.Fprintf(&b, "  permission.%s: %s\n", r.name, strings.Join(rules, ", "))
		}
	}
	return b.String()
}

// Summary says in one line per server what a project settings file would
// run — its name, program, number of arguments and their length in
// characters, and env names; or the host its url reaches and header names
// — and in one line how many permission rules it sets. It is short
// whatever the file holds (a value is cut after a few dozen characters),
// so that shown right above the question it is what the user reads last.
func Summary(cfg *Config) string {
	var b strings.Builder
	for _, s := range cfg.MCP.Servers {
		state := ""
		if !s.Enabled {
			state = " (disabled)"
		}
		if s.Type == Remote {
			fmt.Fprintf(&b, "  %q%s connects to %s", s.Name, state, urlHost(s.URL))
			if len(s.Headers) > 0 {
				fmt.Fprintf(&b, "; headers %s", nameList(s.Headers))
			}
		} else {
			program, args := "", []string(nil)
			if len(s.Command) > 0 {
				program, args = s.Command[0], s.Command[1:]
			}
			n := 0
			for _, w := range s.Command {
				n += utf8.RuneCountInString(w)
			}
			fmt.Fprintf(&b, "  %q%s runs %s with %s (%s in all)", s.Name, state,
				termtext.QuoteCut(program, summaryProgramChars), count(len(args), "argument"), count(n, "character"))
			if len(s.Env) > 0 {
				fmt.Fprintf(&b, "; env %s", nameList(s.Env))
			}
		}
		b.WriteByte('\n')
	}
	p := cfg.Permission
	if len(p.Allow)+len(p.Ask)+len(p.Deny) > 0 {
		fmt.Fprintf(&b, "  permission rules: %d allow, %d ask, %d deny\n", len(p.Allow), len(p.Ask), len(p.Deny))
	}
	return b.String()
}

// urlHost is the host (and port) a url reaches, for a summary.
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return termtext.QuoteCut(raw, summaryProgramChars)
	}
	return termtext.QuoteCut(u.Host, summaryProgramChars)
}

// nameList lists the keys of m, sorted, for a summary: as many as fit in
// summaryListChars characters, then how many more.
func nameList(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	n := 0
	for i, k := range keys {
		q := termtext.QuoteCut(k, summaryProgramChars)
		if i > 0 && n+utf8.RuneCountInString(q) > summaryListChars {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		n += utf8.RuneCountInString(q) + 2
		parts = append(parts, q)
	}
	return strings.Join(parts, ", ")
}

func count(n int, noun string) string { return strconv.Itoa(n) + " " + plural(n, noun) }

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// describeOAuth lists an oauth object's fields as written, each quoted
// like an env entry.
func describeOAuth(o *OAuth) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, ShowValue(k+"="+v))
		}
	}
	add("grant", string(o.Grant))
	add("clientId", o.ClientID)
	add("clientSecret", o.ClientSecret)
	add("scopes", strings.Join(o.Scopes, " "))
	if o.CallbackPort != 0 {
		add("callbackPort", strconv.Itoa(o.CallbackPort))
	}
	add("clientMetadataUrl", o.ClientMetadataURL)
	return strings.Join(parts, " ")
}

// shellSpecial are the characters for which a command word is shown in
// single quotes.
const shellSpecial = " \t\n'\"\\$`|&;<>()*?[]#~!{}"

// shownWord is one word of a project's command as displays of its
// definition show it: quoted like displayWord, cut after ShownValueChars
// characters.
func shownWord(w string) string { return displayWord(w, ShownValueChars) }

// displayWord renders w as one word of a command line for display: a word
// with characters a shell treats specially is single-quoted, one that is
// not printable as it is (termtext.Printable) is a double-quoted Go string
// literal with escapes ("a\u200bb"), so every word shows exactly what
// runs. With limit >= 0 it shows at most limit characters of w and counts
// the rest.
func displayWord(w string, limit int) string {
	switch {
	case !termtext.Printable(w):
		if limit < 0 {
			return termtext.Quote(w)
		}
		return termtext.QuoteCut(w, limit)
	case w == "" || strings.ContainsAny(w, shellSpecial):
		rest := ""
		if limit >= 0 && utf8.RuneCountInString(w) > limit {
			// Cut by position, not by finding the note in QuoteCut's
			// output: w itself may hold "…(" and would be split there.
			i := 0
			for n := 0; n < limit; n++ {
				_, size := utf8.DecodeRuneInString(w[i:])
				i += size
			}
			w, rest = w[:i], termtext.CutNote(w[i:])
		}
		return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" + rest
	case limit >= 0:
		return termtext.QuoteCut(w, limit)
	}
	return w
}

// CheckProjectSize refuses a project definition that holds more than a
// person can review: a value (a command word, a url, an env or header name
// or value, an oauth field, a permission rule) over MaxProjectValueBytes,
// or values over MaxProjectDefinitionBytes in all. The error names the
// file, each server and field at fault and its size. cfg is the project
// file at path, parsed with NoExpand.
func CheckProjectSize(path string, cfg *Config) error {
	var problems []string
	total := 0
	check := func(server, field, v string) {
		total += len(v)
		if len(v) > MaxProjectValueBytes {
			where := field
			if server != "" {
				where = fmt.Sprintf("server %q: %s", server, field)
			}
			problems = append(problems, fmt.Sprintf("%s is %d bytes", where, len(v)))
		}
	}
	for _, s := range cfg.MCP.Servers {
		for i, w := range s.Command {
			check(s.Name, fmt.Sprintf("command[%d]", i), w)
		}
		check(s.Name, "url", s.URL)
		for _, kv := range []struct {
			field string
			m     map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(kv.m)) {
				check(s.Name, FormatPath([]string{kv.field, k})+" (name)", k)
				check(s.Name, FormatPath([]string{kv.field, k}), kv.m[k])
			}
		}
		if o := s.OAuth; o != nil {
			check(s.Name, "oauth.clientId", o.ClientID)
			check(s.Name, "oauth.clientSecret", o.ClientSecret)
			check(s.Name, "oauth.clientMetadataUrl", o.ClientMetadataURL)
			for i, sc := range o.Scopes {
				check(s.Name, fmt.Sprintf("oauth.scopes[%d]", i), sc)
			}
		}
	}
	for _, r := range []struct {
		name  string
		rules []string
	}{{"allow", cfg.Permission.Allow}, {"ask", cfg.Permission.Ask}, {"deny", cfg.Permission.Deny}} {
		for i, rule := range r.rules {
			check("", fmt.Sprintf("permission.%s[%d]", r.name, i), rule)
		}
	}
	if len(problems) == 0 && total <= MaxProjectDefinitionBytes {
		return nil
	}
	const most = 5
	if len(problems) > most {
		problems = append(problems[:most], fmt.Sprintf("and %d more", len(problems)-most))
	}
	msg := fmt.Sprintf("%s cannot be trusted: it holds more than anyone can review", termtext.Neutralize(path))
	if len(problems) > 0 {
		msg += fmt.Sprintf("; a value may be at most %d bytes (%d KiB):\n  %s", MaxProjectValueBytes, MaxProjectValueBytes>>10, strings.Join(problems, "\n  "))
	}
	if total > MaxProjectDefinitionBytes {
		msg += fmt.Sprintf("\n  its servers and rules hold %d bytes of values; at most %d (%d KiB) can be trusted", total, MaxProjectDefinitionBytes, MaxProjectDefinitionBytes>>10)
	}
	return &ProjectSizeError{Path: path, Msg: msg}
}

// ProjectSizeError is CheckProjectSize's refusal.
type ProjectSizeError struct {
	Path string
	Msg  string
}

func (e *ProjectSizeError) Error() string { return e.Msg }
