package serve

import (
	"context"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/mcp"
)

// elicitThroughAPI answers the servers' elicitations through the API: each
// one waits in p, with the server's name, until a client answers it (`mcp
// call` on its terminal, `freecode mcp answer`, a host), the elicitation
// timeout passes (the server is then sent "cancel"), or the server or its
// session gives up. An accepted form is checked, and completed with its
// defaults, by the form itself, before anything is sent. serve never
// answers on the user's behalf and never opens a URL.
func elicitThroughAPI(p *api.Elicitations) mcp.ElicitHandler {
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		w := wire.Elicitation{Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL, Host: e.Host()}
		var check func(map[string]any) (map[string]any, error)
		if e.Form != nil {
			w.RequestedSchema = e.Form.Schema
			check = e.Form.Complete
		}
		a, err := p.Ask(ctx, w, check)
		if err != nil {
			return mcp.ElicitResult{}, err
		}
		return mcp.ElicitResult{Action: mcp.ElicitAction(a.Action), Content: a.Content}, nil
	}
}
