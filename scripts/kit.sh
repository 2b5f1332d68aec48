#!/usr/bin/env bash
# kit.sh — installs and uninstalls the attnguard kit (mk/install.mk runs
# it; docs/engines.md, "An adapter out of tree", says what a maintainer
# does with it).  Every file installed is listed, relative to PREFIX, in
# PREFIX/share/attnguard/MANIFEST, which uninstall reads: the one list.
#
#   kit.sh install   DESTDIR PREFIX CLI ABI FUZZ_DIR FUZZ_CC FUZZ_CFLAGS FUZZ_EDGES [TARGET...]
#   kit.sh headers   DESTDIR PREFIX ABI FUZZ_CC FUZZ_CFLAGS FUZZ_EDGES
#   kit.sh uninstall DESTDIR PREFIX
#
# `headers` installs what compiling an adapter needs and nothing else (the
# ABI's headers and attnguard.pc): an engine's own fuzz build, which builds
# attnguard's fuzz targets from source with its adapter linked in
# (examples/clusterfuzzlite/), needs neither the CLI nor installed targets.
#
# DESTDIR may be empty; the installed paths (attnguard.pc's prefix) are
# PREFIX's, the files land under DESTDIR/PREFIX.  TARGETs are libFuzzer
# binaries in FUZZ_DIR, installed with their .options and .dict and their
# seed corpus (corpus/<target>/).  FUZZ_CC, FUZZ_CFLAGS and FUZZ_EDGES are
# how an engine is compiled to be loaded into them with its own coverage
# counted (attnguard.pc's fuzz_cc, fuzz_cflags, and fuzz_cflags_edges for
# its kernels).
set -euo pipefail

die() { echo "kit: $*" >&2; exit 1; }

cmd=${1:-}
case "$cmd" in install | headers | uninstall) ;; *) die "usage: kit.sh install|headers|uninstall DESTDIR PREFIX ..." ;; esac
destdir=$2
prefix=$3
case "$prefix" in /*) ;; *) die "PREFIX must be an absolute path (got '$prefix')" ;; esac
root=$destdir$prefix
manifest_rel=share/attnguard/MANIFEST
manifest=$root/$manifest_rel

if [ "$cmd" = uninstall ]; then
    [ -f "$manifest" ] || die "no kit installed under $root ($manifest_rel missing)"
    n=0
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        rm -f "$root/$f" && n=$((n + 1))
    done < "$manifest"
    rm -f "$manifest"
    # the folders the kit owns, deepest first, when nothing else is left there
    for d in $(cd "$root" && find include/attnguard share/attnguard share/doc/attnguard \
                   libexec/attnguard -depth -type d 2>/dev/null); do
        rmdir "$root/$d" 2>/dev/null || true
    done
    echo "uninstall: $n files removed from $root"
    exit 0
fi

if [ "$cmd" = headers ]; then
    cli=
    abi=$4
    fuzz_dir=
    fuzz_cc=$5
    fuzz_cflags=$6
    fuzz_edges=$7
    shift 7
else
    cli=$4
    abi=$5
    fuzz_dir=$6
    fuzz_cc=$7
    fuzz_cflags=$8
    fuzz_edges=$9
    shift 9
    [ -x "$cli" ] || die "no CLI at $cli"
fi
[ -n "$abi" ] || die "no ABI version"
src=$(cd "$(dirname "$0")/.." && pwd)
listing=$(mktemp)
trap 'rm -f "$listing"' EXIT

# put MODE DIR FILE...: FILE into PREFIX/DIR, listed
put() {
    local mode=$1 dir=$2
    shift 2
    install -d "$root/$dir"
    for f in "$@"; do
        install -m "$mode" "$f" "$root/$dir/"
        echo "$dir/${f##*/}" >> "$listing"
    done
}

[ -z "$cli" ] || put 755 bin "$cli"
put 644 include/attnguard "$src"/include/attnguard/*.h
if [ "$cmd" = install ]; then
    put 644 share/attnguard/cases "$src"/corpus/cases/*.case
    put 644 share/doc/attnguard "$src"/docs/engines.md "$src"/docs/case-format.md \
        "$src"/docs/fuzzing.md "$src"/docs/adding-a-dtype.md
fi

# pkg-config: the kit is header-only; its version is the ABI's
install -d "$root/lib/pkgconfig"
cat > "$root/lib/pkgconfig/attnguard.pc" <<EOF
prefix=$prefix
includedir=\${prefix}/include
datadir=\${prefix}/share/attnguard
casesdir=\${datadir}/cases
corpusdir=\${datadir}/corpus
fuzzdir=\${prefix}/libexec/attnguard/fuzz
cli=\${prefix}/bin/attnguard
abi_version=$abi
fuzz_cc=$fuzz_cc
fuzz_cflags=$fuzz_cflags
fuzz_cflags_edges=$fuzz_edges

Name: attnguard
Description: attnguard's adapter ABI (header-only): build an engine's adapter, load it with the attnguard CLI and fuzz targets
Version: $abi
Cflags: -I\${includedir}
Libs: -lm
EOF
echo lib/pkgconfig/attnguard.pc >> "$listing"

for t in "$@"; do
    [ -x "$fuzz_dir/$t" ] || die "no fuzz target $fuzz_dir/$t (make fuzz-build)"
    put 755 libexec/attnguard/fuzz "$fuzz_dir/$t"
    for x in options dict; do
        [ -f "$fuzz_dir/$t.$x" ] && put 644 libexec/attnguard/fuzz "$fuzz_dir/$t.$x"
    done
    seeds=("$src"/corpus/"$t"/*)
    [ -e "${seeds[0]}" ] && put 644 "share/attnguard/corpus/$t" "${seeds[@]}"
done

# the manifest: this install's files and any earlier install's still
# listed (an install without the fuzz targets over one with them keeps
# them uninstallable)
[ -f "$manifest" ] && cat "$manifest" >> "$listing"
echo "$manifest_rel" >> "$listing"
install -d "$(dirname "$manifest")"
sort -u "$listing" > "$manifest"
echo "$cmd: $(wc -l < "$manifest") files under $root (ABI $abi$([ $# -gt 0 ] && echo "; fuzz targets: $*"))"
