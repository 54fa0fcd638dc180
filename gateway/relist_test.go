package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/wire"
)

// listsEngine has n servers of one tool, one resource and one prompt
// each, and answers only what a list asks.
type listsEngine struct {
	api.Engine // not called
	n          int
}

func (e listsEngine) Tools(_ context.Context, dialect string) (api.Tools, error) {
	out := api.Tools{Dialect: dialect, Tools: []defs.Def{}}
	for i := range e.n {
		out.Tools = append(out.Tools, defs.Def{Name: fmt.Sprintf("mcp__s%d__t", i), Description: "t"})
	}
	out.Count = len(out.Tools)
	return out, nil
}

func (e listsEngine) Lists(context.Context) (wire.Lists, error) {
	ls := wire.Lists{Instructions: map[string]string{}}
	for i := range e.n {
		name := fmt.Sprintf("s%d", i)
		ls.Tools = append(ls.Tools, wire.ServerTools{Server: name, Phase: wire.PhaseReady,
			Tools: []wire.Tool{{ID: "mcp__" + name + "__t", Name: "t", Title: "T of " + name}}})
		ls.Resources.Servers = append(ls.Resources.Servers, wire.ServerResources{Server: name, Phase: wire.PhaseReady,
			Resources: []wire.Resource{{URI: "file:///r", Name: "r"}}, Templates: []wire.ResourceTemplate{}})
		ls.Prompts.Servers = append(ls.Prompts.Servers, wire.ServerPrompts{Server: name, Phase: wire.PhaseReady,
			Prompts: []wire.Prompt{{Name: "p"}}})
		ls.Instructions[name] = "use " + name
	}
	return ls, nil
}

// serveCounting serves the API of e on a socket and returns a client of
// it and the requests it answered so far.
func serveCounting(t *testing.T, e api.Engine) (*api.Client, func() []string) {
	t.Helper()
	sock := filepath.Join(servetest.ShortHome(t), "api.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	var mu sync.Mutex
	var reqs []string
	h := api.NewServer(e, api.ServerOptions{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.Method+" "+r.URL.Path)
		mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.True(t, errors.Is(<-served, http.ErrServerClosed))
	})
	c, err := api.Dial(sock)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reqs...)
	}
}

// An attached gateway's relist asks serve twice, whatever the number of
// servers: the definitions, and everything the servers list.
func TestRelistRequestsDoNotGrowWithServers(t *testing.T) {
	for _, n := range []int{1, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			client, reqs := serveCounting(t, listsEngine{n: n})
			g := newGateway(client, func() bool { return false }, Options{Logger: logr.Discard()})
			g.relist(t.Context())
			assert.Equal(t, []string{"GET /v1/tools", "GET /v1/lists"}, reqs())

			e := <-g.current
			g.current <- e
			require.Len(t, e.tools, n)
			assert.Equal(t, "T of s0", e.tools[0].Title, "the tool joins its definition")
			in := <-g.instructions
			g.instructions <- in
			assert.Contains(t, in, "use s0")
		})
	}
}
