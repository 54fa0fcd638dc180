package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExamplesAgreeWithCUE checks that the Go validation accepts and
// refuses the same examples `make cue-vet` gives config.cue: every
// examples/*.json is valid and every examples/bad/*.json is not.
func TestExamplesAgreeWithCUE(t *testing.T) {
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		glob  string
		valid bool
	}{{"../examples/*.json", true}, {"../examples/bad/*.json", false}} {
		files, err := filepath.Glob(c.glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("no examples in %s: %v", c.glob, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			err = v.Validate(f, data, LoadOptions{NoExpand: true})
			if c.valid && err != nil {
				t.Errorf("%s: want valid, got: %v", f, err)
			}
			if !c.valid && err == nil {
				t.Errorf("%s: want errors, got none", f)
			}
		}
	}
}
