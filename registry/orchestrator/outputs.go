package orchestrator

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// Output caps: a result of an MCP tool whose estimated size is over its
// cap is kept whole in a file and the model gets a pointer to it.
const (
	// OutputsDirName is the directory, under FreeCode's home, that holds
	// capped results.
	OutputsDirName = "outputs"
	// OutputMaxAge and OutputMaxTotalBytes bound what the outputs
	// directory keeps: files older than OutputMaxAge, then the oldest
	// files while the total is over OutputMaxTotalBytes, are removed
	// each time a result is written there.
	OutputMaxAge        = 24 * time.Hour
	OutputMaxTotalBytes = 256 << 20
	// OutputExcerptBytes is how much of the head and of the tail of a
	// capped result's text the model is given.
	OutputExcerptBytes = 4 << 10
	// BytesPerToken is the estimate of bytes per token.
	BytesPerToken = 4
)

// EstimateTokens is the estimated size of r in tokens: the bytes of its
// text, the decoded bytes of its binary blocks (image, audio, blobs), the
// URIs, the JSON of blocks FreeCode keeps only raw (an unknown type) and
// the structured content, over BytesPerToken.
func EstimateTokens(r wire.CallResult) int {
	n := len(r.Structured)
	for _, c := range r.Content {
		n += len(c.Text) + decodedLen(c.Data) + len(c.URI) + len(c.MimeType)
		switch c.Type {
		case wire.ContentText, wire.ContentImage, wire.ContentAudio, wire.ContentResource, wire.ContentResourceLink:
		default:
			n += len(c.Raw)
		}
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// decodedLen is the decoded size of base64 data.
func decodedLen(data string) int {
	data = strings.TrimRight(data, "=")
	return len(data) * 3 / 4
}

// capOutput returns res unchanged when its estimate is at most maxTokens
// (whose source capSource names);
// otherwise it writes res whole under dir (see writeOutput) and returns one
// text block with the head and the tail of its text, where it was kept,
// its size and how to read more. If the file cannot be written, the block
// says so: a result is never cut without saying it. pruneErr is a failure
// to prune dir, which loses nothing of this result.
func capOutput(dir string, maxTokens int, capSource, tool string, res wire.CallResult, now time.Time) (_ wire.CallResult, pruneErr error) {
	tokens := EstimateTokens(res)
	if maxTokens <= 0 || tokens <= maxTokens {
		return res, nil
	}
	text := res.Text()
	jsonPath, textPath, err := writeOutput(dir, tool, res, text, now)
	if err == nil {
		pruneErr = PruneOutputs(dir, now, OutputMaxAge, OutputMaxTotalBytes, []string{jsonPath, textPath})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[output capped: the result of %s is about %d tokens (%d bytes of text; content blocks: %d), over the cap of %d (%s).\n",
		tool, tokens, len(text), len(res.Content), maxTokens, capSource)
	if err != nil {
		fmt.Fprintf(&b, "It could NOT be kept: %v. Only the head and the tail below are left; call the tool again asking for less.]\n", err)
	} else {
		fmt.Fprintf(&b, "The whole result is kept as JSON in %s", jsonPath)
		if textPath != "" {
			lines := strings.Count(text, "\n")
			if !strings.HasSuffix(text, "\n") {
				lines++
			}
			headLines := strings.Count(head(text), "\n")
			fmt.Fprintf(&b, " and its text (%d lines) in %s.\nRead more with the read tool: {\"path\": %q, \"offset\": %d, \"limit\": %d}", lines, textPath, textPath, headLines+1, registry.ReadDefaultLimit)
		}
		b.WriteString("]\n")
	}
	if text != "" {
		h, t := head(text), tail(text)
		if len(h)+len(t) >= len(text) {
			h, t = text, ""
		}
		fmt.Fprintf(&b, "--- head (%s) ---\n%s", byteSize(len(h)), h)
		if !strings.HasSuffix(h, "\n") {
			b.WriteByte('\n')
		}
		if t != "" {
			fmt.Fprintf(&b, "--- %s omitted ---\n--- tail (%s) ---\n%s", byteSize(len(text)-len(h)-len(t)), byteSize(len(t)), t)
			if !strings.HasSuffix(t, "\n") {
				b.WriteByte('\n')
			}
		}
		b.WriteString("--- end ---\n")
	}
	return wire.CallResult{IsError: res.IsError, Content: []wire.Content{{Type: wire.ContentText, Text: b.String()}}}, pruneErr
}

// head is the start of text, at most OutputExcerptBytes, ending after a
// newline when there is one in its second half, never inside a rune.
func head(text string) string {
	if len(text) <= OutputExcerptBytes {
		return text
	}
	h := text[:OutputExcerptBytes]
	if i := strings.LastIndexByte(h, '\n'); i >= OutputExcerptBytes/2 {
		return h[:i+1]
	}
	for len(h) > 0 && !utf8.ValidString(h[len(h)-min(len(h), utf8.UTFMax):]) {
		h = h[:len(h)-1]
	}
	return h
}

// tail is the end of text, at most OutputExcerptBytes, starting at a line
// when a newline is in its first half, never inside a rune.
func tail(text string) string {
	if len(text) <= OutputExcerptBytes {
		return text
	}
	t := text[len(text)-OutputExcerptBytes:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < OutputExcerptBytes/2 && i+1 < len(t) {
		return t[i+1:]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return t
}

// writeOutput writes res as JSON, and text when there is any, to new
// files in dir (created 0700; files 0600) named after the time and tool.
// It returns the files' paths.
func writeOutput(dir, tool string, res wire.CallResult, text string, now time.Time) (jsonPath, textPath string, err error) {
	if dir == "" {
		return "", "", errors.New("no outputs directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("outputs directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("outputs directory: %w", err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return "", "", fmt.Errorf("encode result: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	base := filepath.Join(dir, fmt.Sprintf("%s-%s-%s", now.UTC().Format("20060102T150405Z"), fileSafe(tool), hex.EncodeToString(rnd[:])))
	jsonPath = base + ".json"
	if err := writeNew(jsonPath, data); err != nil {
		return "", "", err
	}
	if text != "" {
		textPath = base + ".txt"
		if err := writeNew(textPath, []byte(text)); err != nil {
			return "", "", err
		}
	}
	return jsonPath, textPath, nil
}

// writeNew writes data to a file that must not exist yet, mode 0600.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write output %s: %w", path, err)
	}
	return nil
}

// fileSafe keeps letters, digits, "_", "-" and "." of a tool id.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// PruneOutputs removes the regular files of dir modified before
// now-maxAge, then, oldest first, files while their total size is over
// maxTotal. Files named in keep are never removed. Calls writing at once
// may prune each other's older files; none removes what it just wrote.
func PruneOutputs(dir string, now time.Time, maxAge time.Duration, maxTotal int64, keep []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("prune outputs: %w", err)
	}
	type file struct {
		path string
		mod  time.Time
		size int64
	}
	var files []file
	var total int64
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		p := filepath.Join(dir, e.Name())
		kept := slices.Contains(keep, p)
		if !kept && now.Sub(info.ModTime()) > maxAge {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		total += info.Size()
		if !kept {
			files = append(files, file{p, info.ModTime(), info.Size()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for _, f := range files {
		if total <= maxTotal {
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		total -= f.size
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prune outputs: %w", err)
	}
	return nil
}
