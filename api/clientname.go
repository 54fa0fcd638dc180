package api

import (
	"context"
	"strings"
	"unicode"
)

// ClientHeader names the client of a request to serve's API ("freecode
// mcp call (pid 42)", "gateway claude-code"): the audit log records it as
// the host of a call and as who answered an approval. It is what the
// client says it is: serve's socket is its user's alone (0600), so the
// name tells that user's programs apart, it authenticates nothing.
const ClientHeader = "FreeCode-Client"

// maxClientName bounds a client's name; longer names are cut.
const maxClientName = 128

type clientKey struct{}

// WithClient returns ctx naming the client that asks through it: a Client
// sends the name in ClientHeader, serve's API puts the header's name in
// each request's context, and an Engine in process reads it with
// ClientOf. "" leaves ctx as it is.
func WithClient(ctx context.Context, name string) context.Context {
	name = cleanClientName(name)
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, name)
}

// ClientOf is the client WithClient named in ctx, or "".
func ClientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

// cleanClientName drops control characters and bounds the name.
func cleanClientName(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s))
	if len(s) > maxClientName {
		s = strings.ToValidUTF8(s[:maxClientName], "")
	}
	return s
}
