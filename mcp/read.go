package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/freecode/freecode/wire"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// ReadResource reads uri with resources/read: a resource of the list, one
// a template describes, or one a tool result links to. The whole answer
// is one message, so it is bounded by the server's MaxMessageBytes like
// every message (a larger one ends the session with a *LimitError, as
// anything larger does); blobs are decoded. Errors: ErrNotOffered for a
// server without the resources capability, ErrResourceNotFound when the
// server says there is no such resource, ErrInvalidParams when it refuses
// the URI; transport failures and calls after the end are as for CallTool.
// A part without a URI is given uri; each keeps the server's object as Raw.
func (s *Session) ReadResource(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
	return s.feat.readResource(ctx, uri)
}

// readResource is Session.ReadResource.
func (f *featureState) readResource(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
	what := fmt.Sprintf("resources/read %q", uri)
	if !f.offers.Resources {
		return nil, f.notOffered(what, "resources")
	}
	if uri == "" {
		return nil, newError(fmt.Sprintf("server %q: resources/read: the URI is empty", f.server), ErrInvalidParams)
	}
	raw, err := f.out.request(ctx, string(mcpgo.MethodResourcesRead), what, map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	var res struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("server %q: decode %s result: %w", f.server, what, err)
	}
	out := make([]wire.ResourceContent, 0, len(res.Contents))
	for i, c := range res.Contents {
		rc, err := decodeContents(c)
		if err != nil {
			return nil, fmt.Errorf("server %q: %s: contents #%d: %w", f.server, what, i, err)
		}
		if rc.URI == "" {
			rc.URI = uri
		}
		out = append(out, rc)
	}
	return out, nil
}

// decodeContents decodes one element of resources/read's contents: text,
// or a blob in base64, which some servers send without its padding.
func decodeContents(raw json.RawMessage) (wire.ResourceContent, error) {
	var w struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return wire.ResourceContent{}, err
	}
	rc := wire.ResourceContent{URI: w.URI, MimeType: w.MimeType, Text: w.Text, Raw: raw}
	switch {
	case w.Text != nil && w.Blob != nil:
		return wire.ResourceContent{}, errors.New("it has both text and blob")
	case w.Text != nil:
	case w.Blob != nil:
		b, err := base64.StdEncoding.DecodeString(*w.Blob)
		if err != nil {
			// Some servers leave out the padding.
			if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(*w.Blob, "=")); err != nil {
				return wire.ResourceContent{}, fmt.Errorf("blob is not base64: %w", err)
			}
		}
		rc.Blob = b
	default:
		return wire.ResourceContent{}, errors.New("it has neither text nor blob")
	}
	return rc, nil
}

// GetPrompt gets the prompt name with args. The arguments are checked
// against the prompt as prompts/list declared it before anything is sent:
// a name the list does not hold wraps ErrUnknownPrompt, and a required
// argument that is missing, or an argument the prompt does not declare,
// wraps ErrPromptArguments, naming the argument and the prompt's
// arguments. ErrNotOffered for a server without the prompts capability;
// the server's refusal of the values wraps ErrInvalidParams. The result
// names the server and the prompt; every message has content.
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
	return s.feat.getPrompt(ctx, name, args)
}

// getPrompt is Session.GetPrompt.
func (f *featureState) getPrompt(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
	what := fmt.Sprintf("prompts/get %q", name)
	if !f.offers.Prompts {
		return wire.PromptResult{}, f.notOffered(what, "prompts")
	}
	f.mu.Lock()
	prompts := f.cur.Prompts
	f.mu.Unlock()
	i, found := slices.BinarySearchFunc(prompts, name, func(p wire.Prompt, n string) int { return strings.Compare(p.Name, n) })
	if !found {
		names := make([]string, len(prompts))
		for i, p := range prompts {
			names[i] = p.Name
		}
		list := "it lists none"
		if len(names) > 0 {
			list = "its prompts: " + strings.Join(names, ", ")
		}
		return wire.PromptResult{}, newError(fmt.Sprintf("server %q has no prompt %q (%s)", f.server, name, list), ErrUnknownPrompt)
	}
	if err := CheckPromptArguments(prompts[i], args); err != nil {
		return wire.PromptResult{}, newError(fmt.Sprintf("server %q: %s", f.server, err), err)
	}
	if args == nil {
		args = map[string]string{}
	}
	raw, err := f.out.request(ctx, string(mcpgo.MethodPromptsGet), what, map[string]any{"name": name, "arguments": args})
	if err != nil {
		return wire.PromptResult{}, err
	}
	var res wire.PromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return wire.PromptResult{}, fmt.Errorf("server %q: decode %s result: %w", f.server, what, err)
	}
	for i, m := range res.Messages {
		if len(nonNull(m.Content)) == 0 {
			return wire.PromptResult{}, fmt.Errorf("server %q: %s: message #%d has no content", f.server, what, i)
		}
	}
	// The server's own "server" and "prompt" keys, if any, are not ours.
	res.Server, res.Prompt, res.Meta = f.server, name, nonNull(res.Meta)
	if res.Messages == nil {
		res.Messages = []wire.PromptMessage{}
	}
	return res, nil
}

// CheckPromptArguments checks args against what p declares: every
// required argument given, no argument p does not declare. Its error wraps
// ErrPromptArguments and names the arguments that are wrong and those p
// has.
func CheckPromptArguments(p wire.Prompt, args map[string]string) error {
	var missing, unknown []string
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if !slices.ContainsFunc(p.Arguments, func(a wire.PromptArgument) bool { return a.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(missing) == 0 && len(unknown) == 0 {
		return nil
	}
	var msg string
	switch {
	case len(missing) == 1:
		msg = fmt.Sprintf("prompt %q needs the argument %q", p.Name, missing[0])
	case len(missing) > 1:
		msg = fmt.Sprintf("prompt %q needs the arguments %s", p.Name, quoteAll(missing))
	case len(unknown) == 1:
		msg = fmt.Sprintf("prompt %q has no argument %q", p.Name, unknown[0])
	default:
		msg = fmt.Sprintf("prompt %q has no arguments %s", p.Name, quoteAll(unknown))
	}
	return newError(msg+"; "+DescribeArguments(p.Arguments), ErrPromptArguments)
}

// DescribeArguments says what arguments a prompt has, for messages:
// "its arguments: city (required), state", or "it takes no arguments".
func DescribeArguments(args []wire.PromptArgument) string {
	if len(args) == 0 {
		return "it takes no arguments"
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Name
		if a.Required {
			parts[i] += " (required)"
		}
	}
	return "its arguments: " + strings.Join(parts, ", ")
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Subscribe asks the server for notifications/resources/updated of uri
// (resources/subscribe); ResourceUpdates then signals each update. It
// wraps ErrNotOffered for a server that did not declare
// resources.subscribe, and fails beyond MaxSubscriptions URIs.
// Subscribing again to a URI is harmless.
func (s *Session) Subscribe(ctx context.Context, uri string) error { return s.feat.subscribe(ctx, uri) }

// subscribe is Session.Subscribe.
func (f *featureState) subscribe(ctx context.Context, uri string) error {
	what := fmt.Sprintf("resources/subscribe %q", uri)
	if !f.offers.Subscribe {
		return f.notOffered(what, "resource subscriptions")
	}
	f.mu.Lock()
	n, had := len(f.subscribed), f.subscribed[uri]
	f.mu.Unlock()
	if !had && n >= MaxSubscriptions {
		return fmt.Errorf("server %q: %s: already subscribed to %d resources, the most a session keeps (mcp.MaxSubscriptions)", f.server, what, MaxSubscriptions)
	}
	if _, err := f.out.request(ctx, string(mcpgo.MethodResourcesSubscribe), what, map[string]any{"uri": uri}); err != nil {
		return err
	}
	f.mu.Lock()
	f.subscribed[uri] = true
	f.mu.Unlock()
	return nil
}

// Unsubscribe ends a subscription (resources/unsubscribe); updates of uri
// are ignored from now on.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	return s.feat.unsubscribe(ctx, uri)
}

// unsubscribe is Session.Unsubscribe.
func (f *featureState) unsubscribe(ctx context.Context, uri string) error {
	what := fmt.Sprintf("resources/unsubscribe %q", uri)
	if !f.offers.Subscribe {
		return f.notOffered(what, "resource subscriptions")
	}
	f.mu.Lock()
	delete(f.subscribed, uri)
	delete(f.updated, uri)
	f.mu.Unlock()
	_, err := f.out.request(ctx, string(mcpgo.MethodResourcesUnsubscribe), what, map[string]any{"uri": uri})
	return err
}

// ResourceUpdates is signalled (buffered, capacity one) when the server
// sent notifications/resources/updated for a subscribed URI; several
// updates may collapse into one signal. TakeResourceUpdates returns them.
func (s *Session) ResourceUpdates() <-chan struct{} { return s.feat.updates }

// TakeResourceUpdates returns, sorted, the subscribed URIs the server
// said were updated since the last call, and forgets them.
func (s *Session) TakeResourceUpdates() []string { return s.feat.takeUpdates() }

// Offers returns what the server declared beside tools.
func (s *Session) Offers() Offers { return s.feat.offers }

// notOffered is the error of what, a request for feature, which the
// server did not declare.
func (f *featureState) notOffered(what, feature string) error {
	return newError(fmt.Sprintf("server %q offers no %s (its initialize result does not declare them), so %s is not sent",
		f.server, feature, what), ErrNotOffered)
}
