# mk/bench.mk — `make bench`: the standalone benchmark (bench/, entry point
# bench/main_bench.c; its files' layers: main_ > run_ > report_ > util_).
#
#   make bench        build $(B)/bin/bench and run it: the machine's limits and
#                     each row's ceiling, then attnguard on every row against
#                     them; writes build/bench/bench.md and build/bench/bench.json
#                     (and on an AVX-512 CPU the AVX2 table's in build/bench/avx2/;
#                     make snapshot copies the .md files into reports/snapshot/)
#   make bench-peer   the first engine of BENCH_ENGINES (ENGINES=..., default every
#                     engine built in: attnguard, then ggml, ort and vllm once
#                     fetched) in its default variant, and held to AVX2, against
#                     every other in each configuration it offers here (layouts,
#                     precisions, tunings, each with the default kernels and the next
#                     BENCH_PEER_KERNELS - 1: 2 by default, "all", or by name:
#                     "cpu=haswell,cpu=alderlake" adds those to the default's; a
#                     choice of BENCH_PEER_ISA's words, default isa=avx2,cpu=haswell,
#                     always) and PyTorch in each formulation of bench/peer_forms.py
#                     (BENCH_TORCH=0 leaves it out), on the same rows, interleaved
#                     round by round in one run, each output checked against the
#                     fp64 reference first; a peer's configuration that cannot be its
#                     fastest is dropped after BENCH_PEER_RACE's rounds (default
#                     "2,1.25": 2 rounds, each 1.25x its engine's fastest; "0" times
#                     all to the end); on 2 threads each timed run follows a pause of
#                     BENCH_PEER_SETTLE_MS (5; other engines' workers stop spinning)
#                     and an untimed run of its own.  Per row: attnguard's default against each
#                     peer at its best and against each peer's default, and held to
#                     AVX2 against the peers held to it:
#                     build/bench/bench-peer.{md,json} (make snapshot copies the .md)
#   make probe        build $(B)/bin/probe and run it: the CPU facts the AVX-512
#                     kernels were shaped around (bench/main_probe.c;
#                     docs/perf-notes.md quotes its output; "not measured"
#                     on a CPU without AVX-512)
#   make test-peer    (run by .ci/run) bench/peer.py --selftest: every PyTorch
#                     formulation (GQA folding, blocks, causal offsets, window
#                     masks, f32 compute) against a float64 loop, so the
#                     side-by-side compares the same attention
#
# PyTorch runs in PEER_PY: build/engines/vllm/venv/bin/python (torch 2.13
# from PyPI) once make engines ENGINE=vllm installed it, else /usr/bin/python3
# with Debian's python3-torch, as a child process of the bench
# that times its formulations when the rounds reach it.  run_rows.c's
# narrowing variables (BENCH_ONLY, BENCH_THREADS, BENCH_DTYPE, BENCH_HKV)
# narrow the rows of every engine and PyTorch alike.
#
# Only bench/ (the measurement loops: FMA/VDPBF16PS chains, the bandwidth
# sweep; the rows' timing) is built with -O3 -march=native; the engines and
# the harness that drives them through the adapter ABI are the ordinary
# $(HARLIB) and $(LIB) of this configuration, so the numbers are those users
# get.

BENCH_BIN := $(B)/bin/bench
BENCH_SRC := $(filter-out bench/main_probe.c,$(wildcard bench/*.c))
BENCH_CFLAGS := -std=c11 -D_GNU_SOURCE -O3 -march=native -g $(WARN) -fopenmp $(EXTRA_CFLAGS)
BENCH_ENGINES ?= $(or $(ENGINES),$(ENGINES_BUILTIN))

$(BENCH_BIN): $(BENCH_SRC) $(wildcard bench/*.h) $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(call quiet,CCLD,$(CC) $(BENCH_CFLAGS) -o $@ $(BENCH_SRC) $(HARLIB) $(LIB) $(LDLIBS_ALL),$@)

PROBE_BIN := $(B)/bin/probe

$(PROBE_BIN): bench/main_probe.c
	@mkdir -p $(@D)
	$(call quiet,CCLD,$(CC) $(BENCH_CFLAGS) -o $@ bench/main_probe.c,$@)

# `make all` (and so `make test`) compiles the benchmark and the probes too,
# so that CI sees them build, on any x86-64 compiler target: their
# measurement loops carry their own target attributes (AVX-512 and AVX2 +
# FMA, chosen at run time: bench/util_limits_simd.h; the probes' AVX-512 asm).
ifneq ($(filter x86_64 amd64,$(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))),)
all: $(BENCH_BIN) $(PROBE_BIN)
endif

.PHONY: bench probe
BENCH_OUT := build/bench
# On a CPU with AVX-512, the AVX2 table as well (ATTN_ISA=avx2), against the
# AVX2 loops, into $(BENCH_OUT)/avx2/: README's speed table shows the
# machine's default table beside it.  BENCH_AVX2=0: the default table only.
BENCH_AVX2 ?= 1
bench: $(BENCH_BIN)
	@mkdir -p $(BENCH_OUT)
	$(BENCH_BIN) $(BENCH_OUT)
	@if [ "$(BENCH_AVX2)" = 1 ] && grep -qw avx512f /proc/cpuinfo; then \
	    mkdir -p $(BENCH_OUT)/avx2 && echo "bench: the AVX2 table (ATTN_ISA=avx2)" && \
	    ATTN_ISA=avx2 $(BENCH_BIN) $(BENCH_OUT)/avx2; fi

probe: $(PROBE_BIN)
	$(PROBE_BIN) all

# PyTorch at its newest here: the vLLM venv's (torch 2.13 from PyPI) once
# make engines ENGINE=vllm installed it, else Debian's (1.13)
VLLM_PY := build/engines/vllm/venv/bin/python
PEER_PY ?= $(if $(wildcard $(VLLM_PY)),$(VLLM_PY),/usr/bin/python3)
# installed on first use by test-peer (so bench-peer too), or by
# `make deps WITH=peer`
DEPS_peer := python3-torch
DEPS_FOR_peer := the peer comparison: PyTorch

.PHONY: bench-peer test-peer
test-peer:
	@bash .ci/deps.sh --quiet --for '$(DEPS_FOR_peer)' $(DEPS_peer)
	$(PEER_PY) bench/peer.py --selftest

BENCH_TORCH ?= 1
BENCH_TORCH_CMD := $(if $(filter 1,$(BENCH_TORCH)),$(PEER_PY) bench/peer.py --serve)

bench-peer: $(BENCH_BIN) $(if $(BENCH_TORCH_CMD),test-peer)
	@mkdir -p $(BENCH_OUT)
	$(BENCH_BIN) --peer --engines $(BENCH_ENGINES) $(if $(BENCH_TORCH_CMD),--torch \
	    '$(BENCH_TORCH_CMD)') $(BENCH_OUT)
