package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/freecode/freecode/wire"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// The bounds of what a session keeps of a completion/complete answer. The
// whole answer is one message, bounded by the server's MaxMessageBytes
// like every message; within it, a server chooses how many values it
// sends and how long they are, and a client shows them to a person.
const (
	// MaxCompletionValues is the most values kept: the protocol's own
	// limit (a server "must not" send more than 100).
	MaxCompletionValues = 100
	// MaxCompletionValueBytes bounds one value; a longer one is left out
	// (cut, it would be a wrong suggestion).
	MaxCompletionValueBytes = 1 << 10
	// MaxCompletionBytes bounds the values kept, together; the values past
	// it are left out.
	MaxCompletionBytes = 32 << 10
)

// Complete asks the server for the values an argument may take
// (completion/complete): arg of ref, a prompt by name or a resource
// template by its URI template as the server lists it, with the value
// typed so far; given holds the other arguments' values already given
// (nil: none). What the server sends is bounded: at most
// MaxCompletionValues values, each at most MaxCompletionValueBytes and all
// together at most MaxCompletionBytes; the values left out, and empty
// ones, are counted in Dropped and make HasMore true. The result names
// the server; its Raw is what else the server's completion object holds
// (nil: nothing).
//
// Errors: ErrNotOffered for a server that did not declare completions;
// ErrInvalidParams for a ref of no known type, without its name or URI,
// or an argument without a name, and for the server's refusal of the
// request; for a prompt, ErrUnknownPrompt when the server's prompts/list
// does not hold it and ErrPromptArguments when it declares no such
// argument (nothing is sent then). Transport failures and requests after
// the end are as for CallTool.
func (s *Session) Complete(ctx context.Context, ref wire.CompletionRef, arg wire.CompletionArgument, given map[string]string) (wire.Completion, error) {
	return s.feat.complete(ctx, ref, arg, given)
}

// complete is Session.Complete.
func (f *featureState) complete(ctx context.Context, ref wire.CompletionRef, arg wire.CompletionArgument, args map[string]string) (wire.Completion, error) {
	what, err := f.completionWhat(ref, arg)
	if err != nil {
		return wire.Completion{}, err
	}
	if !f.offers.Completions {
		return wire.Completion{}, f.notOffered(what, "completions")
	}
	if ref.Type == wire.RefPrompt {
		if err := f.checkPromptArgument(ref.Name, arg.Name); err != nil {
			return wire.Completion{}, err
		}
	}
	refParam := map[string]any{"type": ref.Type}
	if ref.Type == wire.RefPrompt {
		refParam["name"] = ref.Name
	} else {
		refParam["uri"] = ref.URI
	}
	params := map[string]any{"ref": refParam, "argument": map[string]any{"name": arg.Name, "value": arg.Value}}
	if len(args) > 0 {
		params["context"] = map[string]any{"arguments": args}
	}
	raw, err := f.out.request(ctx, string(mcpgo.MethodCompletionComplete), what, params)
	if err != nil {
		return wire.Completion{}, err
	}
	c, err := decodeCompletion(raw)
	if err != nil {
		return wire.Completion{}, fmt.Errorf("server %q: decode %s result: %w", f.server, what, err)
	}
	if c.Dropped > 0 {
		f.log.V(1).Info("completion values left out", "request", what, "dropped", c.Dropped, "kept", len(c.Values))
	}
	c.Server = f.server
	return c, nil
}

// completionWhat names a completion request in messages
// (`completion/complete of prompt "p" argument "a"`), or says what is
// wrong with it (ErrInvalidParams).
func (f *featureState) completionWhat(ref wire.CompletionRef, arg wire.CompletionArgument) (string, error) {
	var of string
	switch ref.Type {
	case wire.RefPrompt:
		if ref.Name == "" {
			return "", newError(fmt.Sprintf("server %q: completion/complete: the prompt's name is empty", f.server), ErrInvalidParams)
		}
		of = fmt.Sprintf("prompt %q", ref.Name)
	case wire.RefResource:
		if ref.URI == "" {
			return "", newError(fmt.Sprintf("server %q: completion/complete: the resource template's URI is empty", f.server), ErrInvalidParams)
		}
		of = fmt.Sprintf("resource template %q", ref.URI)
	default:
		return "", newError(fmt.Sprintf("server %q: completion/complete: the ref's type is %q (want %q or %q)",
			f.server, ref.Type, wire.RefPrompt, wire.RefResource), ErrInvalidParams)
	}
	if arg.Name == "" {
		return "", newError(fmt.Sprintf("server %q: completion/complete of %s: the argument's name is empty", f.server, of), ErrInvalidParams)
	}
	return fmt.Sprintf("completion/complete of %s argument %q", of, arg.Name), nil
}

// checkPromptArgument checks that prompt, as prompts/list declared it,
// has the argument arg (ErrUnknownPrompt, ErrPromptArguments).
func (f *featureState) checkPromptArgument(prompt, arg string) error {
	f.mu.Lock()
	prompts := f.cur.Prompts
	f.mu.Unlock()
	i, found := slices.BinarySearchFunc(prompts, prompt, func(p wire.Prompt, n string) int { return strings.Compare(p.Name, n) })
	if !found {
		return newError(fmt.Sprintf("server %q has no prompt %q to complete an argument of", f.server, prompt), ErrUnknownPrompt)
	}
	p := prompts[i]
	if !slices.ContainsFunc(p.Arguments, func(a wire.PromptArgument) bool { return a.Name == arg }) {
		return newError(fmt.Sprintf("server %q: prompt %q has no argument %q; %s", f.server, prompt, arg, DescribeArguments(p.Arguments)),
			ErrPromptArguments)
	}
	return nil
}

// decodeCompletion decodes a completion/complete result within the
// bounds of Complete. A result without a completion object, or whose
// values are not an array, is an error; an element of values that is not
// a string is left out like one too long.
func decodeCompletion(raw json.RawMessage) (wire.Completion, error) {
	var res struct {
		Completion json.RawMessage `json:"completion"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return wire.Completion{}, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(res.Completion, &members); err != nil || members == nil {
		return wire.Completion{}, fmt.Errorf("completion is not an object: %s", abbreviate(res.Completion))
	}
	var values []json.RawMessage
	if err := json.Unmarshal(members["values"], &values); err != nil || values == nil {
		return wire.Completion{}, fmt.Errorf("completion.values is not an array: %s", abbreviate(members["values"]))
	}
	c := wire.Completion{Values: make([]string, 0, min(len(values), MaxCompletionValues)), Meta: nonNull(res.Meta)}
	size := 0
	for _, v := range values {
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" || len(s) > MaxCompletionValueBytes ||
			len(c.Values) == MaxCompletionValues || size+len(s) > MaxCompletionBytes {
			c.Dropped++
			continue
		}
		size += len(s)
		c.Values = append(c.Values, s)
	}
	var hasMore bool
	if json.Unmarshal(members["hasMore"], &hasMore) == nil {
		c.HasMore = hasMore
	}
	var total int
	if json.Unmarshal(members["total"], &total) == nil && total >= len(values) {
		// A total below what was sent is the server's mistake: not said.
		c.Total = total
	}
	c.HasMore = c.HasMore || c.Dropped > 0 || c.Total > len(c.Values)
	// Keys FreeCode does not interpret are kept; those it bounded or
	// checked are not, so that a value it left out (a negative total)
	// does not pass on from Raw.
	delete(members, "values")
	delete(members, "total")
	delete(members, "hasMore")
	if len(members) > 0 {
		c.Raw, _ = json.Marshal(members)
	}
	return c, nil
}

// abbreviate is raw for a message: at most 64 bytes of it.
func abbreviate(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "missing"
	case len(raw) > 64:
		return string(raw[:64]) + "…"
	}
	return string(raw)
}
