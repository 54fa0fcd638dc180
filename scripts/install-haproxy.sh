#!/usr/bin/env bash
# Installs haproxy, the load balancer gateway/haproxy_test.go runs the
# gateway behind, from the system's packages (Debian's haproxy, 2.6 on
# bookworm) unless it is installed already. `make deps` runs it.
#
# install-deb.sh does the installing (apt-get, as root or with sudo -n). Debian puts
# the binary in /usr/sbin, off many users' PATH: it is looked for there too,
# as the test does. The package's service is not started in a container
# (policy-rc.d); elsewhere, Debian starts it with its default config, which
# serves nothing.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
	exit 0
fi
exec "$(dirname "$0")/install-deb.sh" haproxy haproxy
