package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/freecode/freecode/mcp/auth"
)

// contextEnv names the environment variable through which the suite passes
// a scenario's context: a JSON object with the scenario's name and what a
// user would have been given for that server (a pre-registered client's id
// and secret, say).
const contextEnv = "MCP_CONFORMANCE_CONTEXT"

// suiteClientMetadataURL is the Client ID Metadata Document URL the suite's
// authorization servers expect as client_id when they advertise
// client_id_metadata_document_supported (its reference client uses the same
// constant). For FreeCode it is the server's oauth.clientMetadataUrl.
const suiteClientMetadataURL = "https://conformance-test.local/client-metadata.json"

// suiteContext is MCP_CONFORMANCE_CONTEXT. Fields FreeCode has no setting
// for are named by unsupported.
type suiteContext struct {
	Name         string `json:"name"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// private_key_jwt client authentication (RFC 7523).
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	// Enterprise-managed authorization (SEP-990).
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	// ToolCalls are the calls a scenario asks the client to make, with
	// their arguments (the header scenarios of SEP-2243).
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

// contextCalls returns the tool calls the suite's context asks for (none
// when raw is empty or names no calls).
func contextCalls(raw string) ([]toolCall, error) {
	if raw == "" {
		return nil, nil
	}
	var ctx suiteContext
	if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", contextEnv, err)
	}
	var calls []toolCall
	for _, c := range ctx.ToolCalls {
		calls = append(calls, toolCall{Tool: c.Name, Args: c.Arguments, AsGiven: true})
	}
	return calls, nil
}

// unsupported lists the context's fields that no FreeCode setting takes.
func (c suiteContext) unsupported() []string {
	var out []string
	for _, f := range []struct{ name, v string }{
		{"private_key_pem (private_key_jwt client authentication)", c.PrivateKeyPEM},
		{"idp_id_token (enterprise-managed authorization)", c.IdPIDToken},
	} {
		if f.v != "" {
			out = append(out, f.name)
		}
	}
	return out
}

// oauthConfig is the server's oauth settings for sc: what a user would
// write in the server's "oauth" object from what the suite hands out in
// raw (MCP_CONFORMANCE_CONTEXT, "" if none): the pre-registered client's
// id and secret, the grant the scenario's server expects, and FreeCode's
// Client ID Metadata Document URL. Everything else is package mcp's (and
// its auth client's) to discover.
func oauthConfig(sc scenario, raw string) (auth.Config, []string, error) {
	cfg := auth.Config{Grant: sc.Grant, ClientMetadataURL: suiteClientMetadataURL}
	if raw == "" {
		return cfg, nil, nil
	}
	var ctx suiteContext
	if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
		return auth.Config{}, nil, fmt.Errorf("%s is not a JSON object: %w", contextEnv, err)
	}
	if ctx.Name != "" && ctx.Name != sc.Name {
		return auth.Config{}, nil, fmt.Errorf("%s is for scenario %q, not %q", contextEnv, ctx.Name, sc.Name)
	}
	cfg.ClientID, cfg.ClientSecret = ctx.ClientID, ctx.ClientSecret
	return cfg, ctx.unsupported(), nil
}

// browser is the one test-only piece: where a user's browser would open
// the sign-in's one-shot local address, follow it to the authorization
// URL, sign in and be redirected to FreeCode's loopback callback, it GETs
// the address and follows the redirects — the suite's authorization
// servers approve at once — to the callback.
type browser struct {
	hc *http.Client
}

func newBrowser() *browser {
	return &browser{hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
}

func (b *browser) open(ctx context.Context, browserURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, browserURL, nil)
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("open the authorization URL: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("open the authorization URL: ended on HTTP %s at %s", resp.Status, resp.Request.URL.Redacted())
	}
	return nil
}

func (b *browser) close() { b.hc.CloseIdleConnections() }

// authSetup is what an authorization scenario's session needs: a token
// store of its own (removed by cleanup), the sign-in, and the server's
// oauth settings.
type authSetup struct {
	store   *auth.Store
	in      *auth.Interaction
	cfg     auth.Config
	cleanup func()
}

func newAuthSetup(sc scenario, rawContext string, log io.Writer) (*authSetup, error) {
	cfg, unsupported, err := oauthConfig(sc, rawContext)
	if err != nil {
		return nil, err
	}
	for _, f := range slices.Sorted(slices.Values(unsupported)) {
		fmt.Fprintf(log, "conformance-client: %s: FreeCode has no setting for %s; not used\n", contextEnv, f)
	}
	dir, err := os.MkdirTemp("", "freecode-conformance-tokens-")
	if err != nil {
		return nil, err
	}
	store, err := auth.OpenStore(dir + "/auth")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := newBrowser()
	return &authSetup{
		store: store,
		in:    &auth.Interaction{Out: prefixWriter{w: log, prefix: "conformance-client: sign-in: "}, Open: b.open},
		cfg:   cfg,
		cleanup: func() {
			b.close()
			_ = os.RemoveAll(dir)
		},
	}, nil
}

// prefixWriter prefixes every write (the sign-in prints whole lines) so
// that the suite's log tells them apart.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	for _, l := range lines {
		switch l {
		case "":
		case "\n":
			out.WriteString(l)
		default:
			out.WriteString(p.prefix + l)
		}
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
