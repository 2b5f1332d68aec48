# mk/bench.mk — `make bench`: the standalone benchmark (bench/bench.c).
#
#   make bench        build $(B)/bench and run it; writes reports/bench.md
#                     and reports/bench.json (limits measured in the same run)
#   (no bench-peer yet: this machine's python3 has no torch, so a PyTorch
#   side-by-side could not be written or checked here)
#
# Only bench.c (the measurement loops: FMA/VDPBF16PS chains, the bandwidth
# sweep) is built with -O3 -march=native; the engine is the ordinary
# $(LIB) of this configuration, so the numbers are those users get.

BENCH_BIN := $(B)/bench
BENCH_CFLAGS := -std=c11 -D_GNU_SOURCE -O3 -march=native -g $(WARN) -fopenmp $(EXTRA_CFLAGS)

$(BENCH_BIN): bench/bench.c src/attn.h $(LIB)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench.c $(LIB) $(LDLIBS_ALL)

.PHONY: bench
bench: $(BENCH_BIN)
	@mkdir -p reports
	$(BENCH_BIN) reports
