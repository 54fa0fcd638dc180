// Package mcpregistry reads the MCP Registry's /v0.1 API (the official
// registry and the sub-registries that speak it) and maps a server.json to
// a FreeCode server entry. Everything a registry sends is bounded here
// (time, bytes, counts) before it is used; text it sends is shown by the
// caller through internal/termtext.
package mcpregistry

import (
	"encoding/json"
	"time"
)

// OfficialURL is the registry read when mcp.registries is unset.
const OfficialURL = "https://registry.modelcontextprotocol.io"

// Status values of a registry entry.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// Package registry types of server.json.
const (
	TypeNPM   = "npm"
	TypePyPI  = "pypi"
	TypeOCI   = "oci"
	TypeNuGet = "nuget"
	TypeMCPB  = "mcpb"
	TypeCargo = "cargo"
)

// Transport types of server.json.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// ServerJSON is a server.json document (schema 2025-12-11 and the
// 2025-09/10 revisions it extends).
type ServerJSON struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Title       string      `json:"title,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Icons       []Icon      `json:"icons,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
	// Meta is kept as sent; FreeCode interprets none of it.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Repository is where a server's source lives.
type Repository struct {
	URL       string `json:"url,omitempty"`
	Source    string `json:"source,omitempty"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Icon is one of a server's icons; FreeCode shows none of them.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Package is one way to run a server locally.
type Package struct {
	RegistryType         string          `json:"registryType"`
	RegistryBaseURL      string          `json:"registryBaseUrl,omitempty"`
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version,omitempty"`
	FileSHA256           string          `json:"fileSha256,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport or a remote.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user may have to give.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	// Variables fill the {curly} names of Value.
	Variables map[string]Input `json:"variables,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}

// Argument is a runtime or package argument.
type Argument struct {
	Input
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// Official is the registry's own metadata of an entry.
type Official struct {
	Status          string    `json:"status"`
	StatusChangedAt time.Time `json:"statusChangedAt,omitzero"`
	StatusMessage   string    `json:"statusMessage,omitempty"`
	PublishedAt     time.Time `json:"publishedAt,omitzero"`
	UpdatedAt       time.Time `json:"updatedAt,omitzero"`
	IsLatest        bool      `json:"isLatest"`
}

// Entry is one server version as a registry lists it.
type Entry struct {
	// Registry is the base URL it was read from.
	Registry string     `json:"registry"`
	Server   ServerJSON `json:"server"`
	Official Official   `json:"official"`
	// Raw is the server object exactly as sent; Digest is "sha256:" and
	// the hex SHA-256 of it.
	Raw    json.RawMessage `json:"-"`
	Digest string          `json:"digest"`
}
