package wire

import "encoding/json"

// ResourcesChanged is published when a server's resources or resource
// templates really changed (event resources_changed): on its first start,
// after a notifications/resources/list_changed that changed something, and
// when they are removed with the server. A restart that brings the same
// lists back publishes nothing. Re-read GET /v1/resources.
type ResourcesChanged struct {
	Source string `json:"source"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (ResourcesChanged) Kind() string { return KindResourcesChanged }

// PromptsChanged is ResourcesChanged for prompts (event prompts_changed).
type PromptsChanged struct {
	Source string `json:"source"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (PromptsChanged) Kind() string { return KindPromptsChanged }

// ResourceUpdated is published when a server says a resource subscribed
// to (POST /v1/resources/subscribe) was updated (event resource_updated):
// read it again.
type ResourceUpdated struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// Kind is the event's name on the wire (and implements event.Event).
func (ResourceUpdated) Kind() string { return KindResourceUpdated }

// Resource is one resource a server lists.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name,omitempty"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Raw is the resource as the server sent it; its JSON is this object
	// with the fields above written over it (see Tool.Raw), so _meta,
	// icons and what FreeCode does not interpret pass on.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes r's fields over the server's object (Raw).
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	return marshalOver(r.Raw, plain(r))
}

// UnmarshalJSON decodes r and keeps the whole object as Raw.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type plain Resource
	return unmarshalKeep(b, (*plain)(r), &r.Raw)
}

// ResourceTemplate is one URI template (RFC 6570) of resources a server
// can read.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name,omitempty"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Raw is the template as the server sent it; its JSON is this object
	// with the fields above written over it (see Tool.Raw), so _meta,
	// icons and what FreeCode does not interpret pass on.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes t's fields over the server's object (Raw).
func (t ResourceTemplate) MarshalJSON() ([]byte, error) {
	type plain ResourceTemplate
	return marshalOver(t.Raw, plain(t))
}

// UnmarshalJSON decodes t and keeps the whole object as Raw.
func (t *ResourceTemplate) UnmarshalJSON(b []byte) error {
	type plain ResourceTemplate
	return unmarshalKeep(b, (*plain)(t), &t.Raw)
}

// ServerResources is one server's resources and templates, sorted by URI
// and URI template.
type ServerResources struct {
	Server string `json:"server"`
	// Phase is the server's phase when they were read (see ServerTools).
	Phase     Phase              `json:"phase"`
	Resources []Resource         `json:"resources"`
	Templates []ResourceTemplate `json:"templates"`
	// Subscriptions are the URIs serve is subscribed to, sorted.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Warnings say what of the server's lists was left out, and why.
	Warnings []string `json:"warnings,omitempty"`
}

// Resources is the answer of GET /v1/resources: every server that lists
// resources or templates (or the one asked for), sorted by name.
type Resources struct {
	Servers []ServerResources `json:"servers"`
}

// ResourceContent is one part of a read resource: text, or (without Text)
// the bytes of a binary one, base64 in JSON.
type ResourceContent struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     []byte  `json:"blob,omitempty"`
	// Raw is the part as the server sent it; its JSON is this object
	// with the fields above written over it (see Tool.Raw), so its _meta and what FreeCode does not interpret pass on.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes c's fields over the server's object (Raw).
func (c ResourceContent) MarshalJSON() ([]byte, error) {
	type plain ResourceContent
	return marshalOver(c.Raw, plain(c))
}

// UnmarshalJSON decodes c and keeps the whole object as Raw.
func (c *ResourceContent) UnmarshalJSON(b []byte) error {
	type plain ResourceContent
	return unmarshalKeep(b, (*plain)(c), &c.Raw)
}

// Binary reports whether c is binary (it has no text).
func (c ResourceContent) Binary() bool { return c.Text == nil }

// ResourceRead is the answer of GET /v1/resources/read.
type ResourceRead struct {
	Server   string            `json:"server"`
	URI      string            `json:"uri"`
	Contents []ResourceContent `json:"contents"`
}

// Subscription is the answer of POST /v1/resources/subscribe and
// /unsubscribe.
type Subscription struct {
	Server     string `json:"server"`
	URI        string `json:"uri"`
	Subscribed bool   `json:"subscribed"`
}

// PromptArgument is one (string) argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Raw is the argument as the server sent it; its JSON is this object
	// with the fields above written over it (see Tool.Raw), so what FreeCode does not interpret pass on.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes a's fields over the server's object (Raw).
func (a PromptArgument) MarshalJSON() ([]byte, error) {
	type plain PromptArgument
	return marshalOver(a.Raw, plain(a))
}

// UnmarshalJSON decodes a and keeps the whole object as Raw.
func (a *PromptArgument) UnmarshalJSON(b []byte) error {
	type plain PromptArgument
	return unmarshalKeep(b, (*plain)(a), &a.Raw)
}

// Prompt is one prompt a server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	// Raw is the prompt as the server sent it; its JSON is this object
	// with the fields above written over it (see Tool.Raw), so _meta,
	// icons and what FreeCode does not interpret pass on.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes p's fields over the server's object (Raw).
func (p Prompt) MarshalJSON() ([]byte, error) {
	type plain Prompt
	return marshalOver(p.Raw, plain(p))
}

// UnmarshalJSON decodes p and keeps the whole object as Raw.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	type plain Prompt
	return unmarshalKeep(b, (*plain)(p), &p.Raw)
}

// ServerPrompts is one server's prompts, sorted by name.
type ServerPrompts struct {
	Server   string   `json:"server"`
	Phase    Phase    `json:"phase"`
	Prompts  []Prompt `json:"prompts"`
	Warnings []string `json:"warnings,omitempty"`
}

// Prompts is the answer of GET /v1/prompts: every server that offers
// prompts (or the one asked for), sorted by name.
type Prompts struct {
	Servers []ServerPrompts `json:"servers"`
}

// PromptMessage is one message of a prompt: its role and its content
// block exactly as the server sent it (text, image, audio, resource,
// resource_link, or a type of its own).
type PromptMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// PromptResult is the answer of POST /v1/prompts/{server}/{name}.
type PromptResult struct {
	Server      string          `json:"server"`
	Prompt      string          `json:"prompt"`
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	// Meta is the result's _meta object as the server sent it (nil: none).
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// The kinds of reference a completion names (CompletionRef.Type).
const (
	RefPrompt   = "ref/prompt"   // a prompt, by name
	RefResource = "ref/resource" // a resource template, by its URI template
)

// CompletionRef is what an argument to complete belongs to: a prompt
// (Type RefPrompt, Name) or a resource template (Type RefResource, URI,
// the template as the server lists it).
type CompletionRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompletionArgument is the argument to complete: its name and the value
// typed so far.
type CompletionArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompletionRequest is the body of POST /v1/servers/{name}/complete: what
// to complete (completion/complete's params). Context holds the values of
// the other arguments already given, by name, which a server may use to
// narrow its suggestions (a department's members once the department is
// chosen).
type CompletionRequest struct {
	Ref      CompletionRef      `json:"ref"`
	Argument CompletionArgument `json:"argument"`
	Context  map[string]string  `json:"context,omitempty"`
}

// Completion is the answer of POST /v1/servers/{name}/complete: the values
// a server suggests for an argument, as many as FreeCode keeps of them
// (mcp.MaxCompletionValues, each at most mcp.MaxCompletionValueBytes).
type Completion struct {
	Server string   `json:"server"`
	Values []string `json:"values"`
	// Total is how many values the server says there are (0: it did not
	// say); HasMore says there are more than Values, because the server
	// said so or FreeCode left some out.
	Total   int  `json:"total,omitempty"`
	HasMore bool `json:"hasMore,omitempty"`
	// Dropped counts the values the server sent that FreeCode left out:
	// beyond the count it keeps, too long, or empty.
	Dropped int `json:"dropped,omitempty"`
	// Meta is the result's _meta object as the server sent it (nil: none).
	Meta json.RawMessage `json:"_meta,omitempty"`
	// Raw is what the server's completion object holds beside values,
	// total and hasMore (which FreeCode bounded or checked into the fields
	// above), nil when nothing; its JSON is this object with the fields
	// above written over it (see Tool.Raw).
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes c's fields over the server's object (Raw).
func (c Completion) MarshalJSON() ([]byte, error) {
	type plain Completion
	return marshalOver(c.Raw, plain(c))
}

// UnmarshalJSON decodes c and keeps the whole object as Raw.
func (c *Completion) UnmarshalJSON(b []byte) error {
	type plain Completion
	return unmarshalKeep(b, (*plain)(c), &c.Raw)
}
