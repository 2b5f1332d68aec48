#!/usr/bin/env bash
# deps.sh [--check] PKG... — install the Debian packages the build needs when
# missing (`make deps`).  Installs with apt-get only when running as root;
# otherwise names the command to run and fails.  --check installs nothing:
# it names what is missing and fails (make test's first step), so a missing
# tool never shows up as a confusing compile error later.
set -euo pipefail
check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
missing=()
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "$# Debian packages present"
    exit 0
fi
if [ $check = 1 ]; then
    echo "attnguard: missing packages: ${missing[*]} (install them with: make deps)" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "attnguard: missing packages: ${missing[*]}" >&2
    echo "attnguard: install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "attnguard: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
