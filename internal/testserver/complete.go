package testserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// The values --completions suggests. Each list is filtered by the prefix
// typed (case-sensitive), in this order.

// CompletionNames are the names greet's "name" completes to.
func CompletionNames() []string { return []string{"Ada", "Alan", "Alonzo", "Grace", "Linus"} }

// CompletionGreetings are greet's "greeting" values; with the name "Ada"
// given (context.arguments), CompletionGreetingsAda instead.
func CompletionGreetings() []string { return []string{"Hello", "Hi", "Howdy"} }

// CompletionGreetingsAda are greet's "greeting" values for Ada.
func CompletionGreetingsAda() []string { return []string{"Good day", "Hello"} }

// CompletionItems are the ids of ItemTemplate; at most CompletionItemsSent
// of the matches are sent, with their total and hasMore when there are
// more.
func CompletionItems() []string { return []string{"1", "2", "3", "10", "11", "12", "100"} }

// CompletionItemsSent is how many item ids one answer holds.
const CompletionItemsSent = 3

// Values of greet's "name" that make a hostile answer instead.
const (
	// CompleteMany answers 150 values v000 .. v149 (total 150): more than
	// the protocol's 100.
	CompleteMany = "!many"
	// CompleteLong answers "short", a value of 2,000 bytes and "after".
	CompleteLong = "!long"
	// CompleteEvil answers one value holding EvilText.
	CompleteEvil = "!evil"
)

// completer answers completion/complete for --completions.
type completer struct{}

// CompletePromptArgument completes greet's arguments.
func (completer) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != "greet" {
		return nil, fmt.Errorf("no prompt %q to complete", prompt)
	}
	switch arg.Name {
	case "name":
		switch arg.Value {
		case CompleteMany:
			vs := make([]string, 150)
			for i := range vs {
				vs[i] = fmt.Sprintf("v%03d", i)
			}
			return &mcp.Completion{Values: vs, Total: len(vs)}, nil
		case CompleteLong:
			return &mcp.Completion{Values: []string{"short", strings.Repeat("x", 2000), "after"}}, nil
		case CompleteEvil:
			return &mcp.Completion{Values: []string{EvilText}}, nil
		}
		return &mcp.Completion{Values: prefixed(CompletionNames(), arg.Value)}, nil
	case "greeting":
		if cc.Arguments["name"] == "Ada" {
			return &mcp.Completion{Values: prefixed(CompletionGreetingsAda(), arg.Value)}, nil
		}
		return &mcp.Completion{Values: prefixed(CompletionGreetings(), arg.Value)}, nil
	}
	return nil, fmt.Errorf("prompt greet has no argument %q", arg.Name)
}

// CompleteResourceArgument completes ItemTemplate's id.
func (completer) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if uri != ItemTemplate || arg.Name != "id" {
		return nil, fmt.Errorf("nothing to complete of %q argument %q", uri, arg.Name)
	}
	all := prefixed(CompletionItems(), arg.Value)
	c := &mcp.Completion{Values: all[:min(len(all), CompletionItemsSent)]}
	if len(all) > CompletionItemsSent {
		c.Total, c.HasMore = len(all), true
	}
	return c, nil
}

// prefixed is the values of vs that start with prefix, never nil.
func prefixed(vs []string, prefix string) []string {
	out := []string{}
	for _, v := range vs {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
