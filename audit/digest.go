package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Key is the home's secret for argument digests: 32 random bytes in
// audit/key (0600), made on first use. A digest of the arguments without a
// key could be reversed by trying every small argument space (a boolean, a
// short id); with the key it cannot be computed by anyone who has only the
// log, while the owner of the home can still tell whether two calls had the
// same arguments, or check given arguments against a record (Digest).
type Key struct{ b []byte }

// keySize is the key's length in bytes (HMAC-SHA256's block is 64; 32
// random bytes are its full strength).
const keySize = 32

// loadKey reads the key in path, or makes it (O_EXCL: two processes making
// it at once agree on the file that won). The caller holds the log's lock.
func loadKey(path string) (Key, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		b := make([]byte, keySize)
		if _, err := rand.Read(b); err != nil {
			return Key{}, fmt.Errorf("audit key: %w", err)
		}
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if ferr == nil {
			_, ferr = f.Write([]byte(hex.EncodeToString(b) + "\n"))
			if cerr := f.Close(); ferr == nil {
				ferr = cerr
			}
			if ferr != nil {
				_ = os.Remove(path)
				return Key{}, fmt.Errorf("audit key: %w", ferr)
			}
			return Key{b: b}, nil
		}
		if !errors.Is(ferr, os.ErrExist) {
			return Key{}, fmt.Errorf("audit key: %w", ferr)
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return Key{}, fmt.Errorf("audit key: %w", err)
	}
	b, err := hex.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil || len(b) != keySize {
		return Key{}, fmt.Errorf("audit key %s: %w", path, ErrBadKey)
	}
	return Key{b: b}, nil
}

// ErrBadKey is the error of a key file that does not hold a key.
var ErrBadKey = errors.New("not 64 hex digits (remove it to make a new key; older digests then no longer compare)")

// Digest is "hmac-sha256:" and the first 32 hex digits (128 bits) of
// HMAC-SHA256 under the key of the arguments' canonical JSON: objects'
// keys sorted, no spaces, numbers as written. So the same arguments give
// the same digest however a client spaced or ordered them. Arguments that
// are not JSON are digested as they are.
func (k Key) Digest(args json.RawMessage) string {
	m := hmac.New(sha256.New, k.b)
	m.Write(canonical(args))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)[:16])
}

func canonical(args json.RawMessage) []byte {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return args
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return args
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
