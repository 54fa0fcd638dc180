package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/freecode/freecode/wire"
)

func (s *Server) resources(w http.ResponseWriter, r *http.Request) {
	res, err := s.engine.Resources(r.Context(), r.URL.Query().Get("server"))
	answer(w, http.StatusOK, res, err)
}

func (s *Server) readResource(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := s.engine.ReadResource(r.Context(), q.Get("server"), q.Get("uri"))
	answer(w, http.StatusOK, res, err)
}

func (s *Server) subscribe(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Server string `json:"server"`
			URI    string `json:"uri"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeError(w, http.StatusBadRequest, `the body must be {"server": NAME, "uri": URI}`)
			return
		}
		err := s.engine.Subscribe(r.Context(), body.Server, body.URI, on)
		answer(w, http.StatusOK, wire.Subscription{Server: body.Server, URI: body.URI, Subscribed: on}, err)
	}
}

func (s *Server) prompts(w http.ResponseWriter, r *http.Request) {
	res, err := s.engine.Prompts(r.Context(), r.URL.Query().Get("server"))
	answer(w, http.StatusOK, res, err)
}

// promptArgs reads a prompt's arguments: a JSON object of strings (an
// empty body is none).
func promptArgs(w http.ResponseWriter, r *http.Request) (map[string]string, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("read arguments: %w", err)
	}
	if len(body) == 0 {
		return map[string]string{}, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, errors.New(`the body must be the prompt's arguments, a JSON object of strings: {"name": "value", ...}`)
	}
	args := make(map[string]string, len(raw))
	for k, v := range raw {
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return nil, fmt.Errorf("argument %q must be a string (prompt arguments are strings), not %s", k, v)
		}
		args[k] = str
	}
	return args, nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var body wire.CompletionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be {"ref": {"type": "ref/prompt", "name": NAME} or {"type": "ref/resource", "uri": TEMPLATE}, `+
			`"argument": {"name": NAME, "value": PARTIAL}, "context": {"other argument": "its value", ...}}: `+err.Error())
		return
	}
	res, err := s.engine.Complete(r.Context(), r.PathValue("name"), body)
	answer(w, http.StatusOK, res, err)
}

func (s *Server) getPrompt(w http.ResponseWriter, r *http.Request) {
	args, err := promptArgs(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res, err := s.engine.GetPrompt(r.Context(), r.PathValue("server"), r.PathValue("name"), args)
	answer(w, http.StatusOK, res, err)
}

// Resources returns GET /v1/resources: of server, or of every server that
// has some when server is "".
func (c *Client) Resources(ctx context.Context, server string) (wire.Resources, error) {
	var res wire.Resources
	path := "/v1/resources"
	if server != "" {
		path += "?server=" + url.QueryEscape(server)
	}
	return res, c.call(ctx, http.MethodGet, path, nil, &res)
}

// ReadResource reads uri of server (GET /v1/resources/read).
func (c *Client) ReadResource(ctx context.Context, server, uri string) (wire.ResourceRead, error) {
	var res wire.ResourceRead
	q := url.Values{"server": {server}, "uri": {uri}}
	return res, c.call(ctx, http.MethodGet, "/v1/resources/read?"+q.Encode(), nil, &res)
}

// Subscribe subscribes serve to updates of uri of server (on), or ends
// that; updates come as resource_updated events.
func (c *Client) Subscribe(ctx context.Context, server, uri string, on bool) error {
	path := "/v1/resources/unsubscribe"
	if on {
		path = "/v1/resources/subscribe"
	}
	return c.call(ctx, http.MethodPost, path, map[string]string{"server": server, "uri": uri}, nil)
}

// Prompts returns GET /v1/prompts: of server, or of every server that has
// some when server is "".
func (c *Client) Prompts(ctx context.Context, server string) (wire.Prompts, error) {
	var res wire.Prompts
	path := "/v1/prompts"
	if server != "" {
		path += "?server=" + url.QueryEscape(server)
	}
	return res, c.call(ctx, http.MethodGet, path, nil, &res)
}

// GetPrompt gets prompt of server with args (POST
// /v1/prompts/{server}/{name}).
func (c *Client) GetPrompt(ctx context.Context, server, prompt string, args map[string]string) (wire.PromptResult, error) {
	var res wire.PromptResult
	if args == nil {
		args = map[string]string{}
	}
	path := "/v1/prompts/" + url.PathEscape(server) + "/" + url.PathEscape(prompt)
	return res, c.call(ctx, http.MethodPost, path, args, &res)
}

// Complete asks server for the values of an argument (POST
// /v1/servers/{name}/complete).
func (c *Client) Complete(ctx context.Context, server string, req wire.CompletionRequest) (wire.Completion, error) {
	var res wire.Completion
	if server == "" {
		// No route names no server: the error serve.Core gives.
		return res, WithKind(errors.New("a completion needs a server"), ErrBadRequest)
	}
	return res, c.call(ctx, http.MethodPost, "/v1/servers/"+url.PathEscape(server)+"/complete", req, &res)
}
