#!/usr/bin/env bash
# Installs haproxy, the load balancer gateway/haproxy_test.go runs the
# gateway behind, from the system's packages (Debian's haproxy, 2.6 on
# bookworm) unless it is installed already. `make deps` runs it.
#
# apt-get needs root: run as root, or as a user who may sudo without a
# password; otherwise it fails, naming the package to install. Debian puts
# the binary in /usr/sbin, off many users' PATH: it is looked for there too,
# as the test does. The package's service is not started in a container
# (policy-rc.d); elsewhere, Debian starts it with its default config, which
# serves nothing.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
	exit 0
fi
fail() {
	echo "make deps: haproxy is not installed, and $1." >&2
	echo "  Install the package haproxy yourself (Debian, Ubuntu: sudo apt-get install haproxy), then run make deps again." >&2
	exit 1
}
command -v apt-get >/dev/null 2>&1 || fail "there is no apt-get here to install it with"
if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=(sudo -n)
else
	fail "installing it (apt-get install haproxy) needs root or sudo without a password"
fi
echo "make deps: installing haproxy (apt-get install haproxy)"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends haproxy
