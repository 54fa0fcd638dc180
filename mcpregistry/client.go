package mcpregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors a Client returns, wrapped with what was asked of which registry.
var (
	// ErrNotFound: the registry has no such server or version.
	ErrNotFound = errors.New("not in the registry")
	// ErrBadAnswer: the answer is not the /v0.1 API (not JSON, wrong
	// shape, a page that breaks its own promises).
	ErrBadAnswer = errors.New("the registry's answer is not the /v0.1 API")
	// ErrTooLarge: an answer over the byte, page or server limits.
	ErrTooLarge = errors.New("the registry's answer is over FreeCode's limits")
	// ErrUnavailable: the registry could not be reached, timed out, or
	// answered with an error status.
	ErrUnavailable = errors.New("the registry is unavailable")
)

// Limits bound what one Client call reads from a registry.
type Limits struct {
	// Timeout bounds one HTTP request, answer read included.
	Timeout time.Duration
	// MaxBodyBytes bounds one answer.
	MaxBodyBytes int64
	// PageSize is the limit asked per page (the API allows 1..100).
	PageSize int
	// MaxPages bounds the pages one listing follows.
	MaxPages int
	// MaxServers bounds the entries one listing returns.
	MaxServers int
}

// DefaultLimits are the limits of a Client whose Limits are zero.
func DefaultLimits() Limits {
	return Limits{
		Timeout:      15 * time.Second,
		MaxBodyBytes: 4 << 20,
		PageSize:     50,
		MaxPages:     20,
		MaxServers:   1000,
	}
}

// Client reads one registry.
type Client struct {
	base   string
	http   *http.Client
	limits Limits
}

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 3

// New returns a client of the registry at base (scheme and host, maybe a
// path prefix; "" is OfficialURL). hc may be nil; its Timeout is replaced
// by limits.Timeout when that is shorter.
func New(base string, hc *http.Client, limits Limits) (*Client, error) {
	if base == "" {
		base = OfficialURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("registry %q: want an http(s) base URL such as %s", base, OfficialURL)
	}
	limits = limits.withDefaults()
	c := &http.Client{Timeout: limits.Timeout}
	if hc != nil {
		cp := *hc
		c = &cp
		if c.Timeout == 0 || c.Timeout > limits.Timeout {
			c.Timeout = limits.Timeout
		}
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %s", req.URL.Scheme)
		}
		return nil
	}
	return &Client{base: strings.TrimRight(base, "/"), http: c, limits: limits}, nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Timeout > 0 {
		d.Timeout = l.Timeout
	}
	if l.MaxBodyBytes > 0 {
		d.MaxBodyBytes = l.MaxBodyBytes
	}
	if l.PageSize > 0 {
		d.PageSize = min(l.PageSize, 100)
	}
	if l.MaxPages > 0 {
		d.MaxPages = l.MaxPages
	}
	if l.MaxServers > 0 {
		d.MaxServers = l.MaxServers
	}
	return d
}

// Base is the registry's base URL as used.
func (c *Client) Base() string { return c.base }

// SearchOptions narrow a Search.
type SearchOptions struct {
	// Version is "latest" (every server's latest version; the default),
	// an exact version, or "all" (every version; the API's default).
	Version string
	// IncludeDeleted lists deleted servers too.
	IncludeDeleted bool
}

// Search lists the servers whose names contain query ("" lists all),
// following the registry's cursors within the Client's limits.
func (c *Client) Search(ctx context.Context, query string, opt SearchOptions) ([]Entry, error) {
	q := url.Values{}
	if query = strings.TrimSpace(query); query != "" {
		q.Set("search", query)
	}
	switch opt.Version {
	case "":
		q.Set("version", "latest")
	case "all":
	default:
		q.Set("version", opt.Version)
	}
	if opt.IncludeDeleted {
		q.Set("include_deleted", "true")
	}
	return c.list(ctx, "/v0.1/servers", q)
}

// Versions lists every version of the server name.
func (c *Client) Versions(ctx context.Context, name string) ([]Entry, error) {
	es, err := c.list(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions", url.Values{})
	if err == nil && len(es) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return es, err
}

// Get reads one version of the server name ("" or "latest": its latest).
func (c *Client) Get(ctx context.Context, name, version string) (Entry, error) {
	if version == "" {
		version = "latest"
	}
	var one serverResponse
	path := "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	if err := c.getJSON(ctx, path, nil, &one); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Entry{}, fmt.Errorf("%s@%s: %w", name, version, err)
		}
		return Entry{}, err
	}
	e, err := c.entry(one)
	if err != nil {
		return Entry{}, err
	}
	if e.Server.Name != name {
		return Entry{}, fmt.Errorf("%s: asked for %s, got %q: %w", c.base, name, e.Server.Name, ErrBadAnswer)
	}
	return e, nil
}

type serverResponse struct {
	Server json.RawMessage `json:"server"`
	Meta   struct {
		Official *Official `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

type listResponse struct {
	Servers  []serverResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
}

// maxCursorBytes bounds a cursor a registry hands back.
const maxCursorBytes = 1024

func (c *Client) list(ctx context.Context, path string, q url.Values) ([]Entry, error) {
	q.Set("limit", strconv.Itoa(c.limits.PageSize))
	var out []Entry
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= c.limits.MaxPages {
			return out, fmt.Errorf("%s%s: more than %d pages: %w", c.base, path, c.limits.MaxPages, ErrTooLarge)
		}
		var lr listResponse
		if err := c.getJSON(ctx, path, q, &lr); err != nil {
			return out, err
		}
		if len(lr.Servers) > c.limits.PageSize {
			return out, fmt.Errorf("%s%s: a page of %d servers, asked for at most %d: %w", c.base, path, len(lr.Servers), c.limits.PageSize, ErrBadAnswer)
		}
		for _, sr := range lr.Servers {
			e, err := c.entry(sr)
			if err != nil {
				return out, err
			}
			if len(out) >= c.limits.MaxServers {
				return out, fmt.Errorf("%s%s: more than %d servers: %w", c.base, path, c.limits.MaxServers, ErrTooLarge)
			}
			out = append(out, e)
		}
		next := lr.Metadata.NextCursor
		if next == "" {
			return out, nil
		}
		if len(next) > maxCursorBytes || seen[next] || len(lr.Servers) == 0 {
			return out, fmt.Errorf("%s%s: a next cursor that does not advance: %w", c.base, path, ErrBadAnswer)
		}
		seen[next] = true
		q.Set("cursor", next)
	}
}

// Field limits of one server.json (beyond what the schema says, so that a
// hostile registry cannot make FreeCode hold or show more).
const (
	maxNameBytes        = 200
	maxVersionBytes     = 255
	maxDescriptionBytes = 2000
	maxPackages         = 64
	maxRemotes          = 64
	maxArguments        = 256
	maxServerBytes      = 256 << 10
)

func (c *Client) entry(sr serverResponse) (Entry, error) {
	if len(sr.Server) == 0 || sr.Server[0] != '{' {
		return Entry{}, fmt.Errorf("%s: a server that is not an object: %w", c.base, ErrBadAnswer)
	}
	if len(sr.Server) > maxServerBytes {
		return Entry{}, fmt.Errorf("%s: a server.json of %d bytes (at most %d): %w", c.base, len(sr.Server), maxServerBytes, ErrTooLarge)
	}
	e, err := Parse(sr.Server)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", c.base, err)
	}
	e.Registry = c.base
	if sr.Meta.Official != nil {
		e.Official = *sr.Meta.Official
	}
	if e.Official.Status == "" {
		e.Official.Status = StatusActive
	}
	return e, nil
}

// Parse reads one server.json, checks the fields FreeCode relies on and
// its bounds, and computes its digest.
func Parse(raw []byte) (Entry, error) {
	var s ServerJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		return Entry{}, fmt.Errorf("server.json: %w: %w", ErrBadAnswer, err)
	}
	switch {
	case s.Name == "" || len(s.Name) > maxNameBytes || !validName(s.Name):
		return Entry{}, fmt.Errorf("server.json: name %.80q is not <namespace>/<name>: %w", s.Name, ErrBadAnswer)
	case s.Version == "" || len(s.Version) > maxVersionBytes:
		return Entry{}, fmt.Errorf("server.json %s: version %.80q: %w", s.Name, s.Version, ErrBadAnswer)
	case len(s.Packages) > maxPackages || len(s.Remotes) > maxRemotes:
		return Entry{}, fmt.Errorf("server.json %s: %d packages and %d remotes: %w", s.Name, len(s.Packages), len(s.Remotes), ErrTooLarge)
	}
	for _, p := range s.Packages {
		if len(p.RuntimeArguments)+len(p.PackageArguments)+len(p.EnvironmentVariables) > maxArguments {
			return Entry{}, fmt.Errorf("server.json %s: package %.80q has over %d arguments: %w", s.Name, p.Identifier, maxArguments, ErrTooLarge)
		}
	}
	if len(s.Description) > maxDescriptionBytes {
		s.Description = s.Description[:maxDescriptionBytes]
	}
	sum := sha256.Sum256(raw)
	return Entry{Server: s, Raw: bytes.Clone(raw), Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// validName reports whether name is <namespace>/<name> in the registry's
// alphabet.
func validName(name string) bool {
	ns, n, ok := strings.Cut(name, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_', r == '/':
		default:
			return false
		}
	}
	return true
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", c.base, ctx.Err())
		}
		return fmt.Errorf("%s: %w: %w", c.base, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.limits.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w: reading the answer: %w", c.base, ErrUnavailable, err)
	}
	if int64(len(body)) > c.limits.MaxBodyBytes {
		return fmt.Errorf("%s: an answer over %d bytes: %w", u, c.limits.MaxBodyBytes, ErrTooLarge)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %w: %s%s", c.base, ErrUnavailable, resp.Status, detail(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w: %w", u, ErrBadAnswer, err)
	}
	return nil
}

// detail is the start of an error answer's body, for the message (the
// caller neutralizes it before showing it).
func detail(body []byte) string {
	var p struct {
		Detail string `json:"detail"`
		Title  string `json:"title"`
	}
	if json.Unmarshal(body, &p) == nil && (p.Detail != "" || p.Title != "") {
		return ": " + trim(p.Detail+" "+p.Title, 200)
	}
	return ""
}

func trim(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
