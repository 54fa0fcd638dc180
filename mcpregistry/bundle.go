package mcpregistry

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Errors of InstallBundle.
var (
	// ErrDigest: the bundle is not the one the server.json names.
	ErrDigest = errors.New("the bundle's SHA-256 does not match fileSha256")
	// ErrBadBundle: the bundle is not a zip with a usable manifest.json.
	ErrBadBundle = errors.New("not a usable MCP bundle")
)

// Bundle limits.
const (
	MaxBundleBytes      = 256 << 20
	maxBundleFiles      = 20000
	maxBundleUnpacked   = 1 << 30
	maxManifestBytes    = 1 << 20
	bundleFileMode      = 0o644
	bundleDirectoryMode = 0o755
)

// BundleResult is what an unpacked bundle runs.
type BundleResult struct {
	Dir     string
	Command []string
	Env     map[string]string
	Secrets []Secret
}

type manifest struct {
	Server struct {
		MCPConfig struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcp_config"`
	} `json:"server"`
	UserConfig map[string]struct {
		Description string          `json:"description"`
		Required    bool            `json:"required"`
		Sensitive   bool            `json:"sensitive"`
		Default     json.RawMessage `json:"default"`
	} `json:"user_config"`
}

// InstallBundle downloads b, checks its SHA-256 and unpacks it into dir
// (which must not exist; nothing is written when the digest or the
// bundle is wrong), then maps its manifest's server.mcp_config:
// ${__dirname} is dir, ${user_config.K} the value given for K in vars
// (its default, or a ${K} reference when it is sensitive).
func InstallBundle(ctx context.Context, hc *http.Client, b Bundle, dir string, vars map[string]string) (BundleResult, error) {
	if err := downloadURL(b.URL); err != nil {
		return BundleResult{}, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultLimits().Timeout * 8}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL, nil)
	if err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w", b.URL, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w: %w", b.URL, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return BundleResult{}, fmt.Errorf("bundle %s: %w: %s", b.URL, ErrUnavailable, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBundleBytes+1))
	if err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w: %w", b.URL, ErrUnavailable, err)
	}
	if len(data) > MaxBundleBytes {
		return BundleResult{}, fmt.Errorf("bundle %s: over %d bytes: %w", b.URL, MaxBundleBytes, ErrTooLarge)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != b.SHA256 {
		return BundleResult{}, fmt.Errorf("bundle %s: %w (got %s, want %s)", b.URL, ErrDigest, got, b.SHA256)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w: %w", b.URL, ErrBadBundle, err)
	}
	var m manifest
	if err := readManifest(zr, &m); err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w", b.URL, err)
	}
	res, err := mapManifest(m, dir, vars)
	if err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w", b.URL, err)
	}
	if err := unpack(zr, dir); err != nil {
		return BundleResult{}, fmt.Errorf("bundle %s: %w", b.URL, err)
	}
	return res, nil
}

func readManifest(zr *zip.Reader, m *manifest) error {
	for _, f := range zr.File {
		if f.Name != "manifest.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadBundle, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
		if err != nil || len(data) > maxManifestBytes {
			return fmt.Errorf("%w: manifest.json unreadable or over %d bytes", ErrBadBundle, maxManifestBytes)
		}
		if err := json.Unmarshal(data, m); err != nil {
			return fmt.Errorf("%w: manifest.json: %w", ErrBadBundle, err)
		}
		if m.Server.MCPConfig.Command == "" {
			return fmt.Errorf("%w: manifest.json has no server.mcp_config.command", ErrBadBundle)
		}
		return nil
	}
	return fmt.Errorf("%w: no manifest.json", ErrBadBundle)
}

var mcpbVarRE = regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}`)

func mapManifest(m manifest, dir string, vars map[string]string) (BundleResult, error) {
	res := BundleResult{Dir: dir}
	var missing []string
	seen := map[string]bool{}
	sub := func(s string) string {
		var b strings.Builder
		last := 0
		for _, loc := range mcpbVarRE.FindAllStringSubmatchIndex(s, -1) {
			b.WriteString(literal(s[last:loc[0]]))
			last = loc[1]
			name := s[loc[2]:loc[3]]
			switch {
			case name == "__dirname":
				b.WriteString(literal(dir))
			case name == "HOME":
				b.WriteString("${HOME}")
			case strings.HasPrefix(name, "user_config."):
				k := strings.TrimPrefix(name, "user_config.")
				uc, ok := m.UserConfig[k]
				v, given := vars[k]
				var def string
				_ = json.Unmarshal(uc.Default, &def)
				switch {
				case ok && uc.Sensitive:
					if given && refRE.MatchString(v) {
						b.WriteString(v)
						continue
					}
					ev := envName(k)
					if !seen[ev] {
						seen[ev] = true
						res.Secrets = append(res.Secrets, Secret{Var: ev, For: "bundle setting " + k, Description: uc.Description})
					}
					b.WriteString("${" + ev + "}")
				case given:
					b.WriteString(v)
				case def != "":
					b.WriteString(literal(def))
				case ok && uc.Required:
					missing = append(missing, "--var "+k+"=…")
				}
			default:
				b.WriteString(literal(s[loc[0]:loc[1]]))
			}
		}
		b.WriteString(literal(s[last:]))
		return b.String()
	}
	c := m.Server.MCPConfig
	res.Command = append(res.Command, sub(c.Command))
	for _, a := range c.Args {
		res.Command = append(res.Command, sub(a))
	}
	if len(c.Env) > 0 {
		res.Env = map[string]string{}
		for k, v := range c.Env {
			res.Env[k] = sub(v)
		}
	}
	if len(missing) > 0 {
		return BundleResult{}, &MissingError{Server: "the bundle", Flags: missing}
	}
	return res, nil
}

// unpack writes zr's files under dir, through a temporary directory
// renamed into place, refusing paths that leave dir, links and too much.
func unpack(zr *zip.Reader, dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s already exists", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if len(zr.File) > maxBundleFiles {
		return fmt.Errorf("%w: over %d files", ErrTooLarge, maxBundleFiles)
	}
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return err
	}
	defer root.Close()
	var total int64
	for _, f := range zr.File {
		name := f.Name
		if !filepath.IsLocal(name) || strings.Contains(name, `\`) {
			return fmt.Errorf("%w: file %q is outside the bundle", ErrBadBundle, name)
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := root.MkdirAll(name, bundleDirectoryMode); err != nil {
				return err
			}
			continue
		case !mode.IsRegular():
			return fmt.Errorf("%w: %q is not a regular file", ErrBadBundle, name)
		}
		if d := filepath.Dir(name); d != "." {
			if err := root.MkdirAll(d, bundleDirectoryMode); err != nil {
				return err
			}
		}
		perm := os.FileMode(bundleFileMode)
		if mode&0o111 != 0 {
			perm = 0o755
		}
		n, err := copyFile(root, name, f, perm, maxBundleUnpacked-total)
		if err != nil {
			return err
		}
		total += n
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	done = true
	return nil
}

func copyFile(root *os.Root, name string, f *zip.File, perm os.FileMode, left int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrBadBundle, name, err)
	}
	defer rc.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(rc, left+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %w", ErrBadBundle, name, err)
	}
	if n > left {
		return n, fmt.Errorf("%w: unpacks to over %d bytes", ErrTooLarge, maxBundleUnpacked)
	}
	return n, nil
}
