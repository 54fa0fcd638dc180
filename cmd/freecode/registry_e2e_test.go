package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/freecode/freecode/internal/testutil"
)

// The MCP registry the e2e test runs: the real server, from the Go module
// proxy (`make deps` builds it into .cache/mcpreg). v1.5.0 is the newest
// whose dependencies the proxy serves (later ones need huma v2.39+).
const registryBinEnv = "FREECODE_MCP_REGISTRY"

// TestRegistryE2E runs the sessions in testdata/registry against the real
// MCP registry server on PostgreSQL, both started here, seeded with real
// server.json files: an npm server that runs offline from testdata/npm, a
// remote one, an mcpb bundle served locally and one whose digest is wrong.
func TestRegistryE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the MCP registry")
	}
	regBin := os.Getenv(registryBinEnv)
	if regBin == "" {
		regBin = filepath.Join(testutil.RepoRoot(), ".cache", "mcpreg", "registry")
	}
	if _, err := os.Stat(regBin); err != nil {
		// CI runs make deps, which builds it: there a missing one is a
		// failure, not a reason to skip.
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP registry server is not built (%v): `make deps` builds it", err)
		}
		t.Skipf("the MCP registry server is not built (%v): `make deps` builds it", err)
	}
	pgBin := postgresBin(t)
	memory := filepath.Join(testutil.RepoRoot(), "testdata", "npm", "node_modules")
	if _, err := os.Stat(filepath.Join(memory, "@modelcontextprotocol", "server-memory", "package.json")); err != nil {
		t.Skipf("testdata/npm is not installed (%v): `make deps` installs it", err)
	}
	for _, p := range []string{"npx", "node"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}

	bundle := bundleZip(t)
	bundleSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(bundle)
	}))
	t.Cleanup(bundleSrv.Close)
	sum := sha256.Sum256(bundle)

	db := startPostgres(t, pgBin)
	seed := filepath.Join(t.TempDir(), "seed.json")
	data := strings.NewReplacer("@BUNDLE_URL@", bundleSrv.URL+"/greeter-1.0.0.mcpb", "@BUNDLE_SHA@", hex.EncodeToString(sum[:])).Replace(seedJSON)
	if err := os.WriteFile(seed, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startRegistry(t, regBin, db, seed)

	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/registry",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FREECODE_HOME", filepath.Join(env.WorkDir, "fchome"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("REGISTRY", reg)
			env.Setenv("NODE_MODULES", memory)
			env.Setenv("GORACE", os.Getenv("GORACE"))
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o700)
		},
	})
}

// seedJSON is what the registry imports: server.json files as publishers
// write them (schema 2025-12-11).
const seedJSON = `[
 {"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.github.modelcontextprotocol/server-memory","title":"Memory","description":"Knowledge graph memory for agents","version":"1.0.0",
  "repository":{"url":"https://github.com/modelcontextprotocol/servers","source":"github","subfolder":"src/memory"},
  "packages":[{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org","identifier":"@modelcontextprotocol/server-memory","version":"2026.8.31","transport":{"type":"stdio"}}]},
 {"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.github.modelcontextprotocol/server-memory","title":"Memory","description":"Knowledge graph memory for agents","version":"1.1.0",
  "repository":{"url":"https://github.com/modelcontextprotocol/servers","source":"github","subfolder":"src/memory"},
  "packages":[{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org","identifier":"@modelcontextprotocol/server-memory","version":"2026.8.31","transport":{"type":"stdio"},
   "environmentVariables":[{"name":"MEMORY_FILE_PATH","description":"Where the graph is kept","default":"memory.jsonl"}]}]},
 {"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"com.example/weather-remote","description":"Weather forecasts, hosted","version":"2.0.0",
  "remotes":[{"type":"streamable-http","url":"https://{tenant}.weather.example.com/mcp","variables":{"tenant":{"description":"Your tenant","isRequired":true}},
   "headers":[{"name":"Authorization","value":"Bearer {token}","variables":{"token":{"isSecret":true,"isRequired":true,"description":"API token"}}}]}]},
 {"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.example/greeter","description":"Greets, from an MCP bundle","version":"1.0.0",
  "packages":[{"registryType":"mcpb","identifier":"@BUNDLE_URL@","version":"1.0.0","fileSha256":"@BUNDLE_SHA@","transport":{"type":"stdio"}}]},
 {"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.example/greeter-tampered","description":"A bundle that is not what its digest says","version":"1.0.0",
  "packages":[{"registryType":"mcpb","identifier":"@BUNDLE_URL@","version":"1.0.0","fileSha256":"0000000000000000000000000000000000000000000000000000000000000000","transport":{"type":"stdio"}}]}
]`

// bundleZip is an MCP bundle: a manifest and a small stdio MCP server in
// node, with no dependencies.
func bundleZip(t *testing.T) []byte {
	t.Helper()
	files := map[string]string{
		"manifest.json": `{"manifest_version":"0.2","name":"greeter","version":"1.0.0","description":"Greets","author":{"name":"FreeCode tests"},
  "server":{"type":"node","entry_point":"server/index.js","mcp_config":{"command":"node","args":["${__dirname}/server/index.js"],"env":{"GREETING":"${user_config.greeting}"}}},
  "user_config":{"greeting":{"type":"string","title":"Greeting","default":"hello"}}}`,
		"server/index.js": `const rl = require('readline').createInterface({input: process.stdin});
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (l) => {
  let m; try { m = JSON.parse(l); } catch { return; }
  if (m.id === undefined) return;
  const ok = (result) => send({jsonrpc: '2.0', id: m.id, result});
  switch (m.method) {
  case 'initialize': return ok({protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'greeter', version: '1.0.0'}});
  case 'ping': return ok({});
  case 'tools/list': return ok({tools: [{name: 'greet', description: 'Greets someone', inputSchema: {type: 'object', properties: {name: {type: 'string'}}, required: ['name']}}]});
  case 'tools/call': return ok({content: [{type: 'text', text: process.env.GREETING + ', ' + m.params.arguments.name}]});
  default: return send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'method not found'}});
  }
});
`,
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"manifest.json", "server/index.js"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, files[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// postgresBin is the directory of initdb and postgres.
func postgresBin(t *testing.T) string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p)
		}
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(ms) == 0 {
		t.Skip("PostgreSQL is not installed: `make deps` installs it")
	}
	return filepath.Dir(ms[len(ms)-1])
}

// startPostgres runs a throwaway PostgreSQL on a unix socket (no port to
// race for) and returns its database URL. Run as root, it runs as the
// postgres user, which PostgreSQL requires.
func startPostgres(t *testing.T, bin string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fc-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root and there is no postgres user to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		c.Env = append(os.Environ(), "LC_ALL=C")
		return c
	}
	initdb := run("initdb", "-D", filepath.Join(dir, "data"), "-U", "registry", "--auth=trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	pg := run("postgres", "-D", filepath.Join(dir, "data"), "-k", dir, "-c", "listen_addresses=", "-c", "fsync=off")
	startUntil(t, pg, "database system is ready to accept connections", 60*time.Second)
	return "postgres://registry@/postgres?host=" + dir + "&sslmode=disable"
}

// startRegistry runs the registry on db, seeded from seed, and returns
// its base URL.
func startRegistry(t *testing.T, bin, db, seed string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := exec.Command(bin)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Env = append(os.Environ(),
		"MCP_REGISTRY_DATABASE_URL="+db,
		"MCP_REGISTRY_SEED_FROM="+seed,
		"MCP_REGISTRY_SERVER_ADDRESS="+addr,
		"MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_JWT_PRIVATE_KEY="+strings.Repeat("ab", 32),
	)
	startUntil(t, c, "HTTP server starting on", 60*time.Second)
	base := "http://" + addr
	// It logs that line just before it listens: its health answer is
	// the readiness (polled on a ticker, within a bound).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		resp, err := http.Get(base + "/v0.1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the registry at %s is not healthy within 30s (%v)", base, err)
		}
	}
	resp, err := http.Get(base + "/v0.1/servers?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Metadata struct{ Count int } `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || list.Metadata.Count != 5 {
		t.Fatalf("the registry lists %d servers, want the 5 seeded (%v)", list.Metadata.Count, err)
	}
	return base
}

// startUntil starts c and waits until its output has a line containing
// ready; the process is killed and waited for when the test ends.
func startUntil(t *testing.T, c *exec.Cmd, ready string, bound time.Duration) {
	t.Helper()
	pr, pw := io.Pipe()
	c.Stdout, c.Stderr = pw, pw
	if err := c.Start(); err != nil {
		t.Fatalf("start %s: %v", c.Path, err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = c.Wait()
		pw.Close()
		close(exited)
	}()
	found := make(chan struct{})
	var log bytes.Buffer
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(pr)
		seen := false
		for sc.Scan() {
			if !seen {
				log.WriteString(sc.Text() + "\n")
			}
			if !seen && strings.Contains(sc.Text(), ready) {
				seen = true
				close(found)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		<-drained
	})
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-found:
	case <-exited:
		<-drained
		t.Fatalf("%s exited before it was ready (%v):\n%s", filepath.Base(c.Path), waitErr, log.String())
	case <-timer.C:
		t.Fatalf("%s not ready within %s", filepath.Base(c.Path), bound)
	}
}
