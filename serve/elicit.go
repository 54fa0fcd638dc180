package serve

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// elicitThroughAPI answers the servers' elicitations through the API: each
// one waits in p, with the server's name, until a client answers it (`mcp
// call` on its terminal, `freecode mcp elicitations answer`, a host), the
// elicitation timeout passes (the server is then sent "cancel"), or the
// server or its session gives up. With no client listening to the API's
// events it is declined at once, and log says why. An accepted form is
// checked, and completed with its defaults, by the form itself, before
// anything is sent. serve never answers on the user's behalf and never
// opens a URL.
func elicitThroughAPI(p *api.Elicitations, log logr.Logger) mcp.ElicitHandler {
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		w := wire.Elicitation{Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL, Host: e.Host(), InputKey: e.InputKey}
		var check func(map[string]any) (map[string]any, error)
		if e.Form != nil {
			w.RequestedSchema = e.Form.Schema
			check = e.Form.Complete
		}
		a, err := p.Ask(ctx, w, check)
		if err != nil {
			return mcp.ElicitResult{}, err
		}
		switch a.Reason {
		case api.ReasonNobodyListening:
			log.Info("declined an elicitation: nobody could answer it, as no client listens to serve's events "+
				"(`freecode mcp call` does, and a host; then `freecode mcp elicitations` lists it)",
				"server", e.Server, "id", a.ID)
		case api.ReasonTimeout:
			log.Info("cancelled an elicitation nobody answered in time", "server", e.Server, "id", a.ID, "timeout", p.Timeout().String())
		}
		return mcp.ElicitResult{Action: mcp.ElicitAction(a.Action), Content: a.Content}, nil
	}
}
