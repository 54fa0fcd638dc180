package schema

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Which errors belong to one server, and which to the file.
//
// An error whose path lies inside an entry of mcp.servers — a field of the
// entry, an unset ${VAR} in it, a control character in it, a duplicate key
// in it, its own limits, its name given twice — belongs to that server: the
// server is held (HoldInvalid) and the others run. Every other error is the
// file's: invalid JSON, a top level that is not an object, a lookalike
// top-level key, a config of another host, "mcp" or "mcp.servers" of the
// wrong shape, mcp.pollInterval, mcp.callTimeout, mcp.maxArgumentBytes, mcp.maxOutputTokens,
// mcp.limits (they apply to every server), the permission rules, and a
// file holding more values than MaxCheckedValues. A file-level error keeps
// the last good configuration applied.

// nameRE is config.cue's #Name without its exclusions, which ValidName
// adds.
var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,47}$`)

// ValidName reports whether name is a valid server name (config.cue #Name):
// a letter, then letters, digits, "_" and "-", at most 48 characters, never
// "__", no trailing "_", and not "builtin".
func ValidName(name string) bool {
	return nameRE.MatchString(name) && !strings.Contains(name, "__") && !strings.HasSuffix(name, "_") && name != "builtin"
}

// EntryLabel is the key of the server entry at index i of mcp.servers whose
// name is missing or invalid: "mcp.servers[3]". It is the name such an entry
// is held under (it cannot clash with a valid name).
func EntryLabel(i int) string { return "mcp.servers[" + strconv.Itoa(i) + "]" }

// IsEntryLabel reports whether key is an EntryLabel rather than a name.
func IsEntryLabel(key string) bool { return strings.HasPrefix(key, "mcp.servers[") }

// serverKeys returns the key of each entry of mcp.servers in root: its name
// when that is a valid name, else its EntryLabel. Entries with the same
// name share a key: a name given twice holds the name.
func serverKeys(root *node) []string {
	servers := root.member("mcp").member("servers")
	if servers == nil || servers.kind != '[' {
		return nil
	}
	keys := make([]string, len(servers.elems))
	for i, el := range servers.elems {
		if nm := el.member("name"); nm != nil && nm.kind == '"' && ValidName(nm.str) {
			keys[i] = nm.str
		} else {
			keys[i] = EntryLabel(i)
		}
	}
	return keys
}

// serverIndexOf returns the index of the mcp.servers entry path lies in, or
// -1 when it lies in none.
func serverIndexOf(path []string) int {
	if len(path) < 3 || path[0] != "mcp" || path[1] != "servers" {
		return -1
	}
	i, err := strconv.Atoi(path[2])
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// splitErrors partitions errs into the file's and those of each server key
// (keys from serverKeys). Order is kept within each part.
func splitErrors(errs Errors, keys []string) (file Errors, byServer map[string]Errors) {
	byServer = map[string]Errors{}
	for _, e := range errs {
		if i := serverIndexOf(e.Path); i >= 0 && i < len(keys) {
			byServer[keys[i]] = append(byServer[keys[i]], e)
			continue
		}
		file = append(file, e)
	}
	return file, byServer
}

// errorKey identifies an error across an edit: its server key, its path
// within the entry (or the file) and its message with every number left
// out, since positions and indices in messages move when other entries do.
func errorKey(e *Error, keys []string) string {
	path := e.Path
	server := ""
	if i := serverIndexOf(path); i >= 0 && i < len(keys) {
		server, path = keys[i], path[3:]
	}
	msg := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, e.Msg)
	return server + "\x00" + strings.Join(path, "\x00") + "\x00" + msg
}

// newErrors returns the errors of after (of a document whose server keys
// are afterKeys) that before (keys beforeKeys) did not have.
func newErrors(before Errors, beforeKeys []string, after Errors, afterKeys []string) Errors {
	had := map[string]bool{}
	for _, e := range before {
		had[errorKey(e, beforeKeys)] = true
	}
	var out Errors
	for _, e := range after {
		if !had[errorKey(e, afterKeys)] {
			out = append(out, e)
		}
	}
	return out
}

// ServerErrors returns the errors of every server of c held as invalid
// (HoldInvalid), in file order.
func (c *Config) ServerErrors() Errors {
	var out Errors
	seen := map[*Hold]bool{}
	for _, s := range c.MCP.Servers {
		if s.Hold != nil && s.Hold.Kind == HoldInvalid && !seen[s.Hold] {
			seen[s.Hold] = true
			out = append(out, s.Hold.Errors...)
		}
	}
	sortErrors(out)
	return slices.Clip(out)
}
