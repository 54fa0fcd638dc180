package wire

// The types of MCP content blocks (a tool result's content[].type) that
// FreeCode knows. A block of another type is passed on as the server sent
// it. Packages compare a block's type with these constants, never with the
// bare strings.
const (
	// ContentText: {"type": "text", "text": …}.
	ContentText = "text"
	// ContentImage: {"type": "image", "data": base64, "mimeType": …}.
	ContentImage = "image"
	// ContentAudio: {"type": "audio", "data": base64, "mimeType": …}.
	ContentAudio = "audio"
	// ContentResource: an embedded resource, {"type": "resource",
	// "resource": {"uri", "text" or "blob", …}}.
	ContentResource = "resource"
	// ContentResourceLink: a link to a resource, {"type":
	// "resource_link", "uri": …, "name": …}.
	ContentResourceLink = "resource_link"
)
