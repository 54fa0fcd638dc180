package serve

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/gofrs/flock"
)

// homeLock is serve's exclusive lock on a FreeCode home.
type homeLock struct {
	fl *flock.Flock
}

// lockHome takes $home/run/serve.lock (creating run/ 0700) and writes this
// process's pid into it. Another serve holding it is an error naming its pid.
func lockHome(home string) (*homeLock, error) {
	dir := filepath.Join(home, "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll keeps an existing directory's mode; the socket's privacy
	// rests on this one.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make %s private: %w", dir, err)
	}
	path := filepath.Join(dir, "serve.lock")
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		holder := "unknown pid"
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = "pid " + string(bytes.TrimSpace(b))
		}
		return nil, fmt.Errorf("freecode serve is already running for %s (%s holds %s); stop it first, or set FREECODE_HOME to use another home", home, holder, path)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &homeLock{fl: fl}, nil
}

func (l *homeLock) release() {
	// The pid is cleared before the lock goes, so the file never names a
	// serve that is gone while another one holds it.
	_ = os.Truncate(l.fl.Path(), 0)
	_ = l.fl.Unlock()
}

// listenSocket listens on the unix socket path (0600). The caller holds the
// home lock, so a socket file already there was left by a serve that died
// without cleaning up, and is removed.
func listenSocket(path string, log logr.Logger) (net.Listener, error) {
	if err := os.Remove(path); err == nil {
		log.Info("removed a stale socket left by an earlier serve", "socket", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make %s private: %w", path, err)
	}
	return ln, nil
}
