#!/bin/sh
# emu_syms.sh RAW OUT — the object of an emulated table (mk/isa.mk,
# EMU_TABLES) with every symbol whose name holds "avx512" or "amx" renamed to
# <name>_emu, so that it links beside the native table's object.  The map is
# read off RAW itself (defined and referenced symbols alike), so the kernel
# files and the table files of one emulated table agree on every name
# without a list kept by hand.  RAW is removed once OUT is written.
set -eu
raw=$1 out=$2
nm "$raw" | awk '$NF ~ /avx512|amx/ { print $NF, $NF "_emu" }' | sort -u > "$out.map"
objcopy --redefine-syms="$out.map" "$raw" "$out"
rm -f "$raw" "$out.map"
