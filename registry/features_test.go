package registry

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/require"
)

func sampleFeatures() Features {
	size := int64(12)
	return Features{
		Resources: []wire.Resource{
			{URI: "b://two", Name: "two", Annotations: json.RawMessage(`{"priority": 1, "audience": ["user"]}`)},
			{URI: "a://one", Name: "one", MimeType: "text/plain", Size: &size},
		},
		Templates: []wire.ResourceTemplate{{URITemplate: "a://{id}", Name: "by id"}},
		Prompts: []wire.Prompt{
			{Name: "greet", Arguments: []wire.PromptArgument{{Name: "name", Required: true}}},
			{Name: "plain"},
		},
		Read: func(context.Context, string) ([]wire.ResourceContent, error) { return nil, nil },
	}
}

func TestFeaturesChangeOnlyOnRealChange(t *testing.T) {
	r := NewRegistry(nil)
	ch, err := r.ReplaceFeatures("s", sampleFeatures())
	require.NoError(t, err)
	require.Equal(t, FeaturesChange{Resources: true, Prompts: true}, ch)
	got, ok := r.SourceFeatures("s")
	require.True(t, ok)
	require.Equal(t, "a://one", got.Resources[0].URI, "sorted by URI")

	// The same lists, in another order, with other functions and
	// annotations spelled differently: no change.
	same := sampleFeatures()
	same.Resources[0].Annotations = json.RawMessage(`{"audience":["user"],"priority":1}`)
	same.Resources[0], same.Resources[1] = same.Resources[1], same.Resources[0]
	same.Read = func(context.Context, string) ([]wire.ResourceContent, error) { return nil, errors.New("other") }
	ch, err = r.ReplaceFeatures("s", same)
	require.NoError(t, err)
	require.False(t, ch.Any(), "%+v", ch)

	for name, tc := range map[string]struct {
		edit func(*Features)
		want FeaturesChange
	}{
		"resource description": {func(f *Features) { f.Resources[1].Description = "new" }, FeaturesChange{Resources: true}},
		"resource size":        {func(f *Features) { f.Resources[1].Size = nil }, FeaturesChange{Resources: true}},
		"annotations":          {func(f *Features) { f.Resources[0].Annotations = json.RawMessage(`{"priority": 2}`) }, FeaturesChange{Resources: true}},
		"template":             {func(f *Features) { f.Templates = nil }, FeaturesChange{Resources: true}},
		"argument required":    {func(f *Features) { f.Prompts[0].Arguments[0].Required = false }, FeaturesChange{Prompts: true}},
		"prompt added":         {func(f *Features) { f.Prompts = append(f.Prompts, wire.Prompt{Name: "more"}) }, FeaturesChange{Prompts: true}},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry(nil)
			_, err := r.ReplaceFeatures("s", sampleFeatures())
			require.NoError(t, err)
			f := sampleFeatures()
			tc.edit(&f)
			ch, err := r.ReplaceFeatures("s", f)
			require.NoError(t, err)
			require.Equal(t, tc.want, ch)
		})
	}

	require.Equal(t, FeaturesChange{Resources: true, Prompts: true}, r.RemoveFeatures("s"))
	require.False(t, r.RemoveFeatures("s").Any())
	_, ok = r.SourceFeatures("s")
	require.False(t, ok)
}

func TestReplaceFeaturesRefusesBadLists(t *testing.T) {
	r := NewRegistry(nil)
	_, err := r.ReplaceFeatures("s", sampleFeatures())
	require.NoError(t, err)
	for name, edit := range map[string]func(*Features){
		"no uri":       func(f *Features) { f.Resources[0].URI = "" },
		"twice":        func(f *Features) { f.Resources[0].URI = f.Resources[1].URI },
		"bad json":     func(f *Features) { f.Resources[0].Annotations = json.RawMessage(`{`) },
		"prompt twice": func(f *Features) { f.Prompts[1].Name = "greet" },
		"no template":  func(f *Features) { f.Templates[0].URITemplate = "" },
	} {
		f := sampleFeatures()
		edit(&f)
		_, err := r.ReplaceFeatures("s", f)
		require.Error(t, err, name)
	}
	got, _ := r.SourceFeatures("s")
	require.Len(t, got.Resources, 2, "a refused replace changes nothing")
	_, err = r.ReplaceFeatures("", sampleFeatures())
	require.Error(t, err)
}

func TestReadAndGetGoThroughTheSource(t *testing.T) {
	r := NewRegistry(nil)
	_, err := r.ReadResource(context.Background(), "s", "a://one")
	require.ErrorIs(t, err, ErrUnknownSource)
	f := sampleFeatures()
	f.Read = func(_ context.Context, uri string) ([]wire.ResourceContent, error) {
		return []wire.ResourceContent{{URI: uri, Text: new("read " + uri)}}, nil
	}
	_, err = r.ReplaceFeatures("s", f)
	require.NoError(t, err)
	got, err := r.ReadResource(context.Background(), "s", "a://one")
	require.NoError(t, err)
	require.Equal(t, "read a://one", *got[0].Text)
	_, err = r.GetPrompt(context.Background(), "s", "greet", nil)
	require.ErrorIs(t, err, ErrUnknownSource, "no GetPrompt registered")
	require.Equal(t, []string{"s"}, r.FeatureSources())
}
