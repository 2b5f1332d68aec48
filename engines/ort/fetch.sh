#!/usr/bin/env bash
# engines/ort/fetch.sh — bring ONNX Runtime's CPU library into $ORT_OUT
# (build/engines/ort) exactly as the onnxruntime-node npm package ships it.
# Called by `make engines` (engines/ort/adapter.mk holds the pins).
#
#   lib/   libonnxruntime.so.1 of the package's linux x64 binaries (the
#          untouched file; nothing else: no headers ship, and the adapter
#          needs none)
#   dl/    the package tarball, kept while its sha256 matches the pin
#
# The tarball is checked against the pinned sha256 before anything is
# unpacked.  Nothing of ORT goes into the repository.
set -euo pipefail

: "${ORT_OUT:?}" "${ORT_NODE_VERSION:?}" "${ORT_SHA256:?}"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "engines: the ort adapter uses onnxruntime-node's linux x64 library;" \
         "this is $(uname -s)-$(uname -m): point ORT_DIR at your own ORT build" >&2
    exit 1
fi
command -v npm >/dev/null || bash .ci/deps.sh npm

tgz="onnxruntime-node-$ORT_NODE_VERSION.tgz"
mkdir -p "$ORT_OUT/dl"
ORT_OUT=$(cd "$ORT_OUT" && pwd)
dl="$ORT_OUT/dl"

# npm pack fetches the package's tarball as published (no install scripts
# run: the package's own install script would download more).
check() { [ -f "$dl/$tgz" ] && echo "$ORT_SHA256  $dl/$tgz" | sha256sum -c --status; }
if ! check; then
    rm -f "$dl/$tgz"
    (cd "$dl" && npm pack --silent "onnxruntime-node@$ORT_NODE_VERSION" >/dev/null)
fi
if ! check; then
    echo "engines: $dl/$tgz does not have the pinned sha256 $ORT_SHA256" >&2
    sha256sum "$dl/$tgz" >&2 || true
    exit 1
fi

# Only the shared library: the Node binding, the other platforms' files and
# the scripts stay in the tarball.
member="package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
rm -rf "$ORT_OUT/lib" "$ORT_OUT/tmp"
mkdir -p "$ORT_OUT/lib" "$ORT_OUT/tmp"
tar -xzf "$dl/$tgz" -C "$ORT_OUT/tmp" "$member"
mv "$ORT_OUT/tmp/$member" "$ORT_OUT/lib/"
rm -rf "$ORT_OUT/tmp"
echo "engines: ORT (onnxruntime-node $ORT_NODE_VERSION): $ORT_OUT/lib/libonnxruntime.so.1"
