package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/gofrs/flock"
)

const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600

	// storeVersion is written into every file; a file of another version
	// is treated as absent (tokens) or re-registered (clients).
	storeVersion = 1

	// LockTimeout bounds the wait for another process's refresh, which
	// itself is bounded by DefaultHTTPTimeout.
	LockTimeout = 2 * DefaultHTTPTimeout

	lockRetry = 10 * time.Millisecond

	// msgWaitingForLock is logged (V(1)) when another process holds a
	// server's token lock.
	msgWaitingForLock = "waiting for the token lock"
)

// Store keeps tokens and client registrations in files under one
// directory (FreeCode passes $FREECODE_HOME/auth):
//
//	<dir>/                          0700
//	  tokens/<server>-<hash>.json   0600  one server's tokens; <hash> covers
//	                                      the server name and its URL, so a
//	                                      changed URL never reuses tokens
//	  tokens/<server>-<hash>.lock   0600  flock(2) taken around every
//	                                      refresh, login and logout
//	  clients/<hash>.json           0600  a dynamically registered client,
//	                                      keyed by the issuer's identifier
//	  clients/<hash>.lock           0600  taken around a registration
//
// Every file is written atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory. A Store has no
// in-memory state; any number of processes may share one directory.
type Store struct {
	dir string
}

// OpenStore opens (creating it if needed) the store in dir. A directory
// that is group- or world-accessible is tightened to 0700.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("token store: no directory given")
	}
	for _, d := range []string{dir, filepath.Join(dir, "tokens"), filepath.Join(dir, "clients")} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("token store: %w", err)
		}
		st, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("token store: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("token store: %s is not a directory", d)
		}
		if st.Mode().Perm() != dirMode {
			if err := os.Chmod(d, dirMode); err != nil {
				return nil, fmt.Errorf("token store: make %s private: %w", d, err)
			}
		}
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// serverName is what config.cue allows as a server name; it is also what
// may appear in a file name.
var serverName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,47}$`)

// tokenKey names a server's token files: the server name, for people, and
// a hash of name and URL, so that a server whose URL changed starts afresh.
func tokenKey(server, serverURL string) (string, error) {
	if !serverName.MatchString(server) {
		return "", fmt.Errorf("token store: %q is not a server name", server)
	}
	sum := sha256.Sum256([]byte(server + "\x00" + keyURL(serverURL)))
	return server + "-" + hex.EncodeToString(sum[:8]), nil
}

// keyURL is u with the parts that do not change the resource (scheme and
// host case, the fragment) normalized.
func keyURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

func issuerKey(issuer string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(issuer, "/")))
	return hex.EncodeToString(sum[:12])
}

func (s *Store) tokenPath(key string) string {
	return filepath.Join(s.dir, "tokens", key+".json")
}

func (s *Store) clientPath(issuer string) string {
	return filepath.Join(s.dir, "clients", issuerKey(issuer)+".json")
}

// lock takes the flock(2) at path, waiting up to LockTimeout (and ctx) for
// another holder. flock locks belong to an open file description, so two
// holders in one process exclude each other as two processes do.
func lock(ctx context.Context, path string, log logr.Logger) (unlock func(), err error) {
	fl := flock.New(path, flock.SetPermissions(fileMode))
	ok, err := fl.TryLock()
	if err == nil && !ok {
		log.V(1).Info(msgWaitingForLock, "lock", filepath.Base(path))
		lctx, cancel := context.WithTimeout(ctx, LockTimeout)
		ok, err = fl.TryLockContext(lctx, lockRetry)
		cancel()
		if err == nil && !ok {
			err = lctx.Err()
		}
	}
	if err != nil || !ok {
		_ = fl.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = fl.Unlock() }, nil
}

func (s *Store) lockTokens(ctx context.Context, key string, log logr.Logger) (func(), error) {
	return lock(ctx, filepath.Join(s.dir, "tokens", key+".lock"), log)
}

func (s *Store) lockClient(ctx context.Context, issuer string, log logr.Logger) (func(), error) {
	return lock(ctx, filepath.Join(s.dir, "clients", issuerKey(issuer)+".lock"), log)
}

// readJSON decodes the file at path into v. A missing file gives
// (nil, nil); otherwise the file's FileInfo, as stat'ed before the read.
func readJSON(path string, v any) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, fileMode); err != nil {
			return nil, fmt.Errorf("make %s private: %w", path, err)
		}
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		// The decoder's message quotes no content, only types and offsets.
		return nil, fmt.Errorf("%s is damaged (%v); remove it to start afresh", path, err)
	}
	return st, nil
}

// loadRecord reads a server's tokens; nil if none are stored.
func (s *Store) loadRecord(key string) (*record, fs.FileInfo, error) {
	var r record
	st, err := readJSON(s.tokenPath(key), &r)
	if err != nil || st == nil {
		return nil, nil, wrap("read tokens", err)
	}
	if r.Version != storeVersion {
		return nil, st, nil
	}
	return &r, st, nil
}

// changed reports whether the tokens file is no longer the one st
// describes (a write replaces it by rename, so its identity changes).
func (s *Store) changed(key string, st fs.FileInfo) bool {
	now, err := os.Stat(s.tokenPath(key))
	if err != nil {
		return st != nil
	}
	return st == nil || !os.SameFile(st, now) || !now.ModTime().Equal(st.ModTime()) || now.Size() != st.Size()
}

func (s *Store) saveRecord(key string, r *record) error {
	r.Version = storeVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	return wrap("write tokens", writeAtomic(s.tokenPath(key), append(data, '\n')))
}

func (s *Store) removeRecord(key string) (bool, error) {
	err := os.Remove(s.tokenPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remove tokens: %w", err)
	}
	syncDir(filepath.Join(s.dir, "tokens"))
	return true, nil
}

// otherKeys lists the token files of server other than key: left behind
// when its URL changed.
func (s *Store) otherKeys(server, key string) []string {
	matches, _ := filepath.Glob(filepath.Join(s.dir, "tokens", server+"-*.json"))
	var keys []string
	for _, m := range matches {
		k := strings.TrimSuffix(filepath.Base(m), ".json")
		// server-<16 hex>: exactly one dash after the name.
		if k != key && len(k) == len(server)+1+16 {
			keys = append(keys, k)
		}
	}
	return keys
}

func (s *Store) loadClient(issuer string) (*clientRecord, error) {
	var c clientRecord
	st, err := readJSON(s.clientPath(issuer), &c)
	if err != nil || st == nil {
		return nil, wrap("read client registration", err)
	}
	if c.Version != storeVersion || strings.TrimSuffix(c.Issuer, "/") != strings.TrimSuffix(issuer, "/") || c.ClientID == "" {
		return nil, nil
	}
	return &c, nil
}

func (s *Store) saveClient(c *clientRecord) error {
	c.Version = storeVersion
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("write client registration: %w", err)
	}
	return wrap("write client registration", writeAtomic(s.clientPath(c.Issuer), append(data, '\n')))
}

func (s *Store) removeClient(issuer string) error {
	err := os.Remove(s.clientPath(issuer))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove client registration: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data (mode fileMode): temporary file in
// the same directory, fsync, rename, fsync of the directory. Readers see
// the old file or the new one, never a part.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(fileMode); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename or removal in dir durable; not fatal where
// unsupported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Client kinds, in the order the MCP spec tries them.
const (
	kindPreregistered    = "preregistered"
	kindMetadataDocument = "metadata-document"
	kindDynamic          = "dynamic"
)

// clientCreds is the client a token was issued to. Secret is kept only
// for dynamically registered clients (a pre-registered client's secret
// stays in the config, where FreeCode reads it from each time).
type clientCreds struct {
	ID         string `json:"id"`
	Secret     string `json:"secret,omitempty"`
	AuthMethod string `json:"auth_method"`
	Kind       string `json:"kind"`
}

// record is one server's tokens file.
type record struct {
	Version            int         `json:"version"`
	Server             string      `json:"server"`
	URL                string      `json:"url"` // redacted, for people reading the file
	Resource           string      `json:"resource"`
	Issuer             string      `json:"issuer"`
	TokenEndpoint      string      `json:"token_endpoint"`
	RevocationEndpoint string      `json:"revocation_endpoint,omitempty"`
	Grant              Grant       `json:"grant"`
	Client             clientCreds `json:"client"`
	AccessToken        string      `json:"access_token,omitempty"`
	TokenType          string      `json:"token_type,omitempty"`
	RefreshToken       string      `json:"refresh_token,omitempty"`
	Expiry             time.Time   `json:"expiry,omitzero"`
	Scopes             []string    `json:"scopes,omitempty"`      // granted
	WantScopes         []string    `json:"want_scopes,omitempty"` // asked for by a 403, for the next sign-in
	Account            string      `json:"account,omitempty"`     // from an ID token, display only
	ObtainedAt         time.Time   `json:"obtained_at,omitzero"`
	// NeedsLogin, when set, says why the stored tokens can no longer be
	// used (the refresh token was refused); the tokens are cleared then.
	NeedsLogin string `json:"needs_login,omitempty"`
}

func (r record) String() string {
	return fmt.Sprintf("auth.record{Server:%q Issuer:%q Grant:%q Client:%v AccessToken:%s RefreshToken:%s Expiry:%s Scopes:%q NeedsLogin:%q}",
		r.Server, r.Issuer, r.Grant, r.Client, redacted(r.AccessToken), redacted(r.RefreshToken), r.Expiry.Format(time.RFC3339), r.Scopes, r.NeedsLogin)
}
func (r record) GoString() string     { return r.String() }
func (r record) LogValue() slog.Value { return slog.StringValue(r.String()) }
func (r record) MarshalLog() any      { return r.String() }

func (c clientCreds) String() string {
	return fmt.Sprintf("{ID:%q Secret:%s AuthMethod:%q Kind:%q}", c.ID, redacted(c.Secret), c.AuthMethod, c.Kind)
}
func (c clientCreds) GoString() string     { return c.String() }
func (c clientCreds) LogValue() slog.Value { return slog.StringValue(c.String()) }
func (c clientCreds) MarshalLog() any      { return c.String() }

// clientRecord is a dynamically registered client (RFC 7591), stored per
// issuer and reused by every server whose authorization server it is.
type clientRecord struct {
	Version         int       `json:"version"`
	Issuer          string    `json:"issuer"`
	ClientID        string    `json:"client_id"`
	ClientSecret    string    `json:"client_secret,omitempty"`
	AuthMethod      string    `json:"auth_method"`
	RedirectURIs    []string  `json:"redirect_uris,omitempty"`
	RegisteredAt    time.Time `json:"registered_at"`
	SecretExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
}

func (c clientRecord) String() string {
	return fmt.Sprintf("auth.clientRecord{Issuer:%q ClientID:%q ClientSecret:%s AuthMethod:%q RedirectURIs:%q}",
		c.Issuer, c.ClientID, redacted(c.ClientSecret), c.AuthMethod, c.RedirectURIs)
}
func (c clientRecord) GoString() string     { return c.String() }
func (c clientRecord) LogValue() slog.Value { return slog.StringValue(c.String()) }
func (c clientRecord) MarshalLog() any      { return c.String() }

func (c *clientRecord) creds() clientCreds {
	return clientCreds{ID: c.ClientID, Secret: c.ClientSecret, AuthMethod: c.AuthMethod, Kind: kindDynamic}
}
