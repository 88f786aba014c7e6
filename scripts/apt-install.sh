#!/usr/bin/env bash
# Installs Debian packages for the test and build scripts without starting
# any system service: while apt-get runs, /usr/sbin/policy-rc.d exits 101
# ("action forbidden"), which invoke-rc.d and deb-systemd-invoke obey, so
# `postgresql`, `prometheus` and `prometheus-node-exporter` are installed but
# their daemons are not started. The policy file is created only when none
# exists, and removed afterwards only if this script created it.
#
# Usage: scripts/apt-install.sh PACKAGE...   (as root, or through sudo)
set -euo pipefail
say() { printf 'apt-install: %s\n' "$*" >&2; }
[ $# -gt 0 ] || { say "usage: $0 PACKAGE..."; exit 2; }

if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null; then
    sudo=(sudo)
else
    say "need root to run: apt-get install $*"; exit 1
fi

policy=/usr/sbin/policy-rc.d
created=0
if [ ! -e "$policy" ]; then
    "${sudo[@]}" sh -c "printf '#!/bin/sh\n# scripts/apt-install.sh: no service starts during its apt-get\nexit 101\n' >$policy && chmod 755 $policy"
    created=1
    trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
if [ "$created" = 1 ]; then
    say "apt-get install --no-install-recommends $* (no service starts: a temporary $policy exits 101)"
else
    say "apt-get install --no-install-recommends $* ($policy exists already and decides which services start)"
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
if [ "$created" = 1 ]; then
    "${sudo[@]}" rm -f "$policy"
    trap - EXIT
fi
