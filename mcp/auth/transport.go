package auth

import (
	"io"
	"net/http"
)

// maxDrain bounds what is read of a 401/403 body before it is dropped.
const maxDrain = 64 << 10

// Transport returns an http.RoundTripper that authorizes requests to the
// server over base:
//
//   - a request to the server's origin gets "Authorization: Bearer" with
//     the stored access token (renewed first within the refresh margin of
//     its expiry); a request to any other origin goes out untouched, so a
//     token never reaches another origin, whatever redirects or endpoint
//     events say;
//   - a complete 401 answer, or a 403 with error="insufficient_scope",
//     runs the recovery (renew; client credentials; step-up; the
//     in-band authorization if Options.Interaction is set; else an error
//     wrapping ErrNeedsLogin) and the request is sent once more, with its
//     body rebuilt by req.GetBody. A request whose body cannot be rebuilt
//     gets the 401/403 back.
//   - a request is never sent again after a network error or once any
//     other answer began: only a 401/403 status, whose body is discarded,
//     proves the server did not act on it.
//
// An error of the authorization itself (its token, its recovery) is a
// *FlowError; any other error is base's.
func (c *Client) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Client
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	if !sameOrigin(req.URL, c.resourceURL) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	tok, err := c.tokenFor(ctx)
	if err != nil {
		closeBody(req)
		return nil, flowError(err)
	}
	resp, err := t.send(req, req.Body, tok)
	if err != nil {
		return nil, err
	}
	ch, ok := recoverable(resp)
	if !ok {
		c.answered(resp)
		return resp, nil
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		c.log.V(1).Info("cannot resend a request without GetBody; returning the answer", "status", resp.StatusCode)
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	c.log.V(1).Info("the server asks for authorization", "status", resp.StatusCode, "error", ch.errCode, "scope", ch.scopes)

	if err := c.recover(ctx, tok, ch); err != nil {
		return nil, flowError(err)
	}
	tok, err = c.tokenFor(ctx)
	if err != nil {
		return nil, flowError(err)
	}
	body := req.Body
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	resp, err = t.send(req, body, tok)
	if err != nil {
		return nil, err
	}
	if _, again := recoverable(resp); !again {
		c.answered(resp)
	}
	return resp, nil
}

// send sends a copy of req with body and the token. The caller's request
// is not modified (http.RoundTripper's contract).
func (t *transport) send(req *http.Request, body io.ReadCloser, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = body
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.base.RoundTrip(r)
}

// recoverable reports whether resp asks for (more) authorization.
func recoverable(resp *http.Response) (challenge, bool) {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return parseChallenge(resp), true
	case http.StatusForbidden:
		ch := parseChallenge(resp)
		return ch, ch.stepUp()
	}
	return challenge{}, false
}

// answered notes a successful answer: step-ups start counting afresh, and
// a token renewed on a 401 has proved itself.
func (c *Client) answered(resp *http.Response) {
	if resp.StatusCode < 400 {
		c.mu.Lock()
		c.stepUps, c.renewedOn401 = 0, ""
		c.mu.Unlock()
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
