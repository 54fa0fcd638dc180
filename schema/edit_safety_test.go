package schema

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func addServer(name string) func(*Doc) error {
	return func(d *Doc) error {
		return d.AddServer([]Field{{"name", name}, {"type", "local"}, {"command", []string{"echo"}}})
	}
}

// saveByHand replaces path the way most editors save: a new file renamed
// over the old one.
func saveByHand(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "editor.swp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// A hand edit saved while a CLI edit runs is not overwritten: the edit
// notices the file is not the one it read and starts again on the new one.
func TestEditKeepsHandEditSavedMeanwhile(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte("{\n  \"model\": \"a\"\n}\n"), 0o600))

	// The editor is another goroutine; fn lets it save exactly once, after
	// the edit read the file and before it writes its copy.
	save, saved := make(chan struct{}), make(chan error, 1)
	go func() {
		if _, ok := <-save; ok {
			tmp := filepath.Join(filepath.Dir(path), "editor.swp")
			err := os.WriteFile(tmp, []byte("{\n  \"model\": \"saved by hand\"\n}\n"), 0o600)
			if err == nil {
				err = os.Rename(tmp, path)
			}
			saved <- err
		}
		close(saved)
	}()
	calls := 0
	err = v.Edit(context.Background(), path, func(d *Doc) error {
		calls++
		if calls == 1 {
			save <- struct{}{}
			if err := <-saved; err != nil {
				return err
			}
		}
		return addServer("cli")(d)
	})
	close(save)
	<-saved // the editor goroutine has ended
	require.NoError(t, err)
	require.Equal(t, 2, calls, "the edit was done again on the saved file")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"model": "saved by hand"`, "the hand edit is kept")
	require.Contains(t, string(data), `"name": "cli"`, "and so is the CLI's")
}

// A save that changes neither the size nor the modification time is still
// seen, by its content.
func TestEditSeesInPlaceChangeOfSameSize(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"model": "aaaa"}`), 0o600))
	st, err := os.Stat(path)
	require.NoError(t, err)
	calls := 0
	require.NoError(t, v.Edit(context.Background(), path, func(d *Doc) error {
		calls++
		if calls == 1 {
			require.NoError(t, os.WriteFile(path, []byte(`{"model": "bbbb"}`), 0o600))
			require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
		}
		return addServer("cli")(d)
	}))
	require.Equal(t, 2, calls)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"model": "bbbb"`)
}

// A file that changes under every attempt is left as the last save made
// it, and the error says the file kept changing.
func TestEditGivesUpOnFileThatKeepsChanging(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o600))
	calls := 0
	err = v.Edit(context.Background(), path, func(d *Doc) error {
		calls++
		saveByHand(t, path, `{"model": "`+strconv.Itoa(calls)+`"}`)
		return addServer("cli")(d)
	})
	require.ErrorIs(t, err, ErrKeptChanging)
	require.ErrorContains(t, err, "edit "+path+": the file kept changing while it was being edited (it changed during each of 5 attempts)")
	require.Equal(t, maxEditAttempts, calls)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"model": "5"}`, string(data))
}

// A dangling symlink stays a symlink: the file it points at is created
// (0600, in a 0700 directory).
func TestEditDanglingSymlink(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for name, target := range map[string]string{
		"absolute": filepath.Join(t.TempDir(), "dotfiles", "freecode", "config.json"),
		"relative": filepath.Join("..", "dotfiles", "config.json"),
	} {
		t.Run(name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			require.NoError(t, os.MkdirAll(home, 0o700))
			link := filepath.Join(home, "config.json")
			require.NoError(t, os.Symlink(target, link))
			require.NoError(t, v.Edit(context.Background(), link, addServer("a")))

			fi, err := os.Lstat(link)
			require.NoError(t, err)
			require.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "the link is kept")
			real := target
			if !filepath.IsAbs(real) {
				real = filepath.Join(home, real)
			}
			fi, err = os.Stat(real)
			require.NoError(t, err)
			require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
			di, err := os.Stat(filepath.Dir(real))
			require.NoError(t, err)
			require.Equal(t, fs.FileMode(0o700), di.Mode().Perm())
			cfg, err := v.Load(link, LoadOptions{})
			require.NoError(t, err)
			require.Len(t, cfg.MCP.Servers, 1)
		})
	}
}

// Temporary copies left by writers killed mid-write are removed by the
// next edit; those of a writer that may still be writing stay.
func TestEditRemovesStaleTempFiles(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o600))

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	deadPID := strconv.Itoa(gone.Process.Pid)
	live := strconv.Itoa(os.Getpid())
	old := time.Now().Add(-2 * staleTempAge)
	files := map[string]bool{ // name → still there after the edit
		".config.json.tmp-" + deadPID + "-123": false,
		".config.json.tmp-" + live + "-456":    true,
		".config.json.tmp-" + live + "-789":    false, // too old for any writer
		".config.json.tmp-2849301":             false, // the unnamed form, old
		".config.json.tmp-2849302":             true,  // the unnamed form, recent
		".config.json.tmpfoo":                  true,
		".other.json.tmp-" + deadPID + "-1":    true,
		"notes.txt":                            true,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o600))
		if strings.HasSuffix(name, "-789") || strings.HasSuffix(name, "2849301") {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}
	require.NoError(t, v.Edit(context.Background(), path, addServer("a")))
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if kept {
			require.NoError(t, err, "%s is kept", name)
		} else {
			require.ErrorIs(t, err, os.ErrNotExist, "%s is removed", name)
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".config.json.tmp-"+live+"-") && e.Name() != ".config.json.tmp-"+live+"-456",
			"the edit's own temporary file is gone: %s", e.Name())
	}
}

// A writer's temporary file names its process, so that a later edit can
// tell whether it is stale.
func TestEditTempFileNamesItsWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	err := writeAtomic(path, []byte("{}"), 0o600, func() error {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.True(t, strings.HasPrefix(entries[0].Name(), ".config.json.tmp-"+strconv.Itoa(os.Getpid())+"-"), entries[0].Name())
		return errors.New("stop here")
	})
	require.EqualError(t, err, "stop here")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused write leaves nothing")
}

func TestFileErrorSaysWhatItIs(t *testing.T) {
	path := "/x/config.json"
	lockErr := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "/x/.config.json.lock", Err: errno}
	}
	err := fileError(path, "lock "+path, lockErr(syscall.EROFS))
	require.EqualError(t, err, "cannot edit /x/config.json: the file system is read-only")
	require.ErrorIs(t, err, ErrReadOnly)
	require.ErrorIs(t, err, syscall.EROFS)

	err = fileError(path, "write config", lockErr(syscall.EACCES))
	require.EqualError(t, err, "cannot edit /x/config.json: no permission to write it or its directory /x: permission denied")
	require.ErrorIs(t, err, os.ErrPermission)

	err = fileError(path, "write config", lockErr(syscall.ENOSPC))
	require.EqualError(t, err, "write config: open /x/.config.json.lock: no space left on device")
	require.NotErrorIs(t, err, ErrReadOnly)
}
