package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/freecode/freecode/schema"
)

// The words every command and serve's status show for a held server or an
// ignored project.
func TestHoldReason(t *testing.T) {
	const (
		proj = "/src/app/.freecode/settings.json"
		user = "/home/me/.freecode/config.json"
	)
	errs := schema.Errors{{File: proj, Line: 3, Col: 5, Msg: "environment variable DOCS_TOKEN is not set"}}
	trust := func(s schema.TrustState) schema.Trust { return schema.Trust{Project: proj, State: s} }
	changed := schema.Trust{Project: proj, State: schema.ChangedSinceTrusted, Since: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name string
		hold schema.Hold
		want string
	}{
		{"never trusted", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: trust(schema.NeverTrusted)},
			"project " + proj + " is not trusted; review it with `freecode mcp trust /src/app`"},
		{"never trusted, name clash", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: trust(schema.NeverTrusted), UserFile: user},
			"project " + proj + " is not trusted; review it with `freecode mcp trust /src/app` (its server \"docs\" also has the name of one in " + user + ")"},
		{"changed since trusted", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: changed},
			"project " + proj + " changed since it was trusted on 2026-11-02; review it again with `freecode mcp trust /src/app`"},
		{"no trust store", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: trust(schema.NoTrustStore)},
			"no trust store"},
		{"invalid", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: schema.Trust{Project: proj, State: schema.ProjectInvalid, Err: errs}},
			"project " + proj + " is invalid and ignored:\n" + proj + ":3:5: environment variable DOCS_TOKEN is not set"},
		{"trusted, unresolved", schema.Hold{Kind: schema.HoldUntrusted, Server: "docs", Trust: schema.Trust{Project: proj, State: schema.TrustedUnresolved, Err: errs}, UserFile: user},
			"project " + proj + " is trusted but cannot run until this is fixed:\n" + proj + ":3:5: environment variable DOCS_TOKEN is not set (its server \"docs\" also has the name of one in " + user + ")"},
		{"unset variable", schema.Hold{Kind: schema.HoldInvalid, Server: "docs", Errors: schema.Errors{{File: user, Line: 6, Col: 17, Msg: "environment variable DOCS_TOKEN is not set", Var: "DOCS_TOKEN"}}},
			"server \"docs\" has errors; set the variable where freecode runs, or turn the server off with `freecode mcp disable docs`; the other servers run meanwhile:\n" + user + ":6:17: environment variable DOCS_TOKEN is not set"},
		{"bad entry", schema.Hold{Kind: schema.HoldInvalid, Server: "docs", Errors: schema.Errors{{File: user, Line: 6, Col: 17, Msg: "type must be \"local\" or \"remote\""}}},
			"server \"docs\" has errors; fix its entry, or take it out with `freecode mcp remove docs`; the other servers run meanwhile:\n" + user + ":6:17: type must be \"local\" or \"remote\""},
		{"entry without a name", schema.Hold{Kind: schema.HoldInvalid, Server: "mcp.servers[2]", Errors: schema.Errors{{File: user, Line: 6, Col: 17, Msg: "server name must start with a letter"}}},
			"the entry mcp.servers[2] has errors (and no valid name); fix it in the file; the other servers run meanwhile:\n" + user + ":6:17: server name must start with a letter"},
		{"conflict", schema.Hold{Kind: schema.HoldConflict, Server: "docs", Trust: trust(schema.Trusted), UserFile: user},
			"server \"docs\" is defined both in " + user + " and in " + proj + "; rename or remove one (neither runs until then)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, holdReason(&tc.hold))
		})
	}

	invalid := schema.Trust{Project: proj, State: schema.ProjectInvalid, Err: errs}
	assert.Equal(t, "project "+proj+" is invalid and ignored:\n"+proj+":3:5: environment variable DOCS_TOKEN is not set",
		projectError(&schema.Config{Project: &schema.ProjectStatus{Path: proj, Trust: invalid}}))
	assert.Empty(t, projectError(&schema.Config{Project: &schema.ProjectStatus{Path: proj, Trust: trust(schema.NeverTrusted)}}), "only an ignored project is an error")
	assert.Empty(t, projectError(&schema.Config{}))
}
