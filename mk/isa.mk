# mk/isa.mk — the kernel tables, defined once.  The only build file that
# names an ISA: the Makefile, mk/fuzz.mk and mk/coverage.mk read these and
# nothing else of the tables.
#
#   ISA_SRC          every file of every SIMD table built (kernels and table files)
#   ISA_OFF_SRC      the files of the tables left out (ISA_TABLES below), which
#                    the build must not compile
#   isa_flags_of     $(call isa_flags_of,<path>): the -m flags of an ISA file
#                    (empty for a table file, which is portable C, and for
#                    every other file)
#   ISA_DEFINES      -DATTN_HAVE_<T>=1 for each table, -DATTN_HAVE_TABLES=<count>
#   EMU_TABLES       the emulated tables the main build compiles (below)
#   EMU_ALL          every emulated table SIMDe can build here
#   emu_objs         $(call emu_objs,<obj dir>,<files>): emulated objects under a
#                    build's object folder, for the builds that link the library
#
# A table T is: $(T_SRC), its kernels, compiled with $(T_FLAGS), and its
# table file src/kernels/table_T.c (the attn_kernels table, the routers that
# pick a tile per item, the CPU check), compiled without -m flags so that
# the check can run on any CPU.  The portable table (src/kernels/ref.c,
# table_ref.c) is not listed: it is always built, like the rest of src/.
# Adding a table: docs/adding-an-isa.md.
#
# Included by the Makefile's ISA section (it needs $(B)); the guard keeps the
# Makefile's closing include of mk/*.mk from reading it twice.
ifndef ISA_MK_INCLUDED
ISA_MK_INCLUDED := 1

KERNEL_TABLES := avx2 avx512 avx512bf16 amx

avx2_SRC := src/kernels/avx2.c src/kernels/avx2_decode.c
avx2_FLAGS := -mavx2 -mfma -mf16c
avx512_SRC := src/kernels/avx512.c src/kernels/avx512_decode.c src/kernels/avx512_lanes.c
avx512_FLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
# extends the avx512 table (its routers, decode and flash tiles): needs it
avx512bf16_SRC := src/kernels/avx512bf16.c src/kernels/avx512bf16_lanes.c \
                  src/kernels/avx512bf16_dec8.c
avx512bf16_FLAGS := $(avx512_FLAGS) -mavx512bf16 -mavx512vbmi
# extends the avx512bf16 table (bf16 prefill on AMX tiles): needs it
amx_SRC := src/kernels/amx.c
amx_FLAGS := $(avx512bf16_FLAGS) -mamx-tile -mamx-bf16

# The tables this build compiles: all of them, unless a build leaves some
# out (make B=build/v-only-avx2 ISA_TABLES=avx2: how the tests' "not
# compiled" paths are exercised; use a build folder of its own).
ISA_TABLES ?= $(KERNEL_TABLES)

# The tables this CPU can run (from /proc/cpuinfo's flags; empty elsewhere,
# where a build that asks for them gets the portable table only).  make
# test-asan builds only these: a sanitized build of kernels the machine
# never runs checks nothing, and the AVX-512 ones are its slowest files.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
cpu_has = $(if $(strip $(foreach f,$1,$(if $(filter $f,$(CPU_FLAGS)),,x))),,1)
NATIVE_TABLES := $(strip $(if $(call cpu_has,avx2 fma f16c),avx2) \
    $(if $(call cpu_has,avx512f avx512bw avx512vl avx512dq fma f16c),avx512) \
    $(if $(call cpu_has,avx512f avx512bw avx512vl avx512dq avx512_bf16 avx512vbmi),avx512bf16) \
    $(if $(call cpu_has,avx512f avx512bw avx512vl avx512dq avx512_bf16 avx512vbmi amx_tile amx_bf16),amx))

# ---- the emulated tables: avx512@emu, avx512bf16@emu, amx@emu ----
# The AVX-512 tables compiled a second time, from the same files, against
# SIMDe (Debian's libsimde-dev, header-only) on the host's AVX2, FMA and
# F16C: src/kernels/avx512_emu.h replaces <immintrin.h> under ATTN_EMU and
# keeps the hardware's semantics where the judges see a difference.  Every
# symbol of those objects that names avx512 gets the suffix _emu
# (attn__kernels_avx512 -> attn__kernels_avx512_emu), so they link beside
# the native tables; the table file names itself "<T>@emu" and checks the
# host for AVX2.  The dispatcher never picks one by itself, only by name
# (src/dispatch.c).  Without SIMDe's header they are left out (make deps
# installs it).
#
# Which builds have them.  Where the CPU lacks a table its twin is the only
# way a test reaches those kernels, so every build compiles the twins of
# the tables this CPU cannot run.  Where the CPU runs a table natively its
# twin's job is to agree with it bit for bit; the builds that hold twins to
# that are make test-asan's (EMU_TABLES=$(EMU_ALL) in the Makefile's
# ASAN_MAKE) and every fuzzing build (FUZZ_EMU_TABLES), so the main gcc
# build leaves those twins out: on an AMX host they were 60 % of its engine
# suite's time, 97 s against 39 (docs/perf-notes.md, "CI's budget").
# EMU_TABLES=<tables> (or empty) chooses.
SIMDE_HEADER := /usr/include/simde/x86/avx512.h
EMU_ABLE := avx512 avx512bf16 amx
EMU_ALL := $(if $(wildcard $(SIMDE_HEADER)),$(EMU_ABLE))
EMU_TABLES ?= $(filter-out $(NATIVE_TABLES),$(EMU_ALL))
emu_tables_of = $(foreach t,$1,$(t)_emu)
# -O1 -g1 (after the build's own -O2 -g, so they win): SIMDe's inline
# layers took gcc 82 s for avx512_decode.c at -O2 -g and 31 s at -O1 -g1,
# compiled in every build folder; the same IEEE results at either level
# (no -ffast-math anywhere), line tables kept for stack traces.
EMU_FLAGS := $(avx2_FLAGS) -DATTN_EMU=1 -Wno-psabi -O1 -g1
# $(call emu_src_of,<tables>): their files; $(call emu_objs,<obj dir>,<files>)
emu_src_of = $(foreach t,$1,$($t_SRC) src/kernels/table_$t.c)
EMU_SRC := $(call emu_src_of,$(EMU_TABLES))
emu_objs = $(2:%.c=$1/emu/%.o)
# $(call emu_rule,<obj dir>,<name of the variable holding the compiler and
# flags>,<flags file>): compile an emulated object, then rename its symbols
# (scripts/emu_syms.sh).  A variable's name, not its value: sanitizer flags
# hold commas, which would split the call's arguments.
define emu_rule
$1/emu/%.o: %.c $3 mk/isa.mk
	@mkdir -p $$(@D)
	$$(call quiet,CC,$$($2) $$(EMU_FLAGS) -MMD -MP -MT $$@ -MF $$(@:.o=.d) -DATTN_KERNEL_SIDE=1 -c $$< -o $$@.raw && \
	  sh scripts/emu_syms.sh $$@.raw $$@,$$<  [emu])
endef

isa_files = $($1_SRC) src/kernels/table_$1.c
ISA_SRC := $(foreach t,$(ISA_TABLES),$(call isa_files,$t))
ISA_OFF_SRC := $(foreach t,$(filter-out $(ISA_TABLES),$(KERNEL_TABLES)),$(call isa_files,$t))
isa_flags_of = $(strip $(foreach t,$(KERNEL_TABLES),$(if $(filter $1,$($t_SRC)),$($t_FLAGS))))
# $(call isa_defines_of,<tables>): the defines of a build with those tables
# (<tables> may hold emulated ones: avx512_emu)
isa_defines_of = $(foreach t,$(shell echo '$1' | tr a-z A-Z),-DATTN_HAVE_$t=1) \
                 -DATTN_HAVE_TABLES=$(words $1)
ISA_DEFINES := $(call isa_defines_of,$(ISA_TABLES) $(call emu_tables_of,$(EMU_TABLES)))

# The SIMD kernels keep AddressSanitizer (the out-of-bounds writes the harness
# hunts) but not UBSan: on these intrinsic-heavy files clang 14's combined
# ASan+UBSan instrumentation takes 2-5 minutes per file (measured: 279 s for
# the avx512 kernels with fuzzer coverage, 17 s without UBSan), and UBSan's
# checks add nothing on vector code that has no integer overflow or shifts
# of note.  The portable twins and the table files stay fully checked.
ISA_NOUBSAN := $(if $(findstring undefined,$(SANITIZER)),-fno-sanitize=undefined$(comma)float-divide-by-zero)

# Per object of the main build: an ISA file's -m flags, and for every file
# under src/kernels/ ATTN_KERNEL_SIDE, with which src/internal.h (the plan's
# side) refuses to be included: kernels see only their arguments.
$(foreach f,$(ISA_SRC),$(if $(call isa_flags_of,$f),$(eval $(B)/obj/$(f:.c=.o): ISA_FLAGS := $(call isa_flags_of,$f) $(ISA_NOUBSAN))))
$(foreach f,$(filter-out $(ISA_OFF_SRC),$(wildcard src/kernels/*.c)),$(eval $(B)/obj/$(f:.c=.o): ISA_FLAGS += -DATTN_KERNEL_SIDE=1))

endif
