package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// EditOptions configure EditToReady.
type EditOptions struct {
	Reps int
	// Debounces to measure the watcher with; the first should be
	// controller.DefaultDebounce.
	Debounces []time.Duration
	// ServerArgs are the test server's flags.
	ServerArgs []string
}

// editEnv is one watched config file feeding one host.
type editEnv struct {
	*host
	path     string
	debounce time.Duration
	stop     context.CancelFunc
	watched  chan struct{}
	argv     []string
}

func configJSON(argv []string, names ...string) []byte {
	type srv struct {
		Name    string   `json:"name"`
		Type    string   `json:"type"`
		Command []string `json:"command"`
		Timeout int      `json:"timeout"`
	}
	servers := make([]srv, 0, len(names))
	for _, n := range names {
		servers = append(servers, srv{Name: n, Type: "local", Command: argv, Timeout: 30000})
	}
	b, _ := json.MarshalIndent(map[string]any{"mcp": map[string]any{"servers": servers}}, "", "  ")
	return append(b, '\n')
}

// warmName is a server that runs during the whole edit scenario: it proves
// the watcher has read the file, and a real config is rarely empty.
const warmName = "warm"

func newEditEnv(dir string, v *schema.Validator, debounce time.Duration, argv []string) (*editEnv, error) {
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, configJSON(argv, warmName), 0o600); err != nil {
		return nil, err
	}
	e := &editEnv{host: newHost(controller.Options{}), path: path, debounce: debounce, watched: make(chan struct{}), argv: argv}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go func() {
		defer close(e.watched)
		_ = controller.Watch(ctx, controller.WatchOptions{
			Sources: schema.Sources{User: path}, Validator: v, Controller: e.ctrl, Debounce: debounce,
			LookupEnv: func(string) (string, bool) { return "", false }, Logger: logr.Discard(),
		})
	}()
	if _, err := e.waitTools(warmName); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *editEnv) close() {
	e.stop()
	<-e.watched
	e.host.close()
}

// write replaces the config: in place (truncate and write, as an editor
// that keeps the inode does) or by renaming a complete new file over it
// (as most editors and `freecode mcp add` do).
func (e *editEnv) write(data []byte, rename bool) error {
	if !rename {
		return os.WriteFile(e.path, data, 0o600)
	}
	tmp := e.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, e.path)
}

// addOne adds server name, returns the time until its tools are in the
// registry, then removes it again and waits until it has stopped.
func (e *editEnv) addOne(name string, rename bool) (time.Duration, error) {
	data := configJSON(e.argv, warmName, name)
	start := time.Now()
	if err := e.write(data, rename); err != nil {
		return 0, err
	}
	at, err := e.waitTools(name)
	if err != nil {
		return 0, err
	}
	d := at.Sub(start)
	if err := e.write(configJSON(e.argv, warmName), rename); err != nil {
		return 0, err
	}
	if _, err := e.waitPhase(name, wire.PhaseStopped); err != nil {
		return 0, err
	}
	return d, nil
}

// EditToReady measures edit-to-ready against the raw mcp-go baseline, for
// each debounce and for in-place and rename-replace writes. The variants
// and the baseline take turns within each repetition.
func EditToReady(ctx context.Context, cfg Config, opts EditOptions) ([]Row, error) {
	v, err := schema.NewValidator()
	if err != nil {
		return nil, err
	}
	argv := append([]string{cfg.TestServer}, opts.ServerArgs...)
	dir, err := os.MkdirTemp("", "freecode-bench-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	envs := make([]*editEnv, len(opts.Debounces))
	for i, d := range opts.Debounces {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, err
		}
		env, err := newEditEnv(sub, v, d, argv)
		if err != nil {
			return nil, fmt.Errorf("edit env (debounce %s): %w", d, err)
		}
		defer env.close()
		envs[i] = env
	}
	// Warm up the page cache and the first spawn.
	if _, err := rawConnect(ctx, argv); err != nil {
		return nil, err
	}

	var base []time.Duration
	ours := make(map[[2]int][]time.Duration) // {env, rename} -> samples
	for rep := range opts.Reps {
		d, err := rawConnect(ctx, argv)
		if err != nil {
			return nil, err
		}
		base = append(base, d)
		for i, env := range envs {
			for rename := range 2 {
				name := fmt.Sprintf("s%d_%d_%d", rep, i, rename)
				d, err := env.addOne(name, rename == 1)
				if err != nil {
					return nil, fmt.Errorf("edit-to-ready (debounce %s, rename %v): %w", env.debounce, rename == 1, err)
				}
				ours[[2]int{i, rename}] = append(ours[[2]int{i, rename}], d)
			}
		}
		cfg.logf("  edit-to-ready rep %d/%d: baseline %s", rep+1, opts.Reps, ms(d))
	}

	const group = "1. edit-to-ready (in-process Watch + controller + registry)"
	b := median(base)
	rows := []Row{{Group: group, Name: "baseline alone: raw mcp-go spawn + initialize + tools/list", Value: ms(b), Runs: len(base)}}
	for i, env := range envs {
		for rename, how := range []string{"in-place write", "rename-replace"} {
			m := median(ours[[2]int{i, rename}])
			over := m - b
			label := fmt.Sprintf("%s, debounce %s", how, env.debounce)
			if env.debounce == controller.DefaultDebounce {
				label += " (default)"
			}
			rows = append(rows, Row{
				Group: group, Name: label, Value: ms(m), Baseline: ms(b),
				Delta: ms(over), Ratio: ratio(m, b),
				Target: "overhead < 50 ms", Verdict: verdict(over < 50*time.Millisecond), Runs: len(base),
			})
			if env.debounce != controller.DefaultDebounce {
				continue
			}
			// The debounce is a deliberate wait; show what remains without it.
			rest := over - env.debounce
			rows = append(rows, Row{
				Group: group, Name: "  … of which not the debounce wait (overhead − " + env.debounce.String() + ")",
				Value: "", Delta: ms(rest), Target: "< 50 ms", Verdict: verdict(rest < 50*time.Millisecond),
			})
		}
	}
	return rows, nil
}
