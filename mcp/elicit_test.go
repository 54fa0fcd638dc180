package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connectElicit connects srv with opts and, at cleanup, closes the session
// and checks that no process of its group is left.
func connectElicit(t *testing.T, srv Spec, opts Options) *Session {
	t.Helper()
	opts.Logger = testLogger(t)
	s, err := Connect(context.Background(), srv, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		if pid := s.PID(); pid != 0 {
			requireGroupGone(t, pid)
		}
	})
	return s
}

// elicitCallText calls tool with args and returns the text of its result, and
// whether the result is an error.
func elicitCallText(t *testing.T, s *Session, tool, args string) (string, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), tool, json.RawMessage(args), nil)
	require.NoError(t, err)
	return textOf(t, res), res.IsError
}

// answer is an ElicitHandler that answers every request with res and
// records the requests in got.
func answer(res ElicitResult, got chan<- *Elicitation) ElicitHandler {
	return func(_ context.Context, e *Elicitation) (ElicitResult, error) {
		if got != nil {
			got <- e
		}
		return res, nil
	}
}

// The capability is declared, form and URL mode, exactly when something
// can answer; sampling never is.
func TestElicitationCapabilityOnlyWithAHandler(t *testing.T) {
	none := connect(t, localServer("none", "--ask"))
	caps, _ := elicitCallText(t, none, "capabilities", `{}`)
	assert.JSONEq(t, `{}`, caps)

	with := connectElicit(t, localServer("with", "--ask"), Options{Elicit: answer(ElicitResult{Action: ElicitDecline}, nil)})
	caps, _ = elicitCallText(t, with, "capabilities", `{}`)
	assert.JSONEq(t, `{"elicitation":{"form":{},"url":{}}}`, caps)

	u, _ := startTestServerHTTP(t, "--ask")
	remote := connectElicit(t, Spec{Name: "remote", Type: Remote, URL: u, Timeout: 10 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()},
		Options{Elicit: answer(ElicitResult{Action: ElicitDecline}, nil)})
	caps, _ = elicitCallText(t, remote, "capabilities", `{}`)
	assert.JSONEq(t, `{"elicitation":{"form":{},"url":{}}}`, caps)
}

// Over the older HTTP+SSE transport mcp-go drops the server's requests, so
// nothing is declared that could not be answered.
func TestElicitationNotDeclaredOverSSE(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--ask", "--sse")
	s := connectElicit(t, Spec{Name: "sse", Type: Remote, URL: u, Transport: TransportSSE, Timeout: 10 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()},
		Options{Elicit: answer(ElicitResult{Action: ElicitAccept}, nil)})
	caps, _ := elicitCallText(t, s, "capabilities", `{}`)
	assert.JSONEq(t, `{}`, caps)
}

// A form request reaches the handler with the server's name, the message
// and the form; an accepted answer goes back with the omitted fields'
// defaults filled in.
func TestElicitFormAcceptFillsDefaults(t *testing.T) {
	got := make(chan *Elicitation, 1)
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, got)})
	text, isErr := elicitCallText(t, s, "ask", `{"message":"Who?"}`)
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","count":3,"color":"green"}}`, text)

	e := <-got
	assert.Equal(t, "ts", e.Server)
	assert.Equal(t, ElicitForm, e.Mode)
	assert.Equal(t, "Who?", e.Message)
	require.NotNil(t, e.Form)
	var names []string
	for _, f := range e.Form.Fields {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"name", "color", "count"}, names, "required first, then by name")
	assert.Empty(t, e.Host())
}

// Decline and cancel go back without content, whatever the handler put in.
func TestElicitDeclineAndCancel(t *testing.T) {
	for _, action := range []ElicitAction{ElicitDecline, ElicitCancel} {
		s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: answer(ElicitResult{Action: action, Content: map[string]any{"name": "x"}}, nil)})
		text, _ := elicitCallText(t, s, "ask", `{}`)
		assert.JSONEq(t, fmt.Sprintf(`{"action":%q}`, action), text)
	}
}

// A handler that does not answer within Options.ElicitTimeout has its
// context ended with ErrElicitTimeout, and the server is sent "cancel",
// whatever the handler returns then.
func TestElicitTimeout(t *testing.T) {
	causes := make(chan error, 1)
	s := connectElicit(t, localServer("ts", "--ask"), Options{ElicitTimeout: 200 * time.Millisecond,
		Elicit: func(ctx context.Context, _ *Elicitation) (ElicitResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "late"}}, nil
		}})
	text, isErr := elicitCallText(t, s, "ask", `{}`)
	assert.False(t, isErr)
	assert.JSONEq(t, `{"action":"cancel"}`, text)
	assert.ErrorIs(t, <-causes, ErrElicitTimeout)
}

// An answer that does not fit the form is never sent: the server gets a
// failure naming the problem instead.
func TestElicitInvalidAnswerNotSent(t *testing.T) {
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada", "count": 11}}, nil)})
	text, isErr := elicitCallText(t, s, "ask", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, text, `-32603 the answer to server "ts" was not sent: the answer does not fit the requested form: count: at most 10, got 11`)
	assert.NotContains(t, text, "Ada")

	missing := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: answer(ElicitResult{Action: ElicitAccept}, nil)})
	text, isErr = elicitCallText(t, missing, "ask", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, text, "name: required, and not answered")
}

// A schema that is not an elicitation schema, an unknown mode and a URL
// that is not http(s) are refused as invalid params, before the handler.
func TestElicitInvalidRequests(t *testing.T) {
	var asked atomic.Int32
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: func(context.Context, *Elicitation) (ElicitResult, error) {
		asked.Add(1)
		return ElicitResult{Action: ElicitDecline}, nil
	}})
	for args, want := range map[string]string{
		`{"schema":{"type":"object","properties":{"a":{"type":"object"}}}}`:                `-32602 elicitation/create: requestedSchema: property "a": "type" must be`,
		`{"schema":{"type":"array"}}`:                                                      `-32602 elicitation/create: requestedSchema: "type" must be "object", not "array"`,
		`{"schema":{"type":"object","properties":{},"required":["x"]}}`:                    `"required" names "x", which is not a property`,
		`{"schema":{"type":"object","properties":{"n":{"type":"integer","default":"x"}}}}`: `property "n": default "x": want a number`,
	} {
		text, isErr := elicitCallText(t, s, "ask", args)
		assert.True(t, isErr, args)
		assert.Contains(t, text, want, args)
	}
	for url, want := range map[string]string{
		"javascript:alert(1)":                "is not an absolute http or https URL",
		"https://bank.example@evil.example/": "must not carry user information",
	} {
		text, isErr := elicitCallText(t, s, "ask_url", fmt.Sprintf(`{"url":%q}`, url))
		assert.True(t, isErr, url)
		assert.Contains(t, text, "-32602 elicitation/create: url", url)
		assert.Contains(t, text, want, url)
	}
	assert.Zero(t, asked.Load(), "the handler never saw an invalid request")
}

// Without a handler a request gets a clear error, not an answer.
func TestElicitWithoutHandler(t *testing.T) {
	s := connect(t, localServer("ts", "--ask"))
	text, isErr := elicitCallText(t, s, "ask", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, text, "-32601 elicitation/create is not supported by this FreeCode session: it declared no elicitation capability")
}

// Sampling is not supported: the request is answered with method not
// found, saying so, with or without an elicitation handler.
func TestSamplingRefused(t *testing.T) {
	for _, opts := range []Options{{}, {Elicit: answer(ElicitResult{Action: ElicitDecline}, nil)}} {
		s := connectElicit(t, localServer("ts", "--ask", "--client-requests"), opts)
		text, isErr := elicitCallText(t, s, "sample", `{}`)
		assert.True(t, isErr)
		assert.Equal(t, "-32601 sampling/createMessage is not supported by FreeCode: it declares no sampling capability", text)
	}
}

// URL mode: the handler gets the URL and its host (in ASCII); accepting
// sends no content.
func TestElicitURLMode(t *testing.T) {
	got := make(chan *Elicitation, 1)
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"x": 1}}, got)})
	text, isErr := elicitCallText(t, s, "ask_url", `{"url":"https://bücher.example:8443/sign-in?x=1","message":"Sign in to the shop"}`)
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"action":"accept"}`, text)
	e := <-got
	assert.Equal(t, ElicitURL, e.Mode)
	assert.Equal(t, "https://bücher.example:8443/sign-in?x=1", e.URL)
	assert.Equal(t, "xn--bcher-kva.example:8443", e.Host())
	assert.Equal(t, "Sign in to the shop", e.Message)
	assert.NotEmpty(t, e.ElicitationID)
	assert.Nil(t, e.Form)
}

// A server that cancels its request (notifications/cancelled) ends the
// handler's wait, with ErrCanceledByServer as the cause.
func TestElicitCanceledByServer(t *testing.T) {
	causes := make(chan error, 1)
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: func(ctx context.Context, _ *Elicitation) (ElicitResult, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ElicitResult{}, ctx.Err()
	}})
	text, isErr := elicitCallText(t, s, "ask", `{"cancelAfterMs":50}`)
	require.False(t, isErr, text)
	assert.Equal(t, "cancelled the elicitation", text)
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, ErrCanceledByServer)
	case <-time.After(signalWait):
		t.Fatal("the handler's context did not end")
	}
}

// Waiting for the answer holds up nothing else: other calls go on, over
// stdio and over streamable HTTP.
func TestElicitWaitBlocksNothing(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--ask")
	for name, srv := range map[string]Spec{
		"stdio": localServer("ts", "--ask"),
		"http":  {Name: "ts", Type: Remote, URL: u, Timeout: 10 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()},
	} {
		t.Run(name, func(t *testing.T) {
			asked, release := make(chan struct{}), make(chan struct{})
			s := connectElicit(t, srv, Options{Elicit: func(ctx context.Context, _ *Elicitation) (ElicitResult, error) {
				close(asked)
				select {
				case <-release:
				case <-ctx.Done():
					return ElicitResult{}, ctx.Err()
				}
				return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "late"}}, nil
			}})
			done := make(chan string, 1)
			go func() {
				res, err := s.CallTool(context.Background(), "ask", json.RawMessage(`{}`), nil)
				if err != nil {
					done <- err.Error()
					return
				}
				done <- textOf(t, res)
			}()
			<-asked
			text, _ := elicitCallText(t, s, "echo", `{"text":"meanwhile"}`)
			assert.Equal(t, "meanwhile", text)
			close(release)
			assert.JSONEq(t, `{"action":"accept","content":{"name":"late","count":3,"color":"green"}}`, <-done)
		})
	}
}

// Over streamable HTTP the handler is not bound by mcp-go's 30 seconds
// for a server's request: only by Options.ElicitTimeout, and its answer is
// still sent.
func TestElicitOverHTTPHasOnlyItsOwnDeadline(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--ask")
	left := make(chan time.Duration, 1)
	s := connectElicit(t, Spec{Name: "ts", Type: Remote, URL: u, Timeout: 10 * time.Second, Limits: testLimits(Limits{}), MaxLimits: testMaxLimits()},
		Options{Elicit: func(ctx context.Context, _ *Elicitation) (ElicitResult, error) {
			dl, _ := ctx.Deadline()
			left <- time.Until(dl)
			return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		}})
	text, isErr := elicitCallText(t, s, "ask", `{}`)
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","count":3,"color":"green"}}`, text)
	assert.Greater(t, <-left, DefaultElicitTimeout-time.Minute, "the handler's deadline is not the elicitation timeout")
}

// A handler's failure reaches the server as the request's error.
func TestElicitHandlerError(t *testing.T) {
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: func(context.Context, *Elicitation) (ElicitResult, error) {
		return ElicitResult{}, errors.New("nobody to ask")
	}})
	text, isErr := elicitCallText(t, s, "ask", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, text, `elicitation of server "ts": nobody to ask`)
}

// server-everything registers its elicitation tools only for a client that
// declares the capability (trigger-url-elicitation only for URL mode), and
// its form round-trips: the accepted answer reaches it with every omitted
// field's default.
func TestEverythingElicitation(t *testing.T) {
	cmd := npmServer(t, everythingScript, "stdio")
	without := connect(t, npmLocal("everything", cmd))
	for _, id := range []string{"mcp__everything__trigger-elicitation-request", "mcp__everything__trigger-url-elicitation"} {
		_, ok := findTool(without.Tools(), id)
		assert.False(t, ok, "%s listed without the capability", id)
	}

	got := make(chan *Elicitation, 1)
	s := connectElicit(t, npmLocal("everything", cmd), Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{
		"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "untitledMultipleSelectEnum": []any{"Piano", "Violin"},
	}}, got)})
	for _, id := range []string{"mcp__everything__trigger-elicitation-request", "mcp__everything__trigger-url-elicitation"} {
		_, ok := findTool(s.Tools(), id)
		assert.True(t, ok, "%s not listed with the capability: %v", id, toolIDs(s.Tools()))
	}
	res, err := s.CallTool(context.Background(), "trigger-elicitation-request", json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	require.False(t, res.IsError)
	var raw string
	for _, c := range res.Content {
		var tc struct{ Text string }
		require.NoError(t, json.Unmarshal(blockOf(t, c), &tc))
		raw += tc.Text + "\n"
	}
	assert.Contains(t, raw, "User provided the requested information!")
	assert.Contains(t, raw, "- Name: Ada Lovelace")
	assert.Contains(t, raw, "- Favorite Integer: 42")
	assert.Contains(t, raw, "- Favorite Number: 3.14")
	assert.Contains(t, raw, `"firstLine": "It was a dark and stormy night."`)
	assert.Contains(t, raw, `"titledSingleSelectEnum": "hero-1"`)
	assert.Contains(t, raw, `"legacyTitledEnum": "pet-1"`)

	e := <-got
	assert.Equal(t, "everything", e.Server)
	assert.Equal(t, "Please provide inputs for the following fields:", e.Message)
	require.Len(t, e.Form.Fields, 13)
	assert.Equal(t, "name", e.Form.Fields[0].Name)
	assert.True(t, e.Form.Fields[0].Required)
	hero, ok := e.Form.Field("titledSingleSelectEnum")
	require.True(t, ok)
	assert.Equal(t, KindChoice, hero.Kind)
	assert.Equal(t, []Option{{"hero-1", "Superman"}, {"hero-2", "Green Lantern"}, {"hero-3", "Wonder Woman"}}, hero.Options)
	pets, _ := e.Form.Field("legacyTitledEnum")
	assert.Equal(t, Option{"pet-2", "Dogs"}, pets.Options[1])
	fish, _ := e.Form.Field("titledMultipleSelectEnum")
	assert.Equal(t, KindChoices, fish.Kind)
	assert.Equal(t, []string{"fish-1"}, fish.Default)
	birth, _ := e.Form.Field("birthdate")
	assert.Equal(t, FormatDate, birth.Format)
}

// A server that asks more than MaxPendingElicitations questions at once
// gets an error for each one beyond, not another goroutine and another
// question waiting for a person; once one is answered it may ask again.
func TestElicitationsBounded(t *testing.T) {
	held := make(chan struct{}, MaxPendingElicitations+1)
	release := make(chan struct{})
	handler := func(ctx context.Context, e *Elicitation) (ElicitResult, error) {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ElicitResult{Action: ElicitDecline}, nil
	}
	s := connectElicit(t, localServer("ts", "--ask"), Options{Elicit: handler})
	type outcome struct {
		text  string
		isErr bool
	}
	results := make(chan outcome, MaxPendingElicitations+1)
	for range MaxPendingElicitations {
		go func() {
			text, isErr := elicitCallText(t, s, "ask", `{"message":"one of many"}`)
			results <- outcome{text, isErr}
		}()
	}
	for range MaxPendingElicitations {
		<-held
	}
	ninth := make(chan string, 1)
	go func() {
		text, _ := elicitCallText(t, s, "ask", `{"message":"one too many"}`)
		ninth <- text
	}()
	select {
	case text := <-ninth:
		assert.Contains(t, text, "too many elicitations at once")
	case <-held:
		close(release)
		t.Fatal("one elicitation more than MaxPendingElicitations reached the handler")
	}
	close(release)
	for range MaxPendingElicitations {
		r := <-results
		assert.Contains(t, r.text, `"decline"`)
	}
	// Places are free again.
	text, _ := elicitCallText(t, s, "ask", `{"message":"again"}`)
	assert.Contains(t, text, `"decline"`)
}
