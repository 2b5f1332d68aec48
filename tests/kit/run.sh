#!/usr/bin/env bash
# tests/kit/run.sh — make test's `kit` step (make test-kit): the kit as a
# maintainer meets it.  Installs it into a temporary prefix (no fuzz
# targets: FUZZ=0), copies tests/kit/ out of the tree and builds its
# adapter there with pkg-config alone, checks that the .so leaves no `ag_`
# symbol undefined, loads it with the installed CLI over installed cases,
# has a build claiming the previous ABI version refused with both versions
# named, compiles the headers as C++17, runs the example engine's check
# (tests/kit/example.sh) on the same install, checks attnguard.pc's fuzzing
# flags, install-headers alone, DESTDIR staging and uninstall.  ABI (the version) and
# MAKE come from mk/install.mk.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
make=${MAKE:-make}
abi=${ABI:?ABI: the ABI version (mk/install.mk sets it)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnguard-kit-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "kit: FAILED: $*" >&2; exit 1; }

prefix=$tmp/prefix
"$make" -C "$root" --no-print-directory install PREFIX="$prefix" FUZZ=0 > "$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "make install PREFIX=$prefix FUZZ=0"; }

# The adapter's folder, away from the source tree; no include path but the
# kit's (the environment's own search paths cleared).
mkdir "$tmp/adapter"
cp "$root/tests/kit/kitmin.c" "$root/tests/kit/Makefile" "$tmp/adapter/"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset CPATH C_INCLUDE_PATH PKG_CONFIG_LIBDIR || true
cflags=$(pkg-config --cflags attnguard)
case " $cflags " in *"$root"*) fail "attnguard.pc's flags reach into the source tree: $cflags" ;; esac
[ "$(pkg-config --modversion attnguard)" = "$abi" ] || fail "attnguard.pc's Version is not ABI $abi"
(cd "$tmp/adapter" && "$make" --no-print-directory -s) > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "building the adapter from the installed kit"; }
so=$tmp/adapter/libag_kitmin.so

# The headers are C11 and C++17 clean (an adapter may be C++): every helper
# used once, warnings as errors.
cat > "$tmp/cxx.cc" <<'CXX'
#include <attnguard/engine.h>
int main() {
    size_t n = 0;
    uint8_t b[34] = {0};
    const double x[32] = {1.0};
    ag_block_quantize(b, x, AG_Q8_0);
    ag_dtype_encode(b, 0, AG_BF16, 1.5f);
    return ag_dtype_bytes(AG_Q8_0, 64, &n) + (ag_dtype_decode(b, 0, AG_BF16) == 1.5 ? 0 : 1) +
           (ag_refusal_parse(ag_refusal_name(AG_R_HEADS)) == AG_R_HEADS ? 0 : 1) +
           (ag_status_name(AG_OK)[0] == 'A' ? 0 : 1) + (ag_region_kind_name(AG_REGION_Q)[0] == 'q' ? 0 : 1) +
           (ag_variant_kind_name(AG_VARIANT_DEFAULT)[0] == 'd' ? 0 : 1) + (ag_dtype_is_fp8(AG_F16) ? 1 : 0);
}
CXX
"${CXX:-c++}" -std=c++17 -Wall -Wextra -Wshadow -pedantic -Werror $cflags "$tmp/cxx.cc" -o "$tmp/cxx" \
    $(pkg-config --libs attnguard) > "$tmp/cxx.log" 2>&1 || { cat "$tmp/cxx.log"; fail "the headers as C++17"; }
"$tmp/cxx" || fail "the header-only helpers, compiled as C++17, answer wrongly"

undef=$(nm -D --undefined-only "$so" | grep -E ' ag_' || true)
[ -z "$undef" ] || fail "the adapter leaves ABI helpers undefined: $undef"

# Cases that cover every kind of type the adapter decodes with the kit's
# codec (f32, bf16 and f16 q; f16, fp8 and block caches), GQA, ALiBi,
# soft cap, non-causal requests, and the refusals it must name; a second
# in all (the whole folder takes this naive adapter minutes).
cases="f32q-decode f32q-gqa f32q-alibi f32q-noncausal f32q-softcap-scale mixed-dtypes
       fp8-tiny-v-scale ggml-q4_1-kv ggml-q5_0-kv ggml-iq4_nl-kv bad-heads-refused
       mixed-heads-refused block-id-outside-refused q8_0-head-dim-refused bad-seq-len-refused"
files=()
for c in $cases; do files+=("$prefix/share/attnguard/cases/$c.case"); done
"$prefix/bin/attnguard" check --engine "$so" "${files[@]}" > "$tmp/check.log" 2>&1 ||
    { cat "$tmp/check.log"; fail "attnguard check with the out-of-tree adapter"; }
summary=$(grep -E '^[0-9]+ passed, ' "$tmp/check.log" | tail -n 1)
passed=${summary%% passed*}
[ "$passed" = "$(echo $cases | wc -w)" ] || { cat "$tmp/check.log"; fail "not every case passed: $summary"; }

# A build for another ABI version: refused, and the message says which.
old=$((abi - 1))
(cd "$tmp/adapter" && "$make" --no-print-directory -s OUT=libag_old.so ABI=$old) > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "building the ABI $old adapter"; }
if "$prefix/bin/attnguard" check --engine "$tmp/adapter/libag_old.so" "${files[0]}" > "$tmp/old.log" 2>&1; then
    fail "an adapter built for ABI $old was accepted"
fi
grep -q "built for adapter ABI version $old, this host speaks $abi" "$tmp/old.log" ||
    { cat "$tmp/old.log"; fail "the refusal does not name both versions"; }

# The example engine (examples/tinyattn/) on the same installed kit.
example=$(bash "$root/tests/kit/example.sh" "$prefix" "$tmp") || fail "the example engine (above)"

# How an engine is compiled for the kit's fuzz targets: libFuzzer's
# coverage without its runtime, and the targets' sanitizers.
case " $(pkg-config --variable=fuzz_cflags attnguard) " in
*" -fsanitize=fuzzer-no-link "*"-fsanitize=address"*) ;;
*) fail "attnguard.pc's fuzz_cflags lack libFuzzer's coverage or ASan: $(pkg-config --variable=fuzz_cflags attnguard)" ;;
esac
case " $(pkg-config --variable=fuzz_cflags_edges attnguard) " in
*" -fsanitize-coverage=inline-8bit-counters,pc-table "*"-fsanitize=address"*) ;;
*) fail "attnguard.pc's fuzz_cflags_edges: $(pkg-config --variable=fuzz_cflags_edges attnguard)" ;;
esac
[ -n "$(pkg-config --variable=fuzz_cc attnguard)" ] || fail "attnguard.pc names no fuzz_cc"

# install-headers: the headers and attnguard.pc alone (an engine's own
# fuzz build), enough to build the adapter.
"$make" -C "$root" --no-print-directory install-headers PREFIX="$tmp/headers" > "$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "make install-headers"; }
got=$(cd "$tmp/headers" && find . -type f | sort | tr '\n' ' ')
[ "$got" = "./include/attnguard/dtype.h ./include/attnguard/engine.h ./lib/pkgconfig/attnguard.pc ./share/attnguard/MANIFEST " ] ||
    fail "install-headers installed: $got"
(cd "$tmp/adapter" && PKG_CONFIG_PATH=$tmp/headers/lib/pkgconfig "$make" --no-print-directory -s \
    OUT=libag_headers.so) > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "building the adapter against install-headers' kit"; }

# DESTDIR stages under itself; the installed paths stay PREFIX's.
"$make" -C "$root" --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/opt/attnguard FUZZ=0 \
    > "$tmp/install.log" || { cat "$tmp/install.log"; fail "make install DESTDIR=..."; }
[ -x "$tmp/stage/opt/attnguard/bin/attnguard" ] || fail "DESTDIR: no bin/attnguard under the stage"
grep -qx 'prefix=/opt/attnguard' "$tmp/stage/opt/attnguard/lib/pkgconfig/attnguard.pc" ||
    fail "DESTDIR: attnguard.pc does not name PREFIX"

# uninstall takes every file it installed, and the kit's folders
n_installed=$(wc -l < "$prefix/share/attnguard/MANIFEST")
"$make" -C "$root" --no-print-directory uninstall PREFIX="$prefix" > "$tmp/uninstall.log"
left=$(find "$prefix" -type f | head -n 3)
[ -z "$left" ] || fail "uninstall left files: $left"
left=$(find "$prefix" -mindepth 1 -name '*attnguard*' | head -n 3)
[ -z "$left" ] || fail "uninstall left folders: $left"

echo "kit: $n_installed files installed; out-of-tree adapter (no ag_ symbol undefined) passed" \
     "$passed cases; ABI $old build refused; headers C++17-clean; DESTDIR, uninstall clean"
echo "kit: $example"
