#!/usr/bin/env bash
# install-deb.sh PACKAGE LABEL installs the Debian package PACKAGE (LABEL
# names it in messages) with apt-get, for `make deps`' scripts that need a
# system program (install-haproxy.sh, install-postgresql.sh); each checks
# first whether it is there already.
#
# apt-get needs root: run as root, or as a user who may sudo without a
# password; otherwise it fails, naming the package to install.
set -euo pipefail

package=$1
label=$2
fail() {
	echo "make deps: $label is not installed, and $1." >&2
	echo "  Install the package $package yourself (Debian, Ubuntu: sudo apt-get install $package), then run make deps again." >&2
	exit 1
}
command -v apt-get >/dev/null 2>&1 || fail "there is no apt-get here to install it with"
if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=(sudo -n)
else
	fail "installing it (apt-get install $package) needs root or sudo without a password"
fi
echo "make deps: installing $package (apt-get install $package)"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$package"
