#!/usr/bin/env bash
# Records the tool lists of real MCP servers from npm (pinned versions, dummy
# credentials) into testdata/toolcatalogs/, the data the tool_search benchmark
# reads. Needs npx and the npm registry; tests never run it.
# Usage: scripts/record-tool-catalogs.sh [-only github,slack] [-j 3]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p testdata/toolcatalogs
exec go run ./internal/toolcatalog/cmd/record-tool-catalogs -out testdata/toolcatalogs "$@"
