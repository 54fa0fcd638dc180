#!/usr/bin/env bash
# Installs PostgreSQL, the database the MCP registry server of
# cmd/freecode/registry_e2e_test.go runs on, from the system's packages
# (Debian's postgresql, 15 on bookworm) unless initdb and postgres are
# there already. `make deps` runs it.
#
# apt-get needs root: run as root, or as a user who may sudo without a
# password; otherwise it fails, naming the package to install. Debian puts
# the binaries in /usr/lib/postgresql/<major>/bin, off PATH: they are
# looked for there too, as the test does. The test runs its own throwaway
# cluster (initdb in a temporary directory, a unix socket, no port); the
# package's own cluster and service are not used.
set -euo pipefail

if { command -v initdb && command -v postgres; } >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	exit 0
fi
fail() {
	echo "make deps: PostgreSQL is not installed, and $1." >&2
	echo "  Install the package postgresql yourself (Debian, Ubuntu: sudo apt-get install postgresql), then run make deps again." >&2
	exit 1
}
command -v apt-get >/dev/null 2>&1 || fail "there is no apt-get here to install it with"
if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=(sudo -n)
else
	fail "installing it (apt-get install postgresql) needs root or sudo without a password"
fi
echo "make deps: installing postgresql (apt-get install postgresql)"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends postgresql
