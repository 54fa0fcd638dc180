package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// storeKeyBytes is the length of a store's key.
const storeKeyBytes = 32

// storeKey names what a store keeps on disk. A spec hash covers a server's
// expanded env and header values (tokens, passwords), and an unkeyed hash
// of a short secret can be searched for offline by anyone holding a copy
// of the file (a backup, a synced dotfile, a support bundle). So the
// protocol cache and the manifest store do not write spec hashes: they
// write HMAC-SHA256 of them under a random key of their own, kept 0600
// beside the store in its 0700 directory, which the copy of a single file
// does not carry. The zero value is not usable: use loadStoreKey.
type storeKey struct{ k []byte }

// loadStoreKey reads the key kept in path, creating it (0600, its
// directory 0700) when there is none. A key that cannot be read or written
// is replaced by a random one for this process alone — nothing it stores
// is found again by another process or after a restart, which costs a
// probe or a start, never a secret — and the error says why.
func loadStoreKey(path string) (storeKey, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) == storeKeyBytes {
		return storeKey{k: b}, nil
	}
	k := make([]byte, storeKeyBytes)
	if _, rerr := rand.Read(k); rerr != nil {
		return storeKey{}, fmt.Errorf("store key: %w", rerr)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return storeKey{k: k}, fmt.Errorf("read store key %s: %w", path, err)
	}
	// Missing or malformed: write a new one. O_EXCL: of two processes
	// creating it at once one wins, and the other reads the winner's.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return storeKey{k: k}, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if len(b) != 0 && len(b) != storeKeyBytes {
		_ = os.Remove(path) // malformed
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if b, rerr := os.ReadFile(path); rerr == nil && len(b) == storeKeyBytes {
			return storeKey{k: b}, nil
		}
	}
	if err != nil {
		return storeKey{k: k}, fmt.Errorf("write store key %s: %w", path, err)
	}
	_, werr := f.Write(k)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return storeKey{k: k}, fmt.Errorf("write store key %s: %w", path, werr)
	}
	return storeKey{k: k}, nil
}

// name is what key is stored under: the first n hex digits (at most 64)
// of HMAC-SHA256(k, key).
func (s storeKey) name(key string, n int) string {
	m := hmac.New(sha256.New, s.k)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))[:n]
}

// lazyStoreKey is a storeKey loaded on first use from path ("" for a store
// kept in memory: a random key of this process). Its user serialises the
// calls (a store's own lock).
type lazyStoreKey struct {
	path string
	k    *storeKey
}

// name is storeKey.name of key; false, without creating the key, when
// create is false and no key file exists yet (then nothing was stored
// under it either). A key that cannot be loaded is replaced as
// loadStoreKey says, and the error is returned for the caller to log.
func (l *lazyStoreKey) name(key string, n int, create bool) (string, bool, error) {
	var err error
	if l.k == nil {
		if l.path != "" && !create {
			if _, serr := os.Stat(l.path); serr != nil {
				return "", false, nil
			}
		}
		var k storeKey
		if l.path == "" {
			k = storeKey{k: make([]byte, storeKeyBytes)}
			_, err = rand.Read(k.k)
		} else {
			k, err = loadStoreKey(l.path)
		}
		if err != nil && k.k == nil {
			return "", false, err
		}
		l.k = &k
	}
	return l.k.name(key, n), true, err
}
