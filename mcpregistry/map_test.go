package mcpregistry

import (
	"encoding/json"
	"errors"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lookAll(string) (string, error) { return "/usr/bin/x", nil }

func lookOnly(names ...string) func(string) (string, error) {
	return func(n string) (string, error) {
		for _, x := range names {
			if x == n {
				return "/usr/bin/" + n, nil
			}
		}
		return "", exec.ErrNotFound
	}
}

func server(t *testing.T, js string) ServerJSON {
	t.Helper()
	e, err := Parse([]byte(js))
	require.NoError(t, err)
	return e.Server
}

// TestMap goes over every field of server.json that changes the entry.
func TestMap(t *testing.T) {
	sha := "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce"
	cases := []struct {
		name   string
		json   string
		opt    Options
		want   Plan
		errIs  error
		errSub string
	}{{
		name: "npm pinned with npx -y",
		json: `{"name":"io.github.a/mem","version":"1.0.0","packages":[{"registryType":"npm","identifier":"@modelcontextprotocol/server-memory","version":"2025.8.4","transport":{"type":"stdio"}}]}`,
		want: Plan{Kind: "npm", Type: "local", Runtime: "npx", Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory@2025.8.4"}},
	}, {
		name: "npm registryBaseUrl, runtimeHint, runtimeArguments, packageArguments",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","registryBaseUrl":"https://npm.example.com","identifier":"pkg","version":"1.2.3","runtimeHint":"npx","transport":{"type":"stdio"},
			"runtimeArguments":[{"type":"named","name":"--yes"},{"type":"named","name":"--node-options","value":"--max-old-space-size=512"}],
			"packageArguments":[{"type":"positional","valueHint":"dir","default":"/tmp"},{"type":"named","name":"--port","value":"{port}","variables":{"port":{"default":"8080"}}},{"type":"named","name":"--verbose"},{"type":"named","name":"--opt","description":"optional, unset"}]}]}`,
		want: Plan{Kind: "npm", Type: "local", Runtime: "npx", Command: []string{"npx", "-y", "--registry", "https://npm.example.com", "--node-options", "--max-old-space-size=512", "pkg@1.2.3", "/tmp", "--port", "8080", "--verbose", "--opt"}},
	}, {
		name: "given --arg and --var beat defaults",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1.2.3","transport":{"type":"stdio"},
			"packageArguments":[{"type":"positional","valueHint":"dir","isRequired":true},{"type":"named","name":"--port","value":"{port}","variables":{"port":{"default":"8080"}}}]}]}`,
		opt:  Options{Values: Values{Arg: map[string]string{"dir": "/data"}, Var: map[string]string{"port": "9"}}},
		want: Plan{Kind: "npm", Type: "local", Runtime: "npx", Command: []string{"npx", "-y", "pkg@1.2.3", "/data", "--port", "9"}},
	}, {
		name:  "required argument, env and variable missing",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1.2.3","transport":{"type":"stdio"},"packageArguments":[{"type":"positional","valueHint":"dir","isRequired":true}],"environmentVariables":[{"name":"REGION","isRequired":true}]}]}`,
		errIs: ErrMissing, errSub: "--arg dir=…, --env REGION=…",
	}, {
		name: "environmentVariables: secret becomes a reference, default and value kept, registry $ escaped",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1","transport":{"type":"stdio"},"environmentVariables":[
			{"name":"API_KEY","isSecret":true,"isRequired":true,"description":"the key"},{"name":"MODE","default":"fast"},{"name":"EVIL","value":"${OPENAI_API_KEY}"},{"name":"UNSET"}]}]}`,
		want: Plan{Kind: "npm", Type: "local", Runtime: "npx", Command: []string{"npx", "-y", "pkg@1"},
			Env:     map[string]string{"API_KEY": "${API_KEY}", "MODE": "fast", "EVIL": "$${OPENAI_API_KEY}"},
			Secrets: []Secret{{Var: "API_KEY", For: "environment variable API_KEY", Description: "the key"}}},
	}, {
		name:  "a secret given in clear is refused",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1","transport":{"type":"stdio"},"environmentVariables":[{"name":"API_KEY","isSecret":true}]}]}`,
		opt:   Options{Values: Values{Env: map[string]string{"API_KEY": "sk-123"}}},
		errIs: ErrSecretInClear,
	}, {
		name: "a secret given as a reference is kept",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1","transport":{"type":"stdio"},"environmentVariables":[{"name":"API_KEY","isSecret":true}]}]}`,
		opt:  Options{Values: Values{Env: map[string]string{"API_KEY": "${MY_KEY}"}}},
		want: Plan{Kind: "npm", Type: "local", Runtime: "npx", Command: []string{"npx", "-y", "pkg@1"}, Env: map[string]string{"API_KEY": "${MY_KEY}"}},
	}, {
		name:   "choices",
		json:   `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","version":"1","transport":{"type":"stdio"},"environmentVariables":[{"name":"LEVEL","choices":["a","b"]}]}]}`,
		opt:    Options{Values: Values{Env: map[string]string{"LEVEL": "c"}}},
		errSub: `"c" is not one of a, b`,
	}, {
		name:  "npm without a version is not pinned",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"pkg","transport":{"type":"stdio"}}]}`,
		errIs: ErrUnsupported,
	}, {
		name: "pypi via uvx with its index",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"pypi","registryBaseUrl":"https://test.pypi.org","identifier":"mcp-server-time","version":"0.6.2","transport":{"type":"stdio"},"packageArguments":[{"type":"named","name":"--local-timezone","default":"UTC"}]}]}`,
		want: Plan{Kind: "pypi", Type: "local", Runtime: "uvx", Command: []string{"uvx", "--index-url", "https://test.pypi.org", "mcp-server-time==0.6.2", "--local-timezone", "UTC"}},
	}, {
		name: "oci with docker: -i --rm, env passed by name, version as tag",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"oci","identifier":"ghcr.io/a/b","version":"1.0.2","runtimeHint":"docker","transport":{"type":"stdio"},
			"runtimeArguments":[{"type":"named","name":"--mount","value":"type=bind,src={src},dst=/data","variables":{"src":{"isRequired":true,"format":"filepath"}}}],
			"environmentVariables":[{"name":"TOKEN","isSecret":true},{"name":"A","value":"1"}]}]}`,
		opt: Options{LookPath: lookOnly("docker"), Values: Values{Var: map[string]string{"src": "/home/me"}}},
		want: Plan{Kind: "oci", Type: "local", Runtime: "docker", Command: []string{"docker", "run", "-i", "--rm", "--mount", "type=bind,src=/home/me,dst=/data", "-e", "A", "-e", "TOKEN", "ghcr.io/a/b:1.0.2"},
			Env: map[string]string{"TOKEN": "${TOKEN}", "A": "1"}, Secrets: []Secret{{Var: "TOKEN", For: "environment variable TOKEN"}}},
	}, {
		name: "oci with podman, tag in identifier kept",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"oci","identifier":"quay.io/a/b:2.0","version":"1.0.2","transport":{"type":"stdio"},"runtimeArguments":[{"type":"named","name":"--rm"}]}]}`,
		opt:  Options{LookPath: lookOnly("podman")},
		want: Plan{Kind: "oci", Type: "local", Runtime: "podman", Command: []string{"podman", "run", "-i", "--rm", "quay.io/a/b:2.0"}},
	}, {
		name: "nuget via dnx",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"nuget","identifier":"Knapcode.SampleMcpServer","version":"0.5.0","transport":{"type":"stdio"}}]}`,
		want: Plan{Kind: "nuget", Type: "local", Runtime: "dnx", Command: []string{"dnx", "Knapcode.SampleMcpServer@0.5.0", "--yes", "--"}},
	}, {
		name: "mcpb: a bundle to download, checked by fileSha256",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"mcpb","identifier":"https://github.com/a/b/releases/download/v1/b.mcpb","version":"1","fileSha256":"` + sha + `","transport":{"type":"stdio"},"packageArguments":[{"type":"named","name":"--debug"}]}]}`,
		want: Plan{Kind: "mcpb", Type: "local", Command: []string{"--debug"}, Bundle: &Bundle{URL: "https://github.com/a/b/releases/download/v1/b.mcpb", SHA256: sha}},
	}, {
		name:  "mcpb without fileSha256 is refused",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"mcpb","identifier":"https://x.example/b.mcpb","transport":{"type":"stdio"}}]}`,
		errIs: ErrUnsupported,
	}, {
		name:  "mcpb over plain http elsewhere than loopback is refused",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"mcpb","identifier":"http://x.example/b.mcpb","fileSha256":"` + sha + `","transport":{"type":"stdio"}}]}`,
		errIs: ErrUnsupported,
	}, {
		name: "remote with {variables} and headers, secret header, secret template variable",
		json: `{"name":"a.b/c","version":"1","remotes":[{"type":"streamable-http","url":"https://{tenant}.example.com/mcp","variables":{"tenant":{"isRequired":true}},
			"headers":[{"name":"X-API-Key","isSecret":true,"isRequired":true},{"name":"Authorization","value":"Bearer {token}","variables":{"token":{"isSecret":true}}},{"name":"X-Mode","default":"ro"}]}]}`,
		opt: Options{Values: Values{Var: map[string]string{"tenant": "acme"}}},
		want: Plan{Kind: "remote", Type: "remote", Transport: "streamable-http", URL: "https://acme.example.com/mcp",
			Headers: map[string]string{"X-API-Key": "${X_API_KEY}", "Authorization": "Bearer ${TOKEN}", "X-Mode": "ro"},
			Secrets: []Secret{{Var: "X_API_KEY", For: "header X-API-Key"}, {Var: "TOKEN", For: "header Authorization {token}"}}},
	}, {
		name:  "a header holding a secret variable given in clear is refused",
		json:  `{"name":"a.b/c","version":"1","remotes":[{"type":"sse","url":"https://r.example.com/sse","headers":[{"name":"Authorization","value":"Bearer {token}","variables":{"token":{"isSecret":true}}}]}]}`,
		opt:   Options{Values: Values{Header: map[string]string{"Authorization": "Bearer sk-live"}}},
		errIs: ErrSecretInClear,
	}, {
		name: "a header holding a secret variable given as a reference",
		json: `{"name":"a.b/c","version":"1","remotes":[{"type":"sse","url":"https://r.example.com/sse","headers":[{"name":"Authorization","value":"Bearer {token}","variables":{"token":{"isSecret":true}}}]}]}`,
		opt:  Options{Values: Values{Header: map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}}},
		want: Plan{Kind: "remote", Type: "remote", Transport: "sse", URL: "https://r.example.com/sse", Headers: map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}},
	}, {
		name:   "remote variable missing",
		json:   `{"name":"a.b/c","version":"1","remotes":[{"type":"sse","url":"https://{tenant}.example.com/sse","variables":{"tenant":{"isRequired":true}}}]}`,
		errIs:  ErrMissing,
		errSub: "--var tenant=…",
	}, {
		name:  "remote url with an undefined variable",
		json:  `{"name":"a.b/c","version":"1","remotes":[{"type":"sse","url":"https://{x}.example.com/sse"}]}`,
		errIs: ErrBadAnswer,
	}, {
		name: "package preferred; remote when no runtime",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"pypi","identifier":"p","version":"1","transport":{"type":"stdio"}}],"remotes":[{"type":"sse","url":"https://r.example.com/sse"}]}`,
		opt:  Options{LookPath: lookOnly()},
		want: Plan{Kind: "remote", Type: "remote", Transport: "sse", URL: "https://r.example.com/sse"},
	}, {
		name: "prefer remote",
		json: `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"p","version":"1","transport":{"type":"stdio"}}],"remotes":[{"type":"streamable-http","url":"https://r.example.com/mcp"}]}`,
		opt:  Options{Prefer: "remote"},
		want: Plan{Kind: "remote", Type: "remote", Transport: "streamable-http", URL: "https://r.example.com/mcp"},
	}, {
		name:   "no runtime: says which",
		json:   `{"name":"a.b/c","version":"1","packages":[{"registryType":"pypi","identifier":"p","version":"1","transport":{"type":"stdio"}},{"registryType":"cargo","identifier":"c","version":"1","transport":{"type":"stdio"}},{"registryType":"npm","identifier":"h","version":"1","transport":{"type":"streamable-http","url":"http://localhost:3000/mcp"}}]}`,
		opt:    Options{LookPath: lookOnly()},
		errIs:  ErrNoRuntime,
		errSub: "install uvx (pypi package p); FreeCode does not run cargo packages (c)",
	}, {
		name:  "identifier that is a flag",
		json:  `{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"--eval=x","version":"1","transport":{"type":"stdio"}}]}`,
		errIs: ErrBadAnswer,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opt.LookPath == nil {
				tc.opt.LookPath = lookAll
			}
			got, err := Map(server(t, tc.json), tc.opt)
			if tc.errIs != nil || tc.errSub != "" {
				require.Error(t, err)
				if tc.errIs != nil {
					assert.ErrorIs(t, err, tc.errIs)
				}
				assert.Contains(t, err.Error(), tc.errSub)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestParseKeepsEveryField: every field of the schema decodes (a field
// dropped by a typo in a tag would be missed by the mapping).
func TestParseKeepsEveryField(t *testing.T) {
	raw := `{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.github.a/b","title":"T","description":"D","version":"1.0.0",
		"websiteUrl":"https://a.example","repository":{"url":"https://github.com/a/b","source":"github","id":"1","subfolder":"s"},
		"icons":[{"src":"https://a.example/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],
		"packages":[{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org","identifier":"p","version":"1","fileSha256":"` + "ab" + `","runtimeHint":"npx","transport":{"type":"stdio"},
			"runtimeArguments":[{"type":"named","name":"--x","value":"v","isRepeated":true,"valueHint":"h","description":"d","isRequired":true,"format":"string","isSecret":true,"default":"d","placeholder":"p","choices":["v"],"variables":{"a":{"default":"1"}}}],
			"packageArguments":[{"type":"positional","valueHint":"h"}],"environmentVariables":[{"name":"E","value":"v"}]}],
		"remotes":[{"type":"streamable-http","url":"https://r.example","headers":[{"name":"H","value":"v"}],"variables":{"x":{"default":"y"}}}],
		"_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"k":"v"}}}`
	e, err := Parse([]byte(raw))
	require.NoError(t, err)
	back, err := json.Marshal(e.Server)
	require.NoError(t, err)
	assert.JSONEq(t, raw, string(back))
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, e.Digest)
}

func TestParseRefuses(t *testing.T) {
	for _, raw := range []string{`[]`, `{"name":"noslash","version":"1"}`, `{"name":"a/b"}`, `{"name":"a/b/c","version":"1"}`, `{"name":"a/\u001b[2J","version":"1"}`} {
		_, err := Parse([]byte(raw))
		assert.True(t, errors.Is(err, ErrBadAnswer), "%s: %v", raw, err)
	}
}
