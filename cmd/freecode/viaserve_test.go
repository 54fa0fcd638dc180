package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// A command goes through serve only when serve runs the server as the
// command would: a tools filter serve has not applied yet (it may still
// register a tool the filter hides) sends it the one-shot way, which
// applies the filter itself.
func TestUnlikeServeComparesTheToolsFilter(t *testing.T) {
	srv := schema.Server{Name: "s", Type: schema.Local, Command: []string{"x"}, Enabled: true}
	cfg := &schema.Config{Path: "/home/u/.freecode/config.json"}
	status := func(filter string) wire.Status {
		return wire.Status{ConfigPath: cfg.Path, ServePID: 42, Servers: []wire.ServerStatus{{Name: "s",
			Desired: wire.Desired{Enabled: true, SpecHash: srv.SpecHash(), ToolsFilter: filter}}}}
	}
	a := &app{}
	assert.Empty(t, a.unlikeServe(status(""), cfg, srv))

	srv.Tools = schema.ToolFilter{Exclude: []string{"delete_*"}}
	assert.Equal(t, `freecode serve (pid 42) has not applied this tools filter of "s" yet`, a.unlikeServe(status(""), cfg, srv))
	assert.Empty(t, a.unlikeServe(status(srv.Tools.Key()), cfg, srv))
}
