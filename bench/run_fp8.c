/*
 * bench/run_fp8.c — `make bench`'s fp8 rounds (run_fp8.h): fp8 decode
 * beside bf16 and a plain read of the fp8 layout, in the same rounds.
 * Information beside the fp8 rows' verdicts (those are judged like every
 * decode row, against their ceiling: run_ceiling.c).  Their report is
 * report_bench.c's.
 *
 * The cold B=8 rows of the bf16, e4m3 and e5m2 caches run in FP8_ROUNDS
 * rounds, the order rotating each round, so that the machine's bandwidth
 * phases fall on all three alike; each round also walks the fp8 cache's
 * layout with loads only (limits_walk).  Per fp8 row: the plain walk's
 * median time over the row's median (% of the read in the same rounds),
 * and bf16's median over the row's (the rate ratio of issue 25, 1.8x
 * wished).
 */
#include "run_fp8.h"
#include "run_rows.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double median3(const double *x) {
    const double a = x[0], b = x[1], c = x[2];
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

void bench_fp8_rounds(const engine_host *const *E, const bench_limits *L, fp8_cmp *out) {
    /* the fp8 row's K and V: B=8 x 4096 keys x Hkv 8 x D 128, one byte each */
    const double fp8_bytes = 2.0 * 8 * 4096 * 8 * 128;
    static const row_spec bf = {"decode8", ROW_DECODE, 8, AG_BF16, 8, 16, 1};
    static const row_spec e4 = {"fp8", ROW_DECODE, 8, AG_FP8_E4M3, 8, 16, 1};
    static const row_spec e5 = {"fp8", ROW_DECODE, 8, AG_FP8_E5M2, 8, 16, 1};
    const row_spec *rs[3] = {&bf, &e4, &e5};
    const row_config cfg = {E[0], NULL, ""};
    for (int t = 1; t <= bench_threads_max(); t++) {
        fp8_cmp *c = &out[t - 1];
        memset(c, 0, sizeof *c);
        c->threads = t;
        c->ran = 1;
        for (int k = 0; k < FP8_ROUNDS; k++) {
            for (int j = 0; j < 3; j++) {
                const int w = (j + k) % 3; /* bf16 first, then second, then last */
                row_result r;
                if (row_run(rs[w], &cfg, 1, t, bench_row_reps(rs[w]), row_io_dtype(rs[w]), &r,
                            NULL, NULL) != 0 ||
                    !r.ran) {
                    fprintf(stderr, "bench: fp8 rounds: %s\n", r.why);
                    c->ran = 0;
                    return;
                }
                if (w == 0) c->bf16_ms[k] = r.sec * 1e3;
                else c->ms[w - 1][k] = r.sec * 1e3;
            }
            const double gbs = limits_walk(L, L->buf_bytes, 1, 16, -1, t, 2);
            c->read_ms[k] = gbs > 0 ? fp8_bytes / (gbs * 1e6) : 0;
        }
        for (int d = 0; d < 2; d++) {
            c->ratio[d] = median3(c->bf16_ms) / median3(c->ms[d]);
            c->pct[d] = 100.0 * median3(c->read_ms) / median3(c->ms[d]);
        }
    }
}
