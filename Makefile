# FreeCode MCP. `make demo` runs the host on the bundled test server; `make test`
# installs what the tests need (pinned) and runs every check.

GO          ?= go
TOOLS       := $(CURDIR)/.cache/bin
CUE         := $(TOOLS)/cue
STATICCHECK := $(TOOLS)/staticcheck
NPM_DIR     := testdata/npm
NPM_STAMP   := $(NPM_DIR)/node_modules/.installed
CUE_VERSION := v0.17.1
STATICCHECK_VERSION := v0.8.2
# The MCP registry server the registry e2e test runs. v1.5.0 is the newest
# whose dependencies the Go module proxy serves (v1.7+ need huma v2.37.3+).
MCP_REGISTRY_VERSION := v1.5.0
MCP_REGISTRY := $(CURDIR)/.cache/mcpreg/registry

.PHONY: all build install uninstall test deps haproxy postgresql lint fmt-check vet staticcheck cue-vet go-test conformance conformance-server demo bench clean FORCE

all: build

build: bin/freecode bin/fc-reaper bin/mcp-testserver

# VERSION is what `freecode --version` says: git describe of the checkout when
# there is one; without it the binary reports Go's build information.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

bin/freecode: FORCE
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/freecode

# The reaper each local server runs under: freecode runs it from beside its own
# executable (and runs itself as the reaper when it is missing, at a higher cost).
bin/fc-reaper: FORCE
	$(GO) build -trimpath -o $@ ./cmd/fc-reaper

## install: bin/freecode and its reaper helper bin/fc-reaper, built as above, into
## $(PREFIX)/bin (default ~/.local/bin; `make install PREFIX=/usr/local` as root).
## DESTDIR stages them.
PREFIX ?= $(HOME)/.local
BINDIR := $(DESTDIR)$(PREFIX)/bin

install: bin/freecode bin/fc-reaper
	install -d '$(BINDIR)'
	install -m 0755 bin/fc-reaper '$(BINDIR)/fc-reaper'
	install -m 0755 bin/freecode '$(BINDIR)/freecode'
	@echo "installed $(BINDIR)/freecode: $$('$(BINDIR)/freecode' --version)"
	@case ":$$PATH:" in \
	*':$(PREFIX)/bin:'*) ;; \
	*) echo "$(PREFIX)/bin is not on your PATH; add it, e.g. to ~/.bashrc or ~/.zshrc:"; \
	   echo '  export PATH="$(PREFIX)/bin:$$PATH"' ;; \
	esac

uninstall:
	rm -f '$(BINDIR)/freecode' '$(BINDIR)/fc-reaper'

bin/mcp-testserver: FORCE
	$(GO) build -o $@ ./cmd/mcp-testserver

## deps: pinned tools, the real MCP servers from npm (testdata/npm/package-lock.json)
## haproxy (the system's package) for the gateway's load balancer test, and
## the MCP registry server with PostgreSQL (the system's) for the registry e2e test
deps: $(NPM_STAMP) $(CUE) $(STATICCHECK) haproxy postgresql $(MCP_REGISTRY)

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(CUE):
	GOBIN=$(TOOLS) $(GO) install cuelang.org/go/cmd/cue@$(CUE_VERSION)

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## haproxy: installs the package haproxy with apt-get when it is missing (as root,
## or with sudo -n); fails naming the package when it cannot
haproxy:
	@scripts/install-haproxy.sh

## postgresql: installs the package postgresql with apt-get when it is missing,
## as haproxy does
postgresql:
	@scripts/install-postgresql.sh

$(MCP_REGISTRY):
	GOBIN=$(dir $(MCP_REGISTRY)) $(GO) install github.com/modelcontextprotocol/registry/cmd/registry@$(MCP_REGISTRY_VERSION)

## test: every check CI runs
test: deps lint cue-vet go-test conformance conformance-server

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

## cue-vet: config.cue accepts every example and rejects the bad ones
cue-vet: $(CUE)
	@for f in examples/*.json; do \
		$(CUE) vet -d '#Config' config.cue $$f || { echo "FAIL: $$f should be valid"; exit 1; }; \
		echo "cue vet ok: $$f"; \
	done
	@for f in examples/bad/*.json; do \
		if $(CUE) vet -d '#Config' config.cue $$f >/dev/null 2>&1; then echo "FAIL: $$f should be rejected"; exit 1; fi; \
		echo "cue vet rejects (as expected): $$f"; \
	done

go-test: $(NPM_STAMP)
	$(GO) test -race -count=1 -timeout 15m ./...

## conformance: the official MCP conformance suite (pinned, Node 22 from testdata/npm)
## judges cmd/conformance-client: every client scenario of 0.1.16 (expected failures
## with their reasons in scripts/conformance.sh), then the 2025-11-25 and 2026-07-28
## requirement sets of 0.2.0-alpha.12 with the extension scenarios (expected failures
## with their reasons in testdata/conformance/client-expected.yaml); any other failure fails
conformance: $(NPM_STAMP)
	GO=$(GO) scripts/conformance.sh
	GO=$(GO) scripts/conformance-requirements.sh

## conformance-server: the suite's server scenarios required by 2026-07-28 (conformance-next,
## pinned) against mcp-testserver --conformance and against `freecode mcp serve --server` in
## front of it; expected failures and their reasons are in scripts/conformance-server.sh
conformance-server: $(NPM_STAMP)
	GO=$(GO) scripts/conformance-server.sh

## demo: start serve in a throwaway home, edit its config, watch it converge
## (offline once the Go modules are in the module cache); KEEP=1 keeps the home
KEEP ?=
demo:
	KEEP=$(KEEP) GO=$(GO) VERSION='$(VERSION)' ./scripts/demo.sh

## bench: whole-system benchmarks against raw mcp-go (a few minutes); prints the
## table and rewrites BENCHMARKS.md. Shorter: make bench BENCH_FLAGS='-idle 10s'
## Only some scenarios, printed: make bench BENCH_FLAGS='-only reconnect,auth -out ""'
BENCH_FLAGS ?=
bench: bin/freecode bin/fc-reaper bin/mcp-testserver
	$(GO) run ./cmd/freecode-bench -go '$(GO)' -testserver bin/mcp-testserver -freecode bin/freecode -reaper bin/fc-reaper -out BENCHMARKS.md $(BENCH_FLAGS)

clean:
	rm -rf bin .cache

FORCE:
