package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
)

func open(t *testing.T, home string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), home, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func appendN(t *testing.T, s *Store, n int, tool string) {
	t.Helper()
	for i := range n {
		if err := s.Append(context.Background(), Record{Kind: KindCall, Tool: fmt.Sprintf("%s_%d", tool, i), Status: StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustVerify(t *testing.T, s *Store) Verification {
	t.Helper()
	v, err := s.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAppendChainsAndVerifies(t *testing.T) {
	home := t.TempDir()
	s := open(t, home, Options{})
	appendN(t, s, 5, "t")
	v := mustVerify(t, s)
	if !v.OK() || v.Records != 5 || v.First != 1 || v.Last != 5 || v.Rotated {
		t.Fatalf("verification of a whole log: %+v", v)
	}
	for _, p := range []string{Dir(home), s.Path(), filepath.Join(Dir(home), keyName), filepath.Join(Dir(home), headName)} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	// A second Store (another process) continues the chain.
	appendN(t, open(t, home, Options{}), 2, "u")
	if v := mustVerify(t, s); !v.OK() || v.Last != 7 {
		t.Fatalf("after a second store: %+v", v)
	}
}

// editLines rewrites the current file through fn.
func editLines(t *testing.T, path string, fn func([]string) []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	lines = fn(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyFindsRemovedEditedAndCutLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]string) []string
		want string
	}{
		{"removed", func(l []string) []string { return append(l[:2:2], l[3:]...) }, "records 3 to 3 are missing"},
		{"edited", func(l []string) []string {
			l[2] = strings.Replace(l[2], `"status":"ok"`, `"status":"denied"`, 1)
			return l
		}, "does not follow the line before (record 3)"},
		{"edited last", func(l []string) []string {
			l[4] = strings.Replace(l[4], `"tool":"t_4"`, `"tool":"t_9"`, 1)
			return l
		}, "the last record is not the one written"},
		{"cut end", func(l []string) []string { return l[:3] }, "the records after it were cut"},
		{"garbled", func(l []string) []string { l[1] = l[1][:10]; return l }, "not a record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), Options{})
			appendN(t, s, 5, "t")
			editLines(t, s.Path(), tc.edit)
			v := mustVerify(t, s)
			if v.OK() || !strings.Contains(fmt.Sprint(v.Problems), tc.want) {
				t.Fatalf("problems %v, want one saying %q", v.Problems, tc.want)
			}
		})
	}
}

func TestRotationKeepsTheChainAndBoundsFiles(t *testing.T) {
	home := t.TempDir()
	s := open(t, home, Options{MaxBytes: 600, MaxFiles: 2})
	appendN(t, s, 40, "tool")
	matches, _ := filepath.Glob(filepath.Join(Dir(home), "audit*.jsonl"))
	if len(matches) != 3 {
		t.Fatalf("files %v, want the current one and 2 rotated", matches)
	}
	v := mustVerify(t, s)
	if !v.OK() || !v.Rotated || v.Last != 40 || v.First == 1 {
		t.Fatalf("after rotation: %+v", v)
	}
	// A line removed at the start of a rotated file breaks the chain
	// across files.
	editLines(t, filepath.Join(Dir(home), "audit.1.jsonl"), func(l []string) []string { return l[1:] })
	if v := mustVerify(t, s); v.OK() || !strings.Contains(fmt.Sprint(v.Problems), "missing") {
		t.Fatalf("a line removed after rotation: %v", v.Problems)
	}
}

func TestConcurrentAppendersKeepOneChain(t *testing.T) {
	home := t.TempDir()
	stores := []*Store{open(t, home, Options{MaxBytes: 4096}), open(t, home, Options{MaxBytes: 4096})}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if err := stores[i%2].Append(context.Background(), Record{Kind: KindCall, Tool: fmt.Sprintf("g%d_%d", i, j)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if v := mustVerify(t, stores[0]); !v.OK() || v.Last != 160 {
		t.Fatalf("after concurrent appends: %+v", v)
	}
}

func TestDigestIsKeyedAndCanonical(t *testing.T) {
	a, b := open(t, t.TempDir(), Options{}), open(t, t.TempDir(), Options{})
	x := a.Key().Digest(json.RawMessage(`{"b": 1, "a": "yes"}`))
	if y := a.Key().Digest(json.RawMessage(`{"a":"yes","b":1}`)); x != y {
		t.Errorf("the same arguments spaced and ordered differently: %s, %s", x, y)
	}
	if y := b.Key().Digest(json.RawMessage(`{"a":"yes","b":1}`)); x == y {
		t.Error("two homes' keys give the same digest")
	}
	if !strings.HasPrefix(x, "hmac-sha256:") || len(x) != len("hmac-sha256:")+32 {
		t.Errorf("digest %q", x)
	}
}

func TestRecordsAreCleaned(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	if err := s.Append(context.Background(), Record{Kind: KindCall, Host: "evil\x1b[2J\nhost" + strings.Repeat("x", 400)}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(s.Path())
	if bytes.Count(data, []byte("\n")) != 1 || bytes.Contains(data, []byte("\x1b")) || len(data) > 600 {
		t.Fatalf("line %q", data)
	}
}

func TestLoggerReportsFailureWithoutBlockingAndRecordsTheGap(t *testing.T) {
	home := t.TempDir()
	s := open(t, home, Options{})
	// The current file is a directory: every write fails.
	if err := os.Mkdir(s.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	l := NewLogger(s, logr.Discard())
	l.Log(Record{Kind: KindCall, Tool: "a"})
	l.Log(Record{Kind: KindCall, Tool: "b"})
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := l.Health()
	if h.Err == "" || h.Lost != 2 || h.Written != 0 {
		t.Fatalf("health after failed writes: %+v", h)
	}
	// Writing works again: a logger that lost records writes a record
	// of the gap before the next one.
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	l2 := NewLogger(s, logr.Discard())
	l2.mu.Lock()
	l2.lost = 2
	l2.mu.Unlock()
	l2.Log(Record{Kind: KindCall, Tool: "c"})
	if err := l2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Kind != KindLost || entries[0].Count != 2 || entries[1].Tool != "c" {
		t.Fatalf("entries %+v", entries)
	}
	if h := l2.Health(); h.Err != "" || h.Written != 1 {
		t.Fatalf("health after recovering: %+v", h)
	}
}
