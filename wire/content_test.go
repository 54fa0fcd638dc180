package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceContent is DecodeContent written with encoding/json alone, the
// way blocks were converted before they were read field by field.
func referenceContent(block []byte) (Content, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(block, &keys); err != nil {
		return Content{}, err
	}
	if keys == nil {
		return Content{Raw: block}, nil
	}
	str := func(key string) (string, error) {
		var s string
		if v, ok := keys[key]; ok {
			return s, json.Unmarshal(v, &s)
		}
		return s, nil
	}
	var out Content
	var err error
	if out.Type, err = str("type"); err != nil {
		return Content{}, err
	}
	allowed := map[string][]string{
		"text": {"type", "text"}, "image": {"type", "data", "mimeType"}, "audio": {"type", "data", "mimeType"},
		"resource_link": {"type", "uri", "mimeType"},
	}[out.Type]
	for k := range keys {
		if !slices.Contains(allowed, k) {
			out.Raw = block
		}
	}
	if allowed == nil {
		out.Raw = block
	}
	var e1, e2 error
	switch out.Type {
	case "text":
		out.Text, e1 = str("text")
	case "image", "audio":
		out.Data, e1 = str("data")
		out.MimeType, e2 = str("mimeType")
	case "resource_link":
		out.URI, e1 = str("uri")
		out.MimeType, e2 = str("mimeType")
	case "resource":
		var r *embedded
		if v, ok := keys["resource"]; ok {
			e1 = json.Unmarshal(v, &r)
		}
		if r != nil && e1 == nil {
			out.URI, out.MimeType, out.Text, out.Data = r.URI, r.MimeType, r.Text, r.Blob
		}
	}
	if err := errors.Join(e1, e2); err != nil {
		return Content{}, err
	}
	return out, nil
}

// DecodeContent agrees with referenceContent on every block whose keys hold
// no escapes (it reads keys as written: an escaped key is one Content has
// no field for, and the block is kept verbatim).
func FuzzContent(f *testing.F) {
	for _, seed := range []string{
		`{"type":"text","text":"hello"}`,
		` { "type" : "text" , "text" : "line\nbreak \"quoted\" \u00e9" } `,
		`{"text":"x","type":"text","annotations":{"priority":0.5,"audience":["user","}{"]}}`,
		`{"type":"image","data":"aW1n","mimeType":"image/png"}`,
		`{"type":"audio","mimeType":"audio/wav","data":"YXVk","_meta":{"a":[1,{"b":"]"}]}}`,
		`{"type":"resource","resource":{"uri":"file:///a","text":"body"}}`,
		`{"type":"resource","resource":null}`,
		`{"type":"resource_link","uri":"file:///c","name":"c"}`,
		`{"type":"hologram","data":"aG9sbw==","depth":1.50,"_meta":{"example.com/frame":7}}`,
		`{"type":"text","text":5}`, `{"type":null,"text":"t"}`, `{"type":"text","text":null}`,
		`{"type":"text","type":"image","data":"d"}`, `{}`, `null`, `"text"`, `[1,2]`, `{"type":"te`, `{"type":"text","text":"\xff"}`,
		`{"type":"text","text":"tab\tinside"}`, `{"type":true,"text":false}`, `{"n":-1.5e+10,"type":"text","text":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		if fields, ok := objectFields(block); ok && json.Valid(block) {
			for fields.next() {
				if bytes.IndexByte(fields.key, '\\') >= 0 {
					t.Skip("escaped key")
				}
			}
		}
		got, err := DecodeContent(block)
		want, wantErr := referenceContent(block)
		if wantErr != nil {
			require.Error(t, err, "block %q", block)
			return
		}
		require.NoError(t, err, "block %q", block)
		require.Equal(t, want, got, "block %q", block)
	})
}
