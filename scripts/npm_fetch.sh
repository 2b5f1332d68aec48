#!/usr/bin/env bash
# npm_fetch.sh NAME VERSION SHA256 DEST — bring one npm package, as
# published, into DEST (the package's files directly under DEST).  `npm
# pack` fetches the tarball alone: no dependencies, no install scripts.  The
# tarball's sha256 must match the pin before anything is unpacked; it is
# kept in DEST/../dl so that a second fetch costs nothing.  Installs
# Debian's npm when there is none (.ci/deps.sh says so first).
set -euo pipefail
if [ $# -ne 4 ]; then
    echo "usage: npm_fetch.sh NAME VERSION SHA256 DEST" >&2
    exit 2
fi
name=$1 version=$2 sha=$3 dest=$4
command -v npm >/dev/null || bash "$(dirname "$0")/../.ci/deps.sh" npm
command -v npm >/dev/null || { echo "npm_fetch: no npm after installing it" >&2; exit 1; }

# npm pack names a scoped package's tarball @scope/n -> scope-n-VERSION.tgz
tgz="$(echo "${name#@}" | tr / -)-$version.tgz"
dl="$(dirname "$dest")/dl"
mkdir -p "$dl"
check() { [ -f "$dl/$tgz" ] && echo "$sha  $dl/$tgz" | sha256sum -c --status 2>/dev/null; }
if ! check; then
    rm -f "$dl/$tgz"
    echo "npm_fetch: $name@$version from the npm registry"
    (cd "$dl" && npm pack --silent "$name@$version" >/dev/null)
fi
if ! check; then
    echo "npm_fetch: $dl/$tgz does not have the pinned sha256 $sha" >&2
    sha256sum "$dl/$tgz" >&2 || true
    exit 1
fi
rm -rf "$dest" "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xzf "$dl/$tgz" -C "$dest.tmp"
mv "$dest.tmp/package" "$dest"
rm -rf "$dest.tmp"
echo "npm_fetch: $name@$version in $dest"
