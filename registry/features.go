package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/wire"
)

// ErrUnknownSource is wrapped by the errors of ReadResource and GetPrompt
// for a source that has no features registered.
var ErrUnknownSource = errors.New("no resources or prompts registered for this source")

// Features is what a source offers beside tools — resources, resource
// templates and prompts, as the source sent them (Raw: the source's
// object, passed on and part of change detection as Tool.Raw is) — with
// the functions that read a resource and get a prompt. Both functions must honour ctx and be safe for concurrent use;
// nil means the source cannot do it. Like Tool.Call they are no part of
// change detection: registering the same lists with fresh functions is not
// a change.
type Features struct {
	Resources []wire.Resource
	Templates []wire.ResourceTemplate
	Prompts   []wire.Prompt
	Read      func(ctx context.Context, uri string) ([]wire.ResourceContent, error)
	GetPrompt func(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error)
}

// empty reports whether f holds nothing at all.
func (f Features) empty() bool {
	return len(f.Resources) == 0 && len(f.Templates) == 0 && len(f.Prompts) == 0 && f.Read == nil && f.GetPrompt == nil
}

// FeaturesChange says which of a source's lists really changed: Resources
// covers resources and templates.
type FeaturesChange struct {
	Resources, Prompts bool
}

// Any reports whether anything changed.
func (c FeaturesChange) Any() bool { return c.Resources || c.Prompts }

// features is one source's registered Features, sorted, with the
// canonical JSON of their annotations for change detection.
type features struct {
	f          Features
	resCanon   [][]byte // of f.Resources[i].Annotations
	tmplCanon  [][]byte // of f.Templates[i].Annotations
	promptArgs []string // of f.Prompts[i], for comparison
	// The SHA-256 of each element's Raw as canonical JSON (zero: none).
	resRaw, tmplRaw, promptRaw [][sha256.Size]byte
}

// ReplaceFeatures makes f the complete features of source, replacing what
// it had; the lists are kept sorted by URI, URI template and name. It
// fails, changing nothing, when source is empty, a resource has no URI, a
// template no URI template or a prompt no name, one is listed twice, or
// annotations are not valid JSON. The change says which lists differ from
// before (titles, descriptions, MIME types, sizes, annotations and the
// source's objects (Raw) as canonical JSON, arguments — never the
// functions); the caller announces it. An
// empty f removes the source.
func (r *Registry) ReplaceFeatures(source string, f Features) (FeaturesChange, error) {
	if source == "" {
		return FeaturesChange{}, errors.New("replace features: empty source name")
	}
	if f.empty() {
		return r.RemoveFeatures(source), nil
	}
	next, err := prepareFeatures(source, f)
	if err != nil {
		return FeaturesChange{}, err
	}
	r.fmu.Lock()
	defer r.fmu.Unlock()
	change := FeaturesChange{Resources: len(f.Resources)+len(f.Templates) > 0, Prompts: len(f.Prompts) > 0}
	if prev, had := r.features[source]; had {
		change = diffFeatures(prev, next)
	}
	r.features[source] = next
	return change, nil
}

// prepareFeatures checks and sorts f and makes the canonical forms.
func prepareFeatures(source string, f Features) (features, error) {
	f.Resources = slices.Clone(f.Resources)
	f.Templates = slices.Clone(f.Templates)
	f.Prompts = slices.Clone(f.Prompts)
	sort.SliceStable(f.Resources, func(i, j int) bool { return f.Resources[i].URI < f.Resources[j].URI })
	sort.SliceStable(f.Templates, func(i, j int) bool { return f.Templates[i].URITemplate < f.Templates[j].URITemplate })
	sort.SliceStable(f.Prompts, func(i, j int) bool { return f.Prompts[i].Name < f.Prompts[j].Name })
	out := features{f: f}
	for i, res := range f.Resources {
		if res.URI == "" {
			return features{}, fmt.Errorf("replace features of %s: a resource has no URI", source)
		}
		if i > 0 && f.Resources[i-1].URI == res.URI {
			return features{}, fmt.Errorf("replace features of %s: resource %q is listed twice", source, res.URI)
		}
		c, err := canonical(res.Annotations)
		if err != nil {
			return features{}, fmt.Errorf("replace features of %s: annotations of resource %q: %w", source, res.URI, err)
		}
		out.resCanon = append(out.resCanon, c)
		sum, err := rawSum(res.Raw)
		if err != nil {
			return features{}, fmt.Errorf("replace features of %s: resource %q: %w", source, res.URI, err)
		}
		out.resRaw = append(out.resRaw, sum)
	}
	for i, t := range f.Templates {
		if t.URITemplate == "" {
			return features{}, fmt.Errorf("replace features of %s: a resource template has no URI template", source)
		}
		if i > 0 && f.Templates[i-1].URITemplate == t.URITemplate {
			return features{}, fmt.Errorf("replace features of %s: resource template %q is listed twice", source, t.URITemplate)
		}
		c, err := canonical(t.Annotations)
		if err != nil {
			return features{}, fmt.Errorf("replace features of %s: annotations of resource template %q: %w", source, t.URITemplate, err)
		}
		out.tmplCanon = append(out.tmplCanon, c)
		sum, err := rawSum(t.Raw)
		if err != nil {
			return features{}, fmt.Errorf("replace features of %s: resource template %q: %w", source, t.URITemplate, err)
		}
		out.tmplRaw = append(out.tmplRaw, sum)
	}
	for i, p := range f.Prompts {
		if p.Name == "" {
			return features{}, fmt.Errorf("replace features of %s: a prompt has no name", source)
		}
		if i > 0 && f.Prompts[i-1].Name == p.Name {
			return features{}, fmt.Errorf("replace features of %s: prompt %q is listed twice", source, p.Name)
		}
		var key strings.Builder
		for _, a := range p.Arguments {
			fmt.Fprintf(&key, "%q %q %q %t;", a.Name, a.Title, a.Description, a.Required)
		}
		out.promptArgs = append(out.promptArgs, key.String())
		sum, err := rawSum(p.Raw)
		if err != nil {
			return features{}, fmt.Errorf("replace features of %s: prompt %q: %w", source, p.Name, err)
		}
		out.promptRaw = append(out.promptRaw, sum)
	}
	return out, nil
}

// canonical is raw as canonical JSON; nil for none.
func canonical(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return jsonschema.Canonical(raw)
}

// diffFeatures says which lists of b differ from a.
func diffFeatures(a, b features) FeaturesChange {
	var c FeaturesChange
	c.Resources = !slices.EqualFunc(a.f.Resources, b.f.Resources, sameResourceFields) ||
		!slices.EqualFunc(a.resCanon, b.resCanon, bytes.Equal) ||
		!slices.EqualFunc(a.f.Templates, b.f.Templates, sameTemplateFields) ||
		!slices.EqualFunc(a.tmplCanon, b.tmplCanon, bytes.Equal) ||
		!slices.Equal(a.resRaw, b.resRaw) || !slices.Equal(a.tmplRaw, b.tmplRaw)
	c.Prompts = !slices.EqualFunc(a.f.Prompts, b.f.Prompts, func(x, y wire.Prompt) bool {
		return x.Name == y.Name && x.Title == y.Title && x.Description == y.Description
	}) || !slices.Equal(a.promptArgs, b.promptArgs) || !slices.Equal(a.promptRaw, b.promptRaw)
	return c
}

func sameResourceFields(a, b wire.Resource) bool {
	sameSize := (a.Size == nil) == (b.Size == nil) && (a.Size == nil || *a.Size == *b.Size)
	return a.URI == b.URI && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MimeType == b.MimeType && sameSize
}

func sameTemplateFields(a, b wire.ResourceTemplate) bool {
	return a.URITemplate == b.URITemplate && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MimeType == b.MimeType
}

// RemoveFeatures removes source's features; the change says which lists
// it had something in.
func (r *Registry) RemoveFeatures(source string) FeaturesChange {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	prev, had := r.features[source]
	if !had {
		return FeaturesChange{}
	}
	delete(r.features, source)
	return FeaturesChange{Resources: len(prev.f.Resources)+len(prev.f.Templates) > 0, Prompts: len(prev.f.Prompts) > 0}
}

// SourceFeatures returns source's features (sorted lists, the caller's to
// keep) and whether it has any.
func (r *Registry) SourceFeatures(source string) (Features, bool) {
	r.fmu.RLock()
	defer r.fmu.RUnlock()
	e, ok := r.features[source]
	if !ok {
		return Features{}, false
	}
	f := e.f
	f.Resources, f.Templates, f.Prompts = slices.Clone(f.Resources), slices.Clone(f.Templates), slices.Clone(f.Prompts)
	return f, true
}

// FeatureSources returns the sources that have features registered,
// sorted.
func (r *Registry) FeatureSources() []string {
	r.fmu.RLock()
	defer r.fmu.RUnlock()
	out := make([]string, 0, len(r.features))
	for s := range r.features {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ReadResource reads uri through source's Read.
func (r *Registry) ReadResource(ctx context.Context, source, uri string) ([]wire.ResourceContent, error) {
	f, ok := r.SourceFeatures(source)
	if !ok || f.Read == nil {
		return nil, fmt.Errorf("read %q of %s: %w", uri, source, ErrUnknownSource)
	}
	return f.Read(ctx, uri)
}

// GetPrompt gets prompt name of source with args through its GetPrompt.
func (r *Registry) GetPrompt(ctx context.Context, source, name string, args map[string]string) (wire.PromptResult, error) {
	f, ok := r.SourceFeatures(source)
	if !ok || f.GetPrompt == nil {
		return wire.PromptResult{}, fmt.Errorf("prompt %q of %s: %w", name, source, ErrUnknownSource)
	}
	return f.GetPrompt(ctx, name, args)
}
