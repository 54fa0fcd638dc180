package controller

import (
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
)

// MCPSpec is what package mcp needs of a configured server, as schema
// resolved it (its Timeout and Limits are set), with the limits' bounds
// config.cue allows (schema.MaxMax*), which an mcp.LimitError suggests
// raising a limit within. Everything that starts sessions from the config
// builds its specs here. A remote server's oauth object becomes Spec.OAuth
// (absent: the zero value, which discovers everything).
func MCPSpec(srv schema.Server) mcp.Spec {
	lim := srv.Limits
	var oauth mcp.OAuth
	if o := srv.OAuth; o != nil {
		oauth = mcp.OAuth{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes,
			Grant: mcp.OAuthGrant(o.Grant), CallbackPort: o.CallbackPort, ClientMetadataURL: o.ClientMetadataURL}
	}
	return mcp.Spec{
		Name:      srv.Name,
		Type:      mcp.ServerType(srv.Type),
		Command:   srv.Command,
		Env:       srv.Env,
		URL:       srv.URL,
		Headers:   srv.Headers,
		Transport: mcp.Transport(srv.Transport),
		OAuth:     oauth,
		Timeout:   srv.Timeout,
		Limits: mcp.Limits{
			MaxMessageBytes: lim.MaxMessageBytes,
			MaxListItems:    lim.MaxListItems,
			MaxListPages:    lim.MaxListPages,
			MaxListBytes:    lim.MaxListBytes,
		},
		MaxLimits: mcp.Limits{
			MaxMessageBytes: schema.MaxMaxMessageBytes,
			MaxListItems:    schema.MaxMaxListItems,
			MaxListPages:    schema.MaxMaxListPages,
			MaxListBytes:    schema.MaxMaxListBytes,
		},
		Roots:    srv.Roots,
		Protocol: srv.Protocol,
		LogLevel: srv.LogLevel,
		Shown:    srv.Shown,
	}
}
