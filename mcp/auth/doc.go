// Package auth is the OAuth 2.1 client of FreeCode's remote MCP servers,
// as the MCP authorization spec (2025-11-25, with the 2025-03-26
// fallbacks) asks of a client. A [Client] serves one configured server:
// its [Client.Transport] is the http.RoundTripper the remote session's
// HTTP transports run on; [Client.Login], [Client.Logout] and
// [Client.Status] back `freecode mcp login/logout` and the status display.
// It imports nothing of FreeCode.
//
// # Flow
//
// A request to the server's origin carries the stored access token,
// renewed first when it is within the refresh margin of its expiry
// ([DefaultRefreshMargin], at most half the token's lifetime). A 401, or a
// 403 with error="insufficient_scope", starts the recovery:
//
//  1. 401 with a stored refresh token (or a client credentials grant):
//     renew under the file lock (see "Store and locking") and send again.
//  2. Otherwise authorize anew. Discovery: the challenge's
//     resource_metadata, else the path-based, else the root
//     /.well-known/oauth-protected-resource; its resource must cover the
//     server URL (same origin, a whole-segment parent path or the path
//     itself, no query); then the first authorization server's RFC 8414
//     or OpenID metadata (path insertion, then OpenID path appending) with
//     the issuer check. A server without protected resource metadata is a
//     2025-03-26 server: its origin's RFC 8414 metadata, else the default
//     /authorize, /token and /register there.
//  3. Scopes: the configured ones, else the challenge's, else the
//     metadata's scopes_supported, else none; what the same issuer granted
//     before and what a 403 asked for are kept (a step-up asks for the
//     union); offline_access is added when the authorization server lists
//     it. At most [MaxStepUps] step-ups run in a row.
//  4. Client, in the spec's order: the configured (pre-registered) client;
//     else the Client ID Metadata Document URL when the server advertises
//     client_id_metadata_document_supported and one is configured; else the
//     dynamic registration stored for this issuer; else a new one (RFC
//     7591, application_type native, grant types authorization_code and
//     refresh_token, token_endpoint_auth_method none where offered).
//     Token endpoint authentication follows
//     token_endpoint_auth_methods_supported: client_secret_basic, then
//     client_secret_post with a secret; none without.
//  5. The client credentials grant gets a token right there. The
//     authorization code flow needs a user: with Options.Interaction (the
//     conformance client) it runs in-band; without (serve, mcp start) the
//     request fails with an error wrapping [ErrNeedsLogin] that says "run
//     `freecode mcp login <name>`", and a step-up's scopes are remembered
//     for that sign-in.
//
// The authorization code flow (Login, or in-band) listens on
// http://127.0.0.1:<port>[CallbackPath] (RFC 8252: the configured
// callbackPort, else the port of the issuer's stored registration if
// free, else any), always prints the authorization URL, calls the
// pluggable opener, also reads a pasted redirect URL for a browser on
// another machine, and waits until the right state arrives or its context
// ends (Login applies [DefaultLoginTimeout]). PKCE S256 is required; the
// RFC 8707 resource goes into the authorization and every token request
// (refresh included); the code is exchanged and the tokens stored.
//
// The request is then sent once more with its body rebuilt by GetBody.
// Nothing is ever replayed after a network error or any other answer:
// only a complete 401/403 status proves the server did not act on it.
// A token is never added to a request for another origin.
//
// # Store and locking
//
// [Store] keeps one file per server (keyed by name and URL) and one per
// dynamically registered client (keyed by issuer) under the directory the
// caller gives, 0700/0600, written atomically; see its doc for the layout.
// Three locks, taken in this order when nested:
//
//   - per Client, one renewal or authorization runs at a time; requests
//     failing meanwhile wait for it and share its outcome (the standalone
//     GET stream and the POSTs never both run the flow);
//   - per server, a flock(2) on tokens/<key>.lock around every renewal,
//     save and logout: take it, re-read the file, renew only if the token
//     there is still the one that failed or about to expire, write,
//     release. So serve and a CLI command never both spend a one-use
//     refresh token;
//   - per issuer, a flock(2) around a dynamic registration.
//
// A Client re-reads the file whenever it changed, so a sign-in from
// another terminal is used at the next request. A refused refresh
// (invalid_grant, or invalid_client, which also drops the stored
// registration) is written down: the tokens are cleared and the server
// reports needs-login until someone signs in.
//
// # Choices
//
// The engine composes the official Go SDK's oauthex (metadata types and
// the WWW-Authenticate parser) with golang.org/x/oauth2 (authorization
// URL, PKCE, token requests, client credentials) under FreeCode's own flow
// control, rather than the SDK's auth.AuthorizationCodeHandler, which
// keeps tokens in memory only (no persistent store, no cross-process
// refresh), registers dynamically on every authorization (no reuse per
// issuer), always runs the browser flow in-band (no needs-login outcome
// for serve), tries CIMD before a pre-registered client, and has no
// single-flight. The SDK's discovery helpers are not used either: they
// compare the metadata's resource byte for byte (many servers publish
// their origin for an endpoint at /mcp), check the issuer of the
// 2025-03-26 root metadata against an issuer that is not known there,
// demand PKCE support from client-credentials-only servers, and
// oauthex.RegisterClient quotes the registration answer — with its client
// secret — in an error. x/oauth2's own refresh cannot carry RFC 8707's
// resource, so refresh goes through its client-credentials request
// builder with grant_type overridden (the override it allows for
// interoperability).
//
// RFC 9207 iss: an iss that is present must equal the issuer, advertised
// or not (§2.4 asks to compare it whenever present; a match proves what the
// check is for); an absent iss is refused only when the server advertises
// authorization_response_iss_parameter_supported. The issuer of 2025-03-26
// root metadata is accepted when it is on the server's own origin: there
// was no issuer identifier to compare with, and the server's origin vouches
// for it.
//
// Secrets — tokens, client secrets, codes, PKCE verifiers — appear in no
// error, log line or formatted value of this package: types that hold
// them print and log redacted (String, GoString, LogValue, MarshalLog),
// errors quote only scrubbed, shortened error descriptions, and URL
// queries and userinfo are cut from messages.
package auth
