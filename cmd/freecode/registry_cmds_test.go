package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcpregistry"
)

func TestPromptMissing(t *testing.T) {
	me := &mcpregistry.MissingError{Server: "com.example/w", Flags: []string{"--arg dir=…", "--env REGION=…", "--var tenant=…"}}
	var f installFlags
	var out bytes.Buffer
	require.NoError(t, promptMissing(bufio.NewReader(strings.NewReader("/data\neu\nacme\n")), &out, me, &f))
	assert.Equal(t, []string{"dir=/data"}, f.args)
	assert.Equal(t, []string{"REGION=eu"}, f.envs)
	assert.Equal(t, []string{"tenant=acme"}, f.vars)
	assert.Equal(t, "com.example/w needs dir (--arg): com.example/w needs REGION (--env): com.example/w needs tenant (--var): ", out.String())

	f = installFlags{}
	err := promptMissing(bufio.NewReader(strings.NewReader("/data\n")), &out, me, &f)
	assert.ErrorIs(t, err, mcpregistry.ErrMissing, "an empty answer (or the end) stops")
}

func TestLocalNameAndVersionDir(t *testing.T) {
	for in, want := range map[string]string{
		"io.github.modelcontextprotocol/server-memory": "server-memory",
		"com.example/My.Server__x_":                    "My-Server_x",
		"a.b/123":                                      "server",
		"a.b/builtin":                                  "server",
		"a.b/" + strings.Repeat("x", 60):               strings.Repeat("x", 48),
	} {
		assert.Equal(t, want, localName(in), in)
	}
	for in, want := range map[string]string{"1.0.0": "1.0.0", "../..": "v..-..", "1.0/x": "1.0-x", "": "v"} {
		assert.Equal(t, want, versionDir(in), in)
	}
}
