#!/usr/bin/env bash
# engines/ggml/fetch.sh — bring ggml's prebuilt CPU backends and its public
# headers into $GGML_OUT (build/engines/ggml), exactly as node-llama-cpp
# ships them.  Called by `make engines` (mk/engines.mk holds the pins).
#
#   lib/      libggml-base.so and every libggml-cpu-<variant>.so of the
#             @node-llama-cpp/linux-x64 package (untouched binaries)
#   include/  ggml.h ggml-cpu.h ggml-backend.h ggml-alloc.h, taken with git
#             from the llama.cpp bundle inside the node-llama-cpp package
#   src/      (GGML_SRC=1 only) ggml's sources from the same bundle, for
#             reading and triage; never compiled, never committed
#
# Both tarballs are checked against pinned sha256 sums before anything is
# unpacked, and the bundle's commit against the pinned commit.  Nothing of
# ggml goes into the repository.
set -euo pipefail

: "${GGML_OUT:?}" "${GGML_NLC_VERSION:?}" "${GGML_SHA256_BIN:?}" "${GGML_SHA256_SRC:?}"
: "${GGML_BUNDLE_COMMIT:?}"
HEADERS="ggml.h ggml-cpu.h ggml-backend.h ggml-alloc.h"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "engines: the ggml adapter uses node-llama-cpp's linux-x64 binaries;" \
         "this is $(uname -s)-$(uname -m): point GGML_DIR at your own ggml build" >&2
    exit 1
fi
command -v npm >/dev/null || bash .ci/deps.sh npm
command -v git >/dev/null || bash .ci/deps.sh git

bin_tgz="node-llama-cpp-linux-x64-$GGML_NLC_VERSION.tgz"
src_tgz="node-llama-cpp-$GGML_NLC_VERSION.tgz"
mkdir -p "$GGML_OUT"
GGML_OUT=$(cd "$GGML_OUT" && pwd)
dl="$GGML_OUT/dl"
mkdir -p "$dl"

# npm pack fetches a package's tarball as published (no install scripts run).
check() { [ -f "$dl/$2" ] && echo "$1  $dl/$2" | sha256sum -c --status; }
if ! check "$GGML_SHA256_BIN" "$bin_tgz" || ! check "$GGML_SHA256_SRC" "$src_tgz"; then
    rm -f "$dl/$bin_tgz" "$dl/$src_tgz"
    (cd "$dl" && npm pack --silent "@node-llama-cpp/linux-x64@$GGML_NLC_VERSION" \
        "node-llama-cpp@$GGML_NLC_VERSION" >/dev/null)
fi
for pair in "$GGML_SHA256_BIN:$bin_tgz" "$GGML_SHA256_SRC:$src_tgz"; do
    if ! check "${pair%%:*}" "${pair#*:}"; then
        echo "engines: $dl/${pair#*:} does not have the pinned sha256 ${pair%%:*}" >&2
        sha256sum "$dl/${pair#*:}" >&2 || true
        exit 1
    fi
done

# The CPU backends: only ggml's own libraries (not llama's, not the addon).
rm -rf "$GGML_OUT/lib" "$GGML_OUT/include" "$GGML_OUT/tmp"
mkdir -p "$GGML_OUT/lib" "$GGML_OUT/include" "$GGML_OUT/tmp"
tar -xzf "$dl/$bin_tgz" -C "$GGML_OUT/tmp" --wildcards \
    'package/bins/linux-x64/libggml-base.so' 'package/bins/linux-x64/libggml-cpu-*.so'
mv "$GGML_OUT"/tmp/package/bins/linux-x64/*.so "$GGML_OUT/lib/"

# The headers, from the git bundle of llama.cpp the package builds from.
tar -xzf "$dl/$src_tgz" -C "$GGML_OUT/tmp" package/llama/gitRelease.bundle
repo="$GGML_OUT/tmp/llama.git"
git init -q --bare "$repo"
git -C "$repo" fetch -q "$GGML_OUT/tmp/package/llama/gitRelease.bundle"
got=$(git -C "$repo" rev-parse FETCH_HEAD)
if [ "$got" != "$GGML_BUNDLE_COMMIT" ]; then
    echo "engines: the bundle's commit is $got, pinned $GGML_BUNDLE_COMMIT" >&2
    exit 1
fi
for h in $HEADERS; do
    git -C "$repo" show "FETCH_HEAD:ggml/include/$h" > "$GGML_OUT/include/$h"
done
if [ "${GGML_SRC:-0}" = 1 ]; then
    rm -rf "$GGML_OUT/src" && mkdir -p "$GGML_OUT/src"
    git -C "$repo" archive FETCH_HEAD ggml | tar -x -C "$GGML_OUT/src"
fi
rm -rf "$GGML_OUT/tmp"
echo "engines: ggml (node-llama-cpp $GGML_NLC_VERSION, llama.cpp ${GGML_BUNDLE_COMMIT:0:12}):" \
     "$(ls "$GGML_OUT/lib" | wc -l) libraries in $GGML_OUT/lib, headers in $GGML_OUT/include"
