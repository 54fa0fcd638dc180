#!/usr/bin/env bash
# Installs PostgreSQL, the database the MCP registry server of
# cmd/freecode/registry_e2e_test.go runs on, from the system's packages
# (Debian's postgresql, 15 on bookworm) unless initdb and postgres are
# there already. `make deps` runs it.
#
# install-deb.sh does the installing (apt-get, as root or with sudo -n). Debian puts
# the binaries in /usr/lib/postgresql/<major>/bin, off PATH: they are
# looked for there too, as the test does. The test runs its own throwaway
# cluster (initdb in a temporary directory, a unix socket, no port); the
# package's own cluster and service are not used.
set -euo pipefail

if { command -v initdb && command -v postgres; } >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	exit 0
fi
exec "$(dirname "$0")/install-deb.sh" postgresql PostgreSQL
