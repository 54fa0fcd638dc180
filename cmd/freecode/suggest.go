package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/freecode/freecode/schema"
)

// maxSuggestions bounds the names a "did you mean" offers.
const maxSuggestions = 3

// closest returns up to maxSuggestions of names nearest to want by edit
// distance (closest first, then by name), counting only those near enough
// to be a slip: one edit, or a third of the length of want's last part
// (the tool of an id mcp__<server>__<tool>), or containing want (a tool
// named without its mcp__<server>__ prefix).
func closest(want string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	last := want
	if i := strings.LastIndex(want, "__"); i >= 0 {
		last = want[i+2:]
	}
	limit := max(1, len([]rune(last))/3)
	var cands []cand
	for _, n := range names {
		if n == want {
			continue
		}
		d := editDistance(want, n)
		if d <= limit || (len(want) >= 3 && strings.Contains(n, want)) {
			cands = append(cands, cand{n, d})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name))
	})
	out := make([]string, 0, maxSuggestions)
	for _, c := range cands[:min(len(cands), maxSuggestions)] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the optimal string alignment distance of a and b, in
// runes: insertions, deletions, substitutions and transpositions of
// neighbours ("ecoh" is one edit from "echo") count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance of ra[:i] and rb[:j]; three rows suffice.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// didYouMean phrases suggestions: " did you mean a or b?"; "" for none.
func didYouMean(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" Did you mean %s?", names[0])
	}
	return fmt.Sprintf(" Did you mean %s or %s?", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// noServerError says that no server of a name is configured, with the
// configured names closest to it. It wraps schema.ErrNoServer.
type noServerError struct {
	name string
	file string   // the config file looked in
	near []string // closest(name, configured names)
}

func (e *noServerError) Error() string {
	msg := fmt.Sprintf("server %q: %s in %s (see `freecode mcp list`)", e.name, schema.ErrNoServer, e.file)
	if len(e.near) > 0 {
		msg += "." + didYouMean(e.near)
	}
	return msg
}

func (e *noServerError) Unwrap() error { return schema.ErrNoServer }

// noServer is the error for name, which cfg does not configure.
func noServer(cfg *schema.Config, name string) error {
	return &noServerError{name: name, file: cfg.Path, near: closest(name, serverNames(cfg))}
}

// serverNames are the names of cfg's servers, in file order.
func serverNames(cfg *schema.Config) []string {
	names := make([]string, 0, len(cfg.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		names = append(names, s.Name)
	}
	return names
}
