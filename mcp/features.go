package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/freecode/freecode/wire"
	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// The list steps of a server's other features, as messages name them.
const (
	stepResourcesList = "resources/list"
	stepTemplatesList = "resources/templates/list"
	stepPromptsList   = "prompts/list"
)

// MaxInstructionsBytes bounds the server instructions (the initialize
// result's "instructions") a session keeps: they are meant for a model's
// system prompt, where a server must not take more than its share. Longer
// instructions are cut at a character boundary at or below it, and
// Instructions.Cut says so.
const MaxInstructionsBytes = 2 << 10

// MaxSubscriptions bounds the resources one session subscribes to at once
// (Session.Subscribe); it also bounds what a session keeps of the updates
// of a server that floods them.
const MaxSubscriptions = 1000

var (
	// ErrNotOffered is wrapped by the error of a request for a feature the
	// server did not declare in its initialize result: reading resources
	// of a server without the resources capability, subscribing without
	// resources.subscribe, getting a prompt without prompts.
	ErrNotOffered = errors.New("not offered by the MCP server")
	// ErrUnknownPrompt is wrapped by the error of GetPrompt for a name the
	// server's prompts/list does not hold.
	ErrUnknownPrompt = errors.New("unknown prompt")
	// ErrPromptArguments is wrapped by the error of GetPrompt when a
	// required argument is missing or an argument is not one of the
	// prompt's: the request was not sent.
	ErrPromptArguments = errors.New("wrong prompt arguments")
	// ErrResourceNotFound is wrapped by the error of ReadResource when the
	// server answers that the resource does not exist (error -32002).
	ErrResourceNotFound = errors.New("resource not found")
	// ErrInvalidParams is wrapped by the error of a request the server
	// refused for its parameters (error -32602): a URI a template does not
	// match, a prompt argument the server does not accept.
	ErrInvalidParams = errors.New("invalid parameters")
)

// Offers is what a server declared beside tools in its initialize result.
type Offers struct {
	Resources bool // resources/list, resources/templates/list, resources/read
	// Subscribe: resources/subscribe and notifications/resources/updated.
	Subscribe bool
	// ResourcesListChanged: notifications/resources/list_changed.
	ResourcesListChanged bool
	Prompts              bool // prompts/list and prompts/get
	// PromptsListChanged: notifications/prompts/list_changed.
	PromptsListChanged bool
	// Completions: completion/complete, for the arguments of prompts and
	// resource templates.
	Completions bool
}

// Features is what a server offers beside tools, as it listed it: the
// lists are sorted by URI, URI template and name, each key once. Each
// element's Raw is the whole object the server sent, so that it passes on
// and a relist that changed any of it is a change.
type Features struct {
	Offers    Offers
	Resources []wire.Resource
	Templates []wire.ResourceTemplate
	Prompts   []wire.Prompt
	// Problems say what of the lists was left out and why: an element
	// without a URI or name, one listed twice, a list the server answered
	// with an error.
	Problems []string
}

// Instructions are the server instructions of the initialize result.
type Instructions struct {
	// Text is what is kept: at most MaxInstructionsBytes.
	Text string
	// Bytes is the length the server sent; Cut says Text is shorter.
	Bytes int
	Cut   bool
}

// ServerInfo is who a server says it is (the initialize result's
// serverInfo), each field cut to MaxServerInfoBytes: it came from the
// server and is only shown.
type ServerInfo struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	Title   string `json:"title,omitempty"`
}

// MaxServerInfoBytes bounds each field of ServerInfo.
const MaxServerInfoBytes = 256

// serverInfoOf is the ServerInfo of what an initialize result says.
func serverInfoOf(impl mcpgo.Implementation) ServerInfo {
	return ServerInfo{Name: cutText(impl.Name, MaxServerInfoBytes), Version: cutText(impl.Version, MaxServerInfoBytes),
		Title: cutText(impl.Title, MaxServerInfoBytes)}
}

// Which lists a re-list covers (featureState.pending).
const (
	relistResources uint32 = 1 << iota
	relistPrompts
)

// featureState is what a server offers beside tools: what it declared
// (offers), its instructions, its resources, templates and prompts as last
// listed with the problems of those lists (cur, problems), the resources
// subscribed to and their updates, and the signals of all that: a
// list_changed in (relist, pending), a changed listing and updates out.
// It lists one list (listFeature) and sends the requests about resources
// and prompts, through out; when to list, and what a failure means for the
// session, is the session's. mu guards what changes after Connect.
type featureState struct {
	server string      // the server's name, for messages
	log    logr.Logger // the session's
	mask   *urlMask
	limits *limitTrip
	out    *outbound // lists and sends the requests about resources and prompts

	// offers and instructions are set by handshake (again on a transport
	// fallback) and read-only once Connect returned. Only the goroutine
	// running Connect writes them before then.
	offers       Offers
	instructions Instructions
	info         ServerInfo

	relist  chan struct{} // cap 1: coalesced "list again"; pending says what
	pending atomic.Uint32 // relistResources | relistPrompts
	// noticed are the pending lists a list_changed named: listed again
	// even when fresh (see listFreshness); the others wait until stale.
	noticed atomic.Uint32
	changed chan struct{} // cap 1: FeaturesChanged
	updates chan struct{} // cap 1: ResourceUpdates

	mu         sync.Mutex // guards cur, problems, subscribed and updated
	cur        Features
	problems   map[string][]string // cur.Problems by list step
	subscribed map[string]bool     // URIs subscribed to
	updated    map[string]bool     // subscribed URIs updated since TakeResourceUpdates
}

func newFeatureState(server string, log logr.Logger, mask *urlMask, limits *limitTrip, out *outbound) *featureState {
	return &featureState{
		server:     server,
		log:        log,
		mask:       mask,
		limits:     limits,
		out:        out,
		relist:     make(chan struct{}, 1),
		changed:    make(chan struct{}, 1),
		updates:    make(chan struct{}, 1),
		problems:   map[string][]string{},
		subscribed: map[string]bool{},
		updated:    map[string]bool{},
	}
}

// noteInitialize records what the initialize result declares and says;
// modern: the session speaks the 2026-07-28 revision.
func (f *featureState) noteInitialize(res *mcpgo.InitializeResult, modern bool) {
	f.offers = Offers{}
	if r := res.Capabilities.Resources; r != nil {
		// On 2026-07-28 resources/subscribe is gone (subscriptions ride on
		// subscriptions/listen), which the session does not do yet.
		f.offers.Resources, f.offers.Subscribe, f.offers.ResourcesListChanged = true, r.Subscribe && !modern, r.ListChanged
	}
	if p := res.Capabilities.Prompts; p != nil {
		f.offers.Prompts, f.offers.PromptsListChanged = true, p.ListChanged
	}
	f.offers.Completions = res.Capabilities.Completions != nil
	f.instructions = cutInstructions(res.Instructions)
	f.info = serverInfoOf(res.ServerInfo)
	if f.instructions.Cut {
		f.log.Info("server instructions cut", "bytes", f.instructions.Bytes, "kept", len(f.instructions.Text), "limit", MaxInstructionsBytes)
	}
}

// cutInstructions keeps at most MaxInstructionsBytes of text, ending at a
// character boundary.
func cutInstructions(text string) Instructions {
	in := Instructions{Text: cutText(text, MaxInstructionsBytes), Bytes: len(text)}
	in.Cut = len(in.Text) < len(text)
	return in
}

// cutText is text cut to at most max bytes, at a character boundary.
func cutText(text string, max int) string {
	if len(text) <= max {
		return text
	}
	n := max
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// featureSteps are the list steps, in the order they run and their
// problems are reported.
var featureSteps = []string{stepResourcesList, stepTemplatesList, stepPromptsList}

// listFeatures lists, while connecting, what the server declared beside
// tools: resources and resource templates, prompts. A list the server
// answers with an error of its own is left empty and reported in
// Features.Problems (a server's tools stay usable when its resources are
// broken); a resources/templates/list the server does not know is simply
// empty. A failure of the connection, a limit or the timeout fails the
// connect, naming the step.
func (s *Session) listFeatures(cctx context.Context) error {
	f := Features{Offers: s.feat.offers}
	problems := map[string][]string{}
	for _, step := range s.feat.offers.steps() {
		s.conn.step = step
		s.conn.feature = listProgress{noun: strings.TrimSuffix(listNoun(step), "s")}
		p, err := s.feat.listFeature(cctx, step, &f, &s.conn.feature)
		if err != nil {
			return s.connectError(cctx, step, err)
		}
		problems[step] = p
	}
	f.Problems = flatProblems(problems)
	s.feat.replace(f, problems)
	return nil
}

// steps are the lists of what o declares.
func (o Offers) steps() []string {
	var steps []string
	if o.Resources {
		steps = append(steps, stepResourcesList, stepTemplatesList)
	}
	if o.Prompts {
		steps = append(steps, stepPromptsList)
	}
	return steps
}

// flatProblems is the problems of every step, in featureSteps order.
func flatProblems(byStep map[string][]string) []string {
	var out []string
	for _, step := range featureSteps {
		out = append(out, byStep[step]...)
	}
	return out
}

// listFeature lists step into into, leaving its list as it was when the
// server answers with an error of its own; that error, and the elements
// left out, are the problems it returns. Its error is one that ends the
// session: a lost connection, a limit, ctx.
func (f *featureState) listFeature(ctx context.Context, step string, into *Features, prog *listProgress) ([]string, error) {
	key := map[string]string{stepResourcesList: "resources", stepTemplatesList: "resourceTemplates", stepPromptsList: "prompts"}[step]
	raws, err := f.out.listPages(ctx, step, key, prog)
	if err != nil {
		if isTransportError(err) || f.limits.tripped() != nil || ctx.Err() != nil {
			return nil, err
		}
		if step == stepTemplatesList && errors.Is(err, mcpgo.ErrMethodNotFound) {
			f.log.V(1).Info("server has no resource templates", "err", err.Error())
			return nil, nil
		}
		f.log.Info("listing failed; the server runs without what it lists", "step", step, "err", f.mask.err(err))
		return []string{fmt.Sprintf("%s failed: %s", step, f.mask.err(err))}, nil
	}
	var problems []string
	switch step {
	case stepResourcesList:
		into.Resources = decodeList(raws, "resource", "uri", decodeResource, func(r wire.Resource) string { return r.URI }, &problems)
	case stepTemplatesList:
		into.Templates = decodeList(raws, "resource template", "uriTemplate", decodeTemplate, func(t wire.ResourceTemplate) string { return t.URITemplate }, &problems)
	case stepPromptsList:
		into.Prompts = decodeList(raws, "prompt", "name", decodePrompt, func(p wire.Prompt) string { return p.Name }, &problems)
	}
	return problems, nil
}

// decodeList decodes raws with decode, leaves out (as a problem) the
// elements that do not decode, have no key or repeat one, and sorts the
// rest by key.
func decodeList[T any](raws []json.RawMessage, what, keyName string, decode func(json.RawMessage) (T, error), key func(T) string, problems *[]string) []T {
	out := make([]T, 0, len(raws))
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		v, err := decode(raw)
		switch k := key(v); {
		case err != nil:
			*problems = append(*problems, fmt.Sprintf("%s #%d left out: %s", what, i, err))
		case k == "":
			*problems = append(*problems, fmt.Sprintf("%s #%d left out: it has no %s", what, i, keyName))
		case seen[k]:
			*problems = append(*problems, fmt.Sprintf("%s %q left out: listed twice", what, k))
		default:
			seen[k] = true
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return out
}

// decodeResource, decodeTemplate and decodePrompt decode one element of a
// list into its wire type, keeping the whole element as Raw (the wire
// types' own decoding keeps it only when it has keys they do not name; the
// session keeps it always, since sameFeatures compares it). A null
// annotations is none.
func decodeResource(raw json.RawMessage) (wire.Resource, error) {
	var r wire.Resource
	if err := json.Unmarshal(raw, &r); err != nil {
		return wire.Resource{}, err
	}
	r.Annotations, r.Raw = nonNull(r.Annotations), raw
	return r, nil
}

func decodeTemplate(raw json.RawMessage) (wire.ResourceTemplate, error) {
	var t wire.ResourceTemplate
	if err := json.Unmarshal(raw, &t); err != nil {
		return wire.ResourceTemplate{}, err
	}
	t.Annotations, t.Raw = nonNull(t.Annotations), raw
	return t, nil
}

// decodePrompt also refuses a prompt whose arguments lack a name or repeat
// one. Each argument keeps its own object as Raw too.
func decodePrompt(raw json.RawMessage) (wire.Prompt, error) {
	var p wire.Prompt
	if err := json.Unmarshal(raw, &p); err != nil {
		return wire.Prompt{}, err
	}
	var args struct {
		Arguments []json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &args); err == nil && len(args.Arguments) == len(p.Arguments) {
		for i := range p.Arguments {
			p.Arguments[i].Raw = args.Arguments[i]
		}
	}
	for i, a := range p.Arguments {
		if a.Name == "" {
			return wire.Prompt{}, fmt.Errorf("argument #%d has no name", i)
		}
		if slices.ContainsFunc(p.Arguments[:i], func(b wire.PromptArgument) bool { return b.Name == a.Name }) {
			return wire.Prompt{}, fmt.Errorf("argument %q is declared twice", a.Name)
		}
	}
	p.Raw = raw
	return p, nil
}

// nonNull is raw, or nil for an absent or null value.
func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// onNotification handles the notifications of resources and prompts. It
// runs on mcp-go's read goroutine: it never blocks and makes no request; a
// list_changed only asks the owner goroutine to list again.
// Notifications of a feature the server did not declare are ignored, as
// are updates of resources the session is not subscribed to.
func (f *featureState) onNotification(n mcpgo.JSONRPCNotification) {
	var what uint32
	switch n.Method {
	case mcpgo.MethodNotificationResourcesListChanged:
		if f.offers.Resources {
			what = relistResources
		}
	case mcpgo.MethodNotificationPromptsListChanged:
		if f.offers.Prompts {
			what = relistPrompts
		}
	case mcpgo.MethodNotificationSubscriptionsAcknowledged:
		// 2026-07-28: a change made before the listen stream was open was
		// sent to nobody; look again (tools: see onNotification).
		if f.offers.Resources && f.offers.ResourcesListChanged {
			what |= relistResources
		}
		if f.offers.Prompts && f.offers.PromptsListChanged {
			what |= relistPrompts
		}
	case mcpgo.MethodNotificationResourceUpdated:
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		f.mu.Lock()
		ok := f.subscribed[uri]
		if ok {
			f.updated[uri] = true
		}
		f.mu.Unlock()
		if ok {
			signal(f.updates)
		}
		return
	}
	if what == 0 {
		return
	}
	if n.Method != mcpgo.MethodNotificationSubscriptionsAcknowledged {
		f.noticed.Or(what)
	}
	f.pending.Or(what)
	signal(f.relist)
}

// signal sends on c, a channel of capacity one, unless a signal is pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// refreshFeatures lists again what a list_changed named; the owner
// goroutine runs it. FeaturesChanged is signalled only when a list really
// changed. A list the server now answers with an error keeps what it had
// (and says so in Problems).
func (s *Session) refreshFeatures() {
	steps := s.feat.pendingSteps()
	if len(steps) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	next, problems := s.feat.listing()
	for _, step := range steps {
		p, err := s.feat.listFeature(ctx, step, &next, &listProgress{})
		if err != nil {
			if s.ctx.Err() != nil || s.limits.tripped() != nil {
				return // closing, or ending over a limit
			}
			s.log.Error(err, "listing again after list_changed failed", "step", step)
			s.connectionLost(err)
			return
		}
		problems[step] = p
	}
	next.Problems = flatProblems(problems)
	if s.feat.replace(next, problems) {
		s.log.V(1).Info("resources or prompts changed", "resources", len(next.Resources), "templates", len(next.Templates), "prompts", len(next.Prompts))
		signal(s.feat.changed)
	}
}

// pendingSteps takes the lists that list_changed notifications (or a
// listen stream's acknowledgement) named since it was last called: those
// a list_changed named, and the others that are no longer fresh.
func (f *featureState) pendingSteps() []string {
	what := f.pending.Swap(0)
	noticed := f.noticed.Swap(0)
	now := time.Now()
	var steps []string
	add := func(bit uint32, step string) {
		if what&bit == 0 {
			return
		}
		if noticed&bit == 0 && f.out.fresh.fresh(step, now) {
			f.log.V(1).Info("list still fresh (ttlMs): not listed again", "step", step)
			return
		}
		steps = append(steps, step)
	}
	add(relistResources, stepResourcesList)
	add(relistResources, stepTemplatesList)
	add(relistPrompts, stepPromptsList)
	return steps
}

// listing returns the current listing and its problems by step, for a
// re-list to start from; both are the caller's (the listing's slices are
// shared but never modified: a re-list replaces them).
func (f *featureState) listing() (Features, map[string][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur, maps.Clone(f.problems)
}

// replace makes next, with its problems by step, the current listing, and
// reports whether anything a user sees changed.
func (f *featureState) replace(next Features, problems map[string][]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := !sameFeatures(f.cur, next)
	f.cur, f.problems = next, problems
	return changed
}

// sameFeatures compares everything a user sees of two listings.
func sameFeatures(a, b Features) bool {
	return slices.EqualFunc(a.Resources, b.Resources, func(x, y wire.Resource) bool { return bytes.Equal(x.Raw, y.Raw) }) &&
		slices.EqualFunc(a.Templates, b.Templates, func(x, y wire.ResourceTemplate) bool { return bytes.Equal(x.Raw, y.Raw) }) &&
		slices.EqualFunc(a.Prompts, b.Prompts, func(x, y wire.Prompt) bool { return bytes.Equal(x.Raw, y.Raw) }) &&
		slices.Equal(a.Problems, b.Problems)
}

// Features returns what the server offers beside tools, as last listed.
// Its slices are the caller's; the values in them share bytes with the
// session, which never modifies them.
func (s *Session) Features() Features { return s.feat.features() }

// features is the current listing with slices of the caller's own.
func (f *featureState) features() Features {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.cur
	out.Resources, out.Templates, out.Prompts = slices.Clone(out.Resources), slices.Clone(out.Templates), slices.Clone(out.Prompts)
	out.Problems = slices.Clone(out.Problems)
	return out
}

// takeUpdates returns, sorted, the subscribed URIs updated since it was
// last called, and forgets them.
func (f *featureState) takeUpdates() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	uris := slices.Sorted(maps.Keys(f.updated))
	clear(f.updated)
	return uris
}

// FeaturesChanged is signalled (buffered, capacity one) after a re-list,
// following notifications/resources/list_changed or
// notifications/prompts/list_changed, that changed Features. Several
// changes may collapse into one signal; a receiver reads Features afresh.
func (s *Session) FeaturesChanged() <-chan struct{} { return s.feat.changed }

// Instructions returns the server instructions of the initialize result,
// cut to MaxInstructionsBytes.
func (s *Session) Instructions() Instructions { return s.feat.instructions }

// ServerInfo returns who the server said it is in the initialize result
// (set by Connect, read-only after).
func (s *Session) ServerInfo() ServerInfo { return s.feat.info }
