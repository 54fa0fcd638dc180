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
}

// Prompt is one prompt a server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
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
}
