package mcpregistry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Errors of Map.
var (
	// ErrNoRuntime: no package of the server runs on this machine.
	ErrNoRuntime = errors.New("no way to run this server here")
	// ErrMissing: required values were not given.
	ErrMissing = errors.New("required values missing")
	// ErrUnsupported: the server.json asks for what FreeCode cannot do.
	ErrUnsupported = errors.New("not supported")
	// ErrSecretInClear: a secret was given as a value, not a ${VAR}
	// reference.
	ErrSecretInClear = errors.New("a secret is never written in clear")
)

// Values are what the user gave for a server's inputs.
type Values struct {
	// Env: environment variables (--env NAME=VALUE).
	Env map[string]string
	// Header: HTTP headers of a remote (--header NAME=VALUE).
	Header map[string]string
	// Var: {variables} of URLs, values and a bundle's user_config
	// (--var NAME=VALUE).
	Var map[string]string
	// Arg: arguments, by valueHint or by flag name without its dashes
	// (--arg NAME=VALUE).
	Arg map[string]string
}

// Options steer Map.
type Options struct {
	Values Values
	// LookPath finds a runtime (exec.LookPath); nil finds none.
	LookPath func(string) (string, error)
	// Prefer picks what to install: "" the first package this machine
	// runs, else the first remote; "remote"; or a registry type ("npm",
	// "pypi", "oci", "mcpb", "nuget").
	Prefer string
}

// Secret is a value the entry holds as a ${Var} reference: the user sets
// Var in FreeCode's environment.
type Secret struct {
	Var         string `json:"var"`
	For         string `json:"for"`
	Description string `json:"description,omitempty"`
}

// Bundle is an mcpb package still to download, check and unpack; its
// Command is filled by InstallBundle.
type Bundle struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// Plan is the FreeCode entry a server.json maps to.
type Plan struct {
	// Kind is the registry type of the package chosen, or "remote".
	Kind string `json:"kind"`
	// Type is "local" or "remote".
	Type      string            `json:"type"`
	Command   []string          `json:"command,omitempty"`
	URL       string            `json:"url,omitempty"`
	Transport string            `json:"transport,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Secrets   []Secret          `json:"secrets,omitempty"`
	Bundle    *Bundle           `json:"bundle,omitempty"`
	// Runtime is the program the command runs ("npx", "docker", …).
	Runtime string `json:"runtime,omitempty"`
}

// MissingError lists the required values not given, each as the flag
// that gives it.
type MissingError struct {
	Server string
	Flags  []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s needs %s", e.Server, strings.Join(e.Flags, ", "))
}

func (e *MissingError) Unwrap() error { return ErrMissing }

// NoRuntimeError names the runtimes whose absence keeps every package of
// a server from running.
type NoRuntimeError struct {
	Server string
	// Missing are "npx (npm package @x/y)" and the like; Unsupported the
	// packages no runtime of FreeCode's runs.
	Missing, Unsupported []string
}

func (e *NoRuntimeError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "install "+strings.Join(e.Missing, " or "))
	}
	if len(e.Unsupported) > 0 {
		parts = append(parts, "FreeCode does not run "+strings.Join(e.Unsupported, ", "))
	}
	return fmt.Sprintf("%s has no package this machine can run and no remote: %s", e.Server, strings.Join(parts, "; "))
}

func (e *NoRuntimeError) Unwrap() error { return ErrNoRuntime }

// Map maps s to a FreeCode entry.
func Map(s ServerJSON, opt Options) (Plan, error) {
	look := opt.LookPath
	if look == nil {
		look = func(string) (string, error) { return "", errors.New("no lookup") }
	}
	noRT := &NoRuntimeError{Server: s.Name}
	for i, p := range s.Packages {
		if opt.Prefer != "" && opt.Prefer != p.RegistryType {
			continue
		}
		rt, err := runtimeOf(p, look)
		if errors.Is(err, ErrUnsupported) {
			noRT.Unsupported = append(noRT.Unsupported, err.Error())
			continue
		}
		if err != nil {
			noRT.Missing = append(noRT.Missing, err.Error())
			continue
		}
		m := newMapper(s.Name, opt.Values)
		plan, err := m.pkg(p, rt)
		if err != nil {
			return Plan{}, fmt.Errorf("%s package %d (%s): %w", s.Name, i, p.RegistryType, err)
		}
		return plan, m.err(plan)
	}
	if opt.Prefer == "" || opt.Prefer == "remote" {
		for i, r := range s.Remotes {
			m := newMapper(s.Name, opt.Values)
			plan, err := m.remote(r)
			if errors.Is(err, ErrUnsupported) {
				noRT.Unsupported = append(noRT.Unsupported, err.Error())
				continue
			}
			if err != nil {
				return Plan{}, fmt.Errorf("%s remote %d: %w", s.Name, i, err)
			}
			return plan, m.err(plan)
		}
	}
	if opt.Prefer != "" && len(noRT.Missing)+len(noRT.Unsupported) == 0 {
		return Plan{}, fmt.Errorf("%s has no %s package or remote: %w", s.Name, opt.Prefer, ErrUnsupported)
	}
	return Plan{}, noRT
}

// runtimeOf is the program that runs p, or why there is none.
func runtimeOf(p Package, look func(string) (string, error)) (string, error) {
	if p.Transport.Type != "" && p.Transport.Type != TransportStdio {
		return "", fmt.Errorf("%s package %s over %s (a local HTTP server): %w", p.RegistryType, p.Identifier, p.Transport.Type, ErrUnsupported)
	}
	var want []string
	switch p.RegistryType {
	case TypeNPM:
		want = []string{"npx"}
	case TypePyPI:
		want = []string{"uvx"}
	case TypeOCI:
		want = []string{"docker", "podman"}
	case TypeNuGet:
		want = []string{"dnx"}
	case TypeMCPB:
		return "", nil
	default:
		return "", fmt.Errorf("%s packages (%s): %w", p.RegistryType, p.Identifier, ErrUnsupported)
	}
	for _, w := range want {
		if _, err := look(w); err == nil {
			return w, nil
		}
	}
	return "", fmt.Errorf("%s (%s package %s)", strings.Join(want, " or "), p.RegistryType, p.Identifier)
}

// mapper resolves one server's inputs, collecting what is missing and
// what the user must set.
type mapper struct {
	server  string
	v       Values
	missing []string
	secrets []Secret
	bad     error
}

func newMapper(server string, v Values) *mapper { return &mapper{server: server, v: v} }

func (m *mapper) err(p Plan) error {
	if m.bad != nil {
		return m.bad
	}
	if len(m.missing) > 0 {
		slices.Sort(m.missing)
		return &MissingError{Server: m.server, Flags: slices.Compact(m.missing)}
	}
	return nil
}

func (m *mapper) fail(err error) {
	if m.bad == nil {
		m.bad = err
	}
}

// literal escapes what a registry sends so that FreeCode's ${VAR}
// expansion never reads the user's environment on its behalf.
func literal(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// envName is the environment variable a secret named name is read from.
func envName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "V_" + s
	}
	return s
}

var refRE = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// resolve is the value of input in: what the user gave (given, ok), else
// its value with its {variables} filled, else its default. A secret is a
// ${secretVar} reference (the user's reference when given one). present
// is false when the input is optional and has nothing.
func (m *mapper) resolve(in Input, given string, ok bool, flag, secretVar, what string) (val string, present bool) {
	if in.IsSecret {
		switch {
		case ok && refRE.MatchString(given):
			return given, true
		case ok:
			m.fail(fmt.Errorf("%s: %w: give %s='${%s}' and set %s in the environment", what, ErrSecretInClear, flag, secretVar, secretVar))
			return "", false
		case in.Value != "" && len(in.Variables) > 0:
			// A template ("Bearer {token}"): its variables hold the secret.
		default:
			m.secrets = append(m.secrets, Secret{Var: secretVar, For: what, Description: in.Description})
			return "${" + secretVar + "}", true
		}
	}
	if ok && !strings.Contains(given, "${") && hasSecret(in.Variables) {
		m.fail(fmt.Errorf("%s: %w: it holds a secret; give it with a '${VAR}' reference", what, ErrSecretInClear))
		return "", false
	}
	switch {
	case ok:
		val = given
	case in.Value != "":
		val = m.fill(in.Value, in.Variables, what)
	case in.Default != "":
		val = literal(in.Default)
	case in.IsRequired:
		m.missing = append(m.missing, flag+"=…")
		return "", false
	default:
		return "", false
	}
	if ok && len(in.Choices) > 0 && !slices.Contains(in.Choices, val) {
		m.fail(fmt.Errorf("%s: %q is not one of %s", what, val, strings.Join(in.Choices, ", ")))
	}
	return val, true
}

var varRE = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

// fill replaces the {name}s of tmpl that vars defines; the rest of tmpl
// is the registry's text, escaped.
func (m *mapper) fill(tmpl string, vars map[string]Input, what string) string {
	var b strings.Builder
	last := 0
	for _, loc := range varRE.FindAllStringSubmatchIndex(tmpl, -1) {
		name := tmpl[loc[2]:loc[3]]
		in, ok := vars[name]
		if !ok {
			continue
		}
		b.WriteString(literal(tmpl[last:loc[0]]))
		given, gok := m.v.Var[name]
		if val, present := m.resolve(in.withoutVars(), given, gok, "--var "+name, envName(name), what+" {"+name+"}"); present {
			b.WriteString(val)
		}
		last = loc[1]
	}
	b.WriteString(literal(tmpl[last:]))
	return b.String()
}

func hasSecret(vars map[string]Input) bool {
	for _, v := range vars {
		if v.IsSecret {
			return true
		}
	}
	return false
}

func (in Input) withoutVars() Input { in.Variables = nil; return in }

// args renders arguments.
func (m *mapper) args(as []Argument, what string) []string {
	var out []string
	for _, a := range as {
		key := a.ValueHint
		if a.Type == "named" {
			key = strings.TrimLeft(a.Name, "-")
		}
		if key == "" {
			key = a.Name
		}
		given, ok := m.v.Arg[key]
		desc := fmt.Sprintf("%s argument %s", what, key)
		switch a.Type {
		case "positional":
			if val, present := m.resolve(a.Input, given, ok, "--arg "+key, envName(key), desc); present {
				out = append(out, val)
			}
		case "named":
			if a.Name == "" || strings.ContainsAny(a.Name, " \t") {
				m.fail(fmt.Errorf("%s: a named argument without a flag name: %w", what, ErrUnsupported))
				continue
			}
			hasValue := a.Value != "" || a.Default != "" || a.IsRequired || a.IsSecret || ok
			if !hasValue {
				out = append(out, literal(a.Name))
				continue
			}
			if val, present := m.resolve(a.Input, given, ok, "--arg "+key, envName(key), desc); present {
				out = append(out, literal(a.Name), val)
			}
		default:
			m.fail(fmt.Errorf("%s: argument type %q: %w", what, a.Type, ErrUnsupported))
		}
	}
	return out
}

func (m *mapper) env(vars []KeyValueInput) map[string]string {
	env := map[string]string{}
	for _, kv := range vars {
		if kv.Name == "" {
			continue
		}
		given, ok := m.v.Env[kv.Name]
		if val, present := m.resolve(kv.Input, given, ok, "--env "+kv.Name, kv.Name, "environment variable "+kv.Name); present {
			env[kv.Name] = val
		}
	}
	return env
}

func (m *mapper) headers(hs []KeyValueInput) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		if h.Name == "" {
			continue
		}
		given, ok := m.v.Header[h.Name]
		if val, present := m.resolve(h.Input, given, ok, "--header "+h.Name, envName(h.Name), "header "+h.Name); present {
			out[h.Name] = val
		}
	}
	// Headers the user gave that the server.json does not name.
	for k, v := range m.v.Header {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

const (
	npmjs = "https://registry.npmjs.org"
	pypi  = "https://pypi.org"
)

func (m *mapper) pkg(p Package, rt string) (Plan, error) {
	if p.Identifier == "" {
		return Plan{}, fmt.Errorf("a package without an identifier: %w", ErrBadAnswer)
	}
	if strings.HasPrefix(p.Identifier, "-") {
		return Plan{}, fmt.Errorf("identifier %q starts with '-': %w", p.Identifier, ErrBadAnswer)
	}
	what := p.RegistryType + " package " + p.Identifier
	rtArgs := m.args(p.RuntimeArguments, what+" runtime")
	pkgArgs := m.args(p.PackageArguments, what)
	env := m.env(p.EnvironmentVariables)
	plan := Plan{Kind: p.RegistryType, Type: "local", Runtime: rt}
	version := p.Version
	switch p.RegistryType {
	case TypeNPM, TypePyPI, TypeNuGet:
		if version == "" || version == "latest" {
			return Plan{}, fmt.Errorf("%s has no pinned version: %w", what, ErrUnsupported)
		}
	}
	switch p.RegistryType {
	case TypeNPM:
		cmd := []string{"npx", "-y"}
		if p.RegistryBaseURL != "" && strings.TrimRight(p.RegistryBaseURL, "/") != npmjs {
			cmd = append(cmd, "--registry", literal(p.RegistryBaseURL))
		}
		cmd = append(cmd, without(rtArgs, "-y", "--yes")...)
		plan.Command = append(append(cmd, literal(p.Identifier+"@"+version)), pkgArgs...)
	case TypePyPI:
		cmd := []string{"uvx"}
		if p.RegistryBaseURL != "" && strings.TrimRight(p.RegistryBaseURL, "/") != pypi {
			cmd = append(cmd, "--index-url", literal(p.RegistryBaseURL))
		}
		cmd = append(cmd, rtArgs...)
		plan.Command = append(append(cmd, literal(p.Identifier+"=="+version)), pkgArgs...)
	case TypeNuGet:
		cmd := append([]string{"dnx"}, rtArgs...)
		plan.Command = append(append(cmd, literal(p.Identifier+"@"+version), "--yes", "--"), pkgArgs...)
	case TypeOCI:
		image := p.Identifier
		if version != "" && !hasTag(image) {
			image += ":" + version
		}
		cmd := []string{rt, "run"}
		if !slices.Contains(rtArgs, "-i") && !slices.Contains(rtArgs, "--interactive") {
			cmd = append(cmd, "-i")
		}
		if !slices.Contains(rtArgs, "--rm") {
			cmd = append(cmd, "--rm")
		}
		cmd = append(cmd, rtArgs...)
		for _, k := range sortedKeys(env) {
			cmd = append(cmd, "-e", k)
		}
		plan.Command = append(append(cmd, literal(image)), pkgArgs...)
	case TypeMCPB:
		if !shaRE.MatchString(p.FileSHA256) {
			return Plan{}, fmt.Errorf("%s has no fileSha256 to check it against: %w", what, ErrUnsupported)
		}
		if err := downloadURL(p.Identifier); err != nil {
			return Plan{}, fmt.Errorf("%s: %w", what, err)
		}
		plan.Bundle = &Bundle{URL: p.Identifier, SHA256: p.FileSHA256}
		plan.Runtime = ""
		// The command comes from the bundle's manifest (InstallBundle);
		// the arguments the server.json adds go after it.
		plan.Command = pkgArgs
	}
	if len(env) > 0 {
		plan.Env = env
	}
	plan.Secrets = m.secrets
	return plan, nil
}

var shaRE = regexp.MustCompile(`^[a-f0-9]{64}$`)

// downloadURL checks where a bundle comes from: https, or http to a
// loopback address.
func downloadURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bundle URL %q: %w", raw, ErrBadAnswer)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return fmt.Errorf("bundle URL %q is not https: %w", raw, ErrUnsupported)
}

func hasTag(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	last := image[strings.LastIndex(image, "/")+1:]
	return strings.Contains(last, ":")
}

func without(args []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return slices.Contains(drop, a) })
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (m *mapper) remote(r Transport) (Plan, error) {
	switch r.Type {
	case TransportStreamableHTTP, TransportSSE:
	default:
		return Plan{}, fmt.Errorf("remote transport %q: %w", r.Type, ErrUnsupported)
	}
	u := m.fill(r.URL, r.Variables, "url")
	for _, loc := range varRE.FindAllStringSubmatch(r.URL, -1) {
		if _, ok := r.Variables[loc[1]]; !ok {
			return Plan{}, fmt.Errorf("url %q uses {%s}, which it does not define: %w", r.URL, loc[1], ErrBadAnswer)
		}
	}
	if pu, err := url.Parse(strings.ReplaceAll(u, "$", "")); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		if len(m.missing) == 0 {
			return Plan{}, fmt.Errorf("url %q: %w", r.URL, ErrBadAnswer)
		}
	}
	plan := Plan{Kind: "remote", Type: "remote", URL: u, Transport: r.Type}
	if h := m.headers(r.Headers); len(h) > 0 {
		plan.Headers = h
	}
	plan.Secrets = m.secrets
	return plan, nil
}
