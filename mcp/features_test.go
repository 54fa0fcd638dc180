package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/wire"
)

func resourceURIs(f Features) []string {
	out := make([]string, len(f.Resources))
	for i, r := range f.Resources {
		out[i] = r.URI
	}
	return out
}

func promptNames(f Features) []string {
	out := make([]string, len(f.Prompts))
	for i, p := range f.Prompts {
		out[i] = p.Name
	}
	return out
}

// callText calls tool and returns its first text block.
func callText(t *testing.T, s *Session, tool, args string) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), tool, json.RawMessage(args), nil)
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %s", tool, res.Content)
	return textOf(t, res)
}

// Resources, templates and prompts are listed over all their pages, with
// what the server declared; a server that declares none has none.
func TestFeaturesListed(t *testing.T) {
	s := connect(t, localServer("f", "--resources", "3", "--prompts", "--page-size", "2"))
	f := s.Features()
	require.Equal(t, Offers{Resources: true, Subscribe: true, ResourcesListChanged: true, Prompts: true, PromptsListChanged: true}, f.Offers)
	require.Equal(t, []string{testserver.BinaryURI, "test://text/0", "test://text/1", "test://text/2"}, resourceURIs(f))
	require.Len(t, f.Templates, 1)
	require.Equal(t, testserver.ItemTemplate, f.Templates[0].URITemplate)
	require.Equal(t, "item", f.Templates[0].Name)
	require.Equal(t, []string{"greet", "plain"}, promptNames(f))
	greet := f.Prompts[0]
	require.Equal(t, "Greeting", greet.Title)
	// Each argument keeps what the server declared, beside its fields.
	require.JSONEq(t, `{"name":"name","description":"Who to greet","required":true}`, string(greet.Arguments[0].Raw))
	for i := range greet.Arguments {
		greet.Arguments[i].Raw = nil
	}
	require.Equal(t, []wire.PromptArgument{{Name: "name", Description: "Who to greet", Required: true},
		{Name: "greeting", Description: "The word to greet with (default Hello)"}}, greet.Arguments)
	bin := f.Resources[0]
	require.Equal(t, "application/octet-stream", bin.MimeType)
	require.NotNil(t, bin.Size)
	require.EqualValues(t, 256, *bin.Size)
	require.Empty(t, f.Problems)

	plain := connect(t, localServer("plain"))
	require.Equal(t, Features{}, plain.Features())
	_, err := plain.ReadResource(context.Background(), "test://text/0")
	require.ErrorIs(t, err, ErrNotOffered)
	require.EqualError(t, err, `server "plain" offers no resources (its initialize result does not declare them), so resources/read "test://text/0" is not sent`)
	_, err = plain.GetPrompt(context.Background(), "greet", nil)
	require.ErrorIs(t, err, ErrNotOffered)
	require.ErrorIs(t, plain.Subscribe(context.Background(), "test://text/0"), ErrNotOffered)
}

// Text and binary resources read back exactly; a template's URI reads too,
// and an unknown one says the server has no such resource.
func TestReadResource(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "remote"}[remote], func(t *testing.T) {
			flags := []string{"--resources", "2"}
			srv := localServer("r", flags...)
			if remote {
				u, _ := startTestServerHTTP(t, flags...)
				srv = remoteServer("r", u, TransportStreamableHTTP)
			}
			s := connect(t, srv)
			ctx := context.Background()
			got, err := s.ReadResource(ctx, "test://text/1")
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, "test://text/1", got[0].URI)
			require.Equal(t, "text/plain", got[0].MimeType)
			require.False(t, got[0].Binary())
			require.Equal(t, testserver.TextContents(1), *got[0].Text)

			got, err = s.ReadResource(ctx, testserver.BinaryURI)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.True(t, got[0].Binary())
			require.Equal(t, testserver.BinaryContents(), got[0].Blob)

			got, err = s.ReadResource(ctx, "test://items/42")
			require.NoError(t, err)
			require.Equal(t, "item 42", *got[0].Text)

			_, err = s.ReadResource(ctx, "test://nothing")
			require.Error(t, err)
			require.NotErrorIs(t, err, ErrTransport)
			require.Contains(t, err.Error(), `server "r": resources/read "test://nothing": `)
		})
	}
}

// A resources/list without end is bounded like tools/list, and the error
// says what was listed.
func TestEndlessResourcePages(t *testing.T) {
	srv := localServer("p", "--endless-resource-pages", "--page-size", "4")
	srv.Limits = testLimits(Limits{MaxListPages: 3})
	err := connectFails(t, srv)
	requireLimit(t, err, "p", "resources/list", "maxListPages")
	require.EqualError(t, err, `server "p": resources/list: the server needed more than 3 pages to list its resources (limit mcp.limits.maxListPages); raise it for this server with "limits": {"maxListPages": 6} if it is legitimate`)

	srv = localServer("p", "--endless-resource-pages", "--page-size", "4")
	srv.Limits = testLimits(Limits{MaxListItems: 10})
	require.ErrorContains(t, connectFails(t, srv), "listed more than 10 resources")

	srv = localServer("p", "--endless-resource-pages", "--page-size", "100")
	srv.Timeout = time.Second
	srv.Limits = testLimits(Limits{MaxListPages: testMaxMaxListPages, MaxListItems: testMaxMaxListItems, MaxListBytes: testMaxMaxListBytes})
	err = connectFails(t, srv)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Regexp(t, `^server "p": no answer to resources/list within 1s \(received [1-9][0-9]*00 resources in [1-9][0-9]* pages so far\)`, err.Error())
}

// A list_changed is followed by a re-list, and FeaturesChanged fires only
// when something really changed.
func TestFeaturesFollowListChanged(t *testing.T) {
	s := connect(t, localServer("c", "--resources", "1", "--prompts"))
	// Announced, nothing changed. The server sends its notifications in
	// order, and the session re-lists on one goroutine: the re-list of
	// features comes before the re-list of tools that add_tool causes, or
	// (when both are due at once) before the one after that.
	callText(t, s, "relist", "{}")
	for _, name := range []string{"x1", "x2"} {
		callText(t, s, "add_tool", `{"name": "`+name+`"}`)
		waitClosed(t, s.ToolsChanged(), "ToolsChanged after add_tool")
	}
	select {
	case <-s.FeaturesChanged():
		t.Fatal("FeaturesChanged after a re-list that found no change")
	default:
	}

	callText(t, s, "set_resource", `{"uri": "test://new", "text": "fresh"}`)
	waitClosed(t, s.FeaturesChanged(), "FeaturesChanged after a new resource")
	require.Contains(t, resourceURIs(s.Features()), "test://new")
	got, err := s.ReadResource(context.Background(), "test://new")
	require.NoError(t, err)
	require.Equal(t, "fresh", *got[0].Text)

	callText(t, s, "add_prompt", `{"name": "later"}`)
	waitClosed(t, s.FeaturesChanged(), "FeaturesChanged after a new prompt")
	require.Equal(t, []string{"greet", "later", "plain"}, promptNames(s.Features()))

	callText(t, s, "remove_resource", `{"uri": "test://new"}`)
	waitClosed(t, s.FeaturesChanged(), "FeaturesChanged after a removed resource")
	require.NotContains(t, resourceURIs(s.Features()), "test://new")
}

// An update of a subscribed resource is reported; one of a resource not
// subscribed to, or no longer, is not.
func TestResourceSubscriptions(t *testing.T) {
	s := connect(t, localServer("sub", "--resources", "2"))
	ctx := context.Background()
	require.NoError(t, s.Subscribe(ctx, "test://text/0"))
	// The server sends notifications in order: the update of text/1 comes
	// before that of text/0, and was ignored by then.
	callText(t, s, "set_resource", `{"uri": "test://text/1", "text": "not watched"}`)
	callText(t, s, "set_resource", `{"uri": "test://text/0", "text": "watched"}`)
	waitClosed(t, s.ResourceUpdates(), "ResourceUpdates")
	require.Equal(t, []string{"test://text/0"}, s.TakeResourceUpdates())
	require.Empty(t, s.TakeResourceUpdates())

	require.NoError(t, s.Unsubscribe(ctx, "test://text/0"))
	require.NoError(t, s.Subscribe(ctx, "test://text/1"))
	callText(t, s, "set_resource", `{"uri": "test://text/0", "text": "again"}`)
	callText(t, s, "set_resource", `{"uri": "test://text/1", "text": "now watched"}`)
	waitClosed(t, s.ResourceUpdates(), "ResourceUpdates")
	require.Equal(t, []string{"test://text/1"}, s.TakeResourceUpdates())
}

// Required arguments are checked before the request, against what the
// prompt declares; the message names the argument and all of them.
func TestGetPrompt(t *testing.T) {
	s := connect(t, localServer("p", "--prompts", "--call-log", t.TempDir()+"/calls"))
	ctx := context.Background()
	res, err := s.GetPrompt(ctx, "greet", map[string]string{"name": "Ada", "greeting": "Hi"})
	require.NoError(t, err)
	require.Equal(t, "A greeting.", res.Description)
	require.Len(t, res.Messages, 1)
	require.Equal(t, "user", res.Messages[0].Role)
	require.JSONEq(t, `{"type":"text","text":"Hi, Ada!"}`, string(res.Messages[0].Content))

	_, err = s.GetPrompt(ctx, "greet", map[string]string{"greeting": "Hi"})
	require.ErrorIs(t, err, ErrPromptArguments)
	require.EqualError(t, err, `server "p": prompt "greet" needs the argument "name"; its arguments: name (required), greeting`)
	_, err = s.GetPrompt(ctx, "greet", map[string]string{"name": "Ada", "nmae": "x"})
	require.EqualError(t, err, `server "p": prompt "greet" has no argument "nmae"; its arguments: name (required), greeting`)
	_, err = s.GetPrompt(ctx, "plain", map[string]string{"x": "1"})
	require.EqualError(t, err, `server "p": prompt "plain" has no argument "x"; it takes no arguments`)
	_, err = s.GetPrompt(ctx, "gret", nil)
	require.ErrorIs(t, err, ErrUnknownPrompt)
	require.EqualError(t, err, `server "p" has no prompt "gret" (its prompts: greet, plain)`)
}

// Instructions are kept up to MaxInstructionsBytes, cut at a character
// boundary, and the cut is said.
func TestInstructions(t *testing.T) {
	s := connect(t, localServer("i", "--instructions", "Call echo first."))
	require.Equal(t, Instructions{Text: "Call echo first.", Bytes: 16}, s.Instructions())

	const sent = 5001
	s = connect(t, localServer("long", "--instructions-bytes", strconv.Itoa(sent)))
	in := s.Instructions()
	require.True(t, in.Cut)
	require.Equal(t, sent-1, in.Bytes) // whole two-byte characters only
	require.LessOrEqual(t, len(in.Text), MaxInstructionsBytes)
	require.Greater(t, len(in.Text), MaxInstructionsBytes-utf8.UTFMax)
	require.True(t, utf8.ValidString(in.Text))
	require.True(t, strings.HasPrefix(in.Text, "Use this server well. é"))
}

// server-everything's resources, templates and prompts list and read; a
// resource_link of a tool result reads back through the same path; a
// resource a tool creates is announced and followed; a subscription hears
// of updates.
func TestEverythingFeatures(t *testing.T) {
	s := connect(t, npmLocal("everything", npmServer(t, everythingScript, "stdio")))
	ctx := context.Background()
	f := s.Features()
	require.Equal(t, Offers{Resources: true, Subscribe: true, ResourcesListChanged: true, Prompts: true, PromptsListChanged: true, Completions: true}, f.Offers)
	require.Empty(t, f.Problems)
	require.Contains(t, resourceURIs(f), "demo://resource/static/document/instructions.md")
	require.Len(t, f.Resources, 7, "the files of its docs directory: %v", resourceURIs(f))
	var templates []string
	for _, tm := range f.Templates {
		templates = append(templates, tm.URITemplate)
	}
	require.Equal(t, []string{"demo://resource/dynamic/blob/{resourceId}", "demo://resource/dynamic/text/{resourceId}"}, templates)
	require.Equal(t, []string{"args-prompt", "completable-prompt", "resource-prompt", "simple-prompt"}, promptNames(f))
	in := s.Instructions()
	require.False(t, in.Cut)
	require.True(t, strings.HasPrefix(in.Text, "# Everything Server"), in.Text)

	got, err := s.ReadResource(ctx, "demo://resource/static/document/instructions.md")
	require.NoError(t, err)
	require.Equal(t, "text/markdown", got[0].MimeType)
	require.Equal(t, in.Text, *got[0].Text)

	got, err = s.ReadResource(ctx, "demo://resource/dynamic/blob/7")
	require.NoError(t, err)
	require.True(t, got[0].Binary())
	require.Contains(t, string(got[0].Blob), "Resource 7: This is a base64 blob")

	// The links of a tool result read back.
	res, err := s.CallTool(ctx, "get-resource-links", json.RawMessage(`{"count": 2}`), nil)
	require.NoError(t, err)
	var links []string
	for _, block := range res.Content {
		var b struct{ Type, URI string }
		require.NoError(t, json.Unmarshal(blockOf(t, block), &b))
		if b.Type == "resource_link" {
			links = append(links, b.URI)
		}
	}
	require.Equal(t, []string{"demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2"}, links)
	got, err = s.ReadResource(ctx, links[1])
	require.NoError(t, err)
	require.Contains(t, *got[0].Text, "Resource 2: This is a plaintext resource")

	// A resource made by a tool is announced (list_changed), and its link
	// reads back binary.
	res, err = s.CallTool(ctx, "gzip-file-as-resource", json.RawMessage(`{"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8K", "outputType": "resourceLink"}`), nil)
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", res.Content)
	waitClosed(t, s.FeaturesChanged(), "FeaturesChanged after gzip-file-as-resource")
	require.Contains(t, resourceURIs(s.Features()), "demo://resource/session/hello.gz")
	got, err = s.ReadResource(ctx, "demo://resource/session/hello.gz")
	require.NoError(t, err)
	require.True(t, got[0].Binary())
	require.Equal(t, "application/gzip", got[0].MimeType)
	require.Equal(t, []byte{0x1f, 0x8b}, got[0].Blob[:2], "gzip magic")

	// Prompts: arguments checked before the request, then sent.
	_, err = s.GetPrompt(ctx, "args-prompt", map[string]string{"state": "Texas"})
	require.EqualError(t, err, `server "everything": prompt "args-prompt" needs the argument "city"; its arguments: city (required), state`)
	pr, err := s.GetPrompt(ctx, "args-prompt", map[string]string{"city": "Austin", "state": "Texas"})
	require.NoError(t, err)
	require.Len(t, pr.Messages, 1)
	require.JSONEq(t, `{"type":"text","text":"What's weather in Austin, Texas?"}`, string(pr.Messages[0].Content))
	pr, err = s.GetPrompt(ctx, "resource-prompt", map[string]string{"resourceType": "Text", "resourceId": "3"})
	require.NoError(t, err)
	require.Len(t, pr.Messages, 2)
	require.Contains(t, string(pr.Messages[1].Content), `"type":"resource"`)
	_, err = s.GetPrompt(ctx, "resource-prompt", map[string]string{"resourceType": "Video", "resourceId": "3"})
	require.ErrorContains(t, err, "Invalid resourceType: Video")

	// Completions: the second argument's values depend on the first's,
	// sent as context.
	ref := wire.CompletionRef{Type: wire.RefPrompt, Name: "completable-prompt"}
	c, err := s.Complete(ctx, ref, wire.CompletionArgument{Name: "department", Value: "S"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"Sales", "Support"}, c.Values)
	c, err = s.Complete(ctx, ref, wire.CompletionArgument{Name: "name"}, map[string]string{"department": "Engineering"})
	require.NoError(t, err)
	require.Equal(t, []string{"Alice", "Bob", "Charlie"}, c.Values)

	// A subscription hears of updates: the server sends one at once when
	// its simulated updates are turned on.
	require.NoError(t, s.Subscribe(ctx, "demo://resource/static/document/features.md"))
	_, err = s.CallTool(ctx, "toggle-subscriber-updates", json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	waitClosed(t, s.ResourceUpdates(), "ResourceUpdates")
	require.Equal(t, []string{"demo://resource/static/document/features.md"}, s.TakeResourceUpdates())
}

// A read is one message: a resource larger than the server's
// MaxMessageBytes is not buffered whole; the read fails naming the limit.
func TestReadResourceBounded(t *testing.T) {
	srv := localServer("big", "--resources", "1")
	srv.Limits = testLimits(Limits{MaxMessageBytes: testMinMaxMessageBytes})
	s := connect(t, srv)
	text := strings.Repeat("x", 2*testMinMaxMessageBytes)
	callText(t, s, "set_resource", `{"uri": "test://text/0", "text": "`+text+`"}`)
	_, err := s.ReadResource(context.Background(), "test://text/0")
	le := requireLimit(t, err, "big", "", "maxMessageBytes")
	require.Equal(t, int64(testMinMaxMessageBytes), le.Value)
}
