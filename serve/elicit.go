package serve

import (
	"context"
	"errors"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
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
// opens a URL. record is told how each one ended (auditElicitation).
func elicitThroughAPI(p *api.Elicitations, log logr.Logger, record func(*mcp.Elicitation, wire.ElicitationAnswered)) mcp.ElicitHandler {
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		w := wire.Elicitation{Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL, Host: e.Host(), InputKey: e.InputKey}
		var check func(map[string]any) (map[string]any, error)
		if e.Form != nil {
			w.RequestedSchema = e.Form.Schema
			check = e.Form.Complete
		}
		a, err := p.Ask(ctx, w, check)
		record(e, a)
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

// terminalAnswerer is who answered an elicitation through a handler of the
// command's own (its terminal) when ctx names no client.
const terminalAnswerer = "the command's terminal"

// auditedElicit is h, the command's own answerer (Options.Elicit), with
// each outcome recorded in the audit log; nil stays nil (no elicitation
// capability is declared then).
func (c *Core) auditedElicit(h mcp.ElicitHandler) mcp.ElicitHandler {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		res, err := h(ctx, e)
		a := wire.ElicitationAnswered{Server: e.Server, Action: string(res.Action)}
		switch {
		case errors.Is(context.Cause(ctx), mcp.ErrElicitTimeout):
			// The session sends "cancel" for it, whatever h said.
			a.Action, a.Reason = api.ActionCancel, api.ReasonTimeout
		case err != nil:
			a.Action, a.Reason = "", api.ReasonCanceled
		default:
			if a.By = api.ClientOf(ctx); a.By == "" {
				a.By = terminalAnswerer
			}
		}
		c.auditElicitation(e, a)
		return res, err
	}
}

// auditElicitation records how elicitation e ended: its server and mode,
// the action sent, who answered or why nobody did — never its message,
// URL or content.
func (c *Core) auditElicitation(e *mcp.Elicitation, a wire.ElicitationAnswered) {
	if c.audit == nil {
		return
	}
	if a.Reason == mcp.ErrElicitTimeout.Error() {
		// The session's own timeout ended it (the API's comes first
		// unless that one is longer): the server was sent "cancel".
		a.Action, a.Reason = api.ActionCancel, api.ReasonTimeout
	}
	reason := ""
	if a.By == "" {
		// Only FreeCode's own words: a reason that is some error's text
		// may quote what a server said.
		switch a.Reason {
		case api.ReasonTimeout:
			reason = api.ReasonTimeout
		case api.ReasonNobodyListening:
			reason = "nobody to answer"
		default:
			reason = api.ReasonCanceled
		}
	}
	c.audit.Log(audit.Record{Kind: audit.KindElicitation, Server: e.Server, Mode: e.Mode, Action: a.Action, By: a.By, Reason: reason})
}
