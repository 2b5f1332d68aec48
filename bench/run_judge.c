/*
 * bench/run_judge.c — see run_judge.h.  Metrics: decode GB/s = K+V bytes
 * the batch must read / time, % of the DRAM read bandwidth; prefill useful
 * GFLOP/s = 4 D H L (L + 1) / 2 / time, % of the fp32 FMA peak (f32, f16
 * KV) or of the faster of the FMA and the bf16 dot peak (bf16 KV, where
 * the CPU has VDPBF16PS); the Laguna batch against its roofline, the sum
 * over its items of the larger of bytes / DRAM bandwidth and flops /
 * compute peak, kept item by item so the percentage can be checked by
 * hand.
 */
#include "run_judge.h"

#include <math.h>
#include <string.h>

/* The target of a row (issue 39: report_bench.h's BENCH_TARGET_*), as %
 * of the limit it names; 0: none (hot decode rows, whose KV is partly in
 * the caches; fp8 rows, judged in their own rounds: run_fp8.c). */
static double row_target(const row_spec *s) {
    if (s->kind == ROW_LAGUNA) return BENCH_TARGET_LAGUNA;
    if (s->kind == ROW_DECODE)
        return s->cold && !ag_dtype_is_fp8(s->kv) ? BENCH_TARGET_DECODE : 0;
    return s->kv == AG_F32   ? BENCH_TARGET_PREFILL_F32
           : s->kv == AG_F16 ? BENCH_TARGET_PREFILL_F16
                             : BENCH_TARGET_PREFILL_BF16;
}

const char *bench_verdict(double target, double pct, double pct_next, int has_next) {
    const int at_start = pct >= target, next = !has_next || pct_next >= target;
    if (at_start && next) return "met";
    if (at_start) return "met against the start-of-run limit only";
    if (has_next && next) return "met against the limit next to it only";
    return "not met";
}

/* The compute peak of a row's instruction path: the faster of the FMA and
 * bf16 dot peaks for a bf16 or fp8 cache (the AVX-512 tables decode fp8 to
 * bf16 for VDPBF16PS), the fp32 FMA peak otherwise (f16 and f32 caches are
 * computed on FMAs). */
static double row_peak(const row_spec *r, const double *fma, const double *bf, int t,
                       const char **name) {
    const int bf_path = r->kv == AG_BF16 || ag_dtype_is_fp8(r->kv);
    const int dot = bf_path && bf[t] > fma[t];
    if (name) *name = dot ? "bf16 dot peak" : "fp32 FMA peak";
    return dot ? bf[t] : fma[t];
}

double bench_ceiling_pct(const row_spec *r, double limit_gbs, const bench_limits *L, int t) {
    const double peak = row_peak(r, L->fma, L->bf16, t, NULL);
    if (r->kind != ROW_DECODE || !(limit_gbs > 0) || !(peak > 0)) return 0;
    /* memory time over compute time: below 1, the arithmetic alone takes
     * longer than the limit's read, whatever the kernel overlaps */
    const double t_mem = row_bytes(r) / (limit_gbs * 1e9), t_fma = row_flops(r) / (peak * 1e9);
    return fmin(100.0, 100.0 * t_mem / t_fma);
}

void bench_figures(bench_row *b, const bench_limits *L, int limits) {
    const row_spec *s = b->spec;
    const int t = b->threads;
    const double sec = b->r.sec, cpu = b->r.cpu_share;
    if (s->kind == ROW_DECODE) {
        b->gbs = row_bytes(s) / sec * 1e-9;
        b->metric = "GB/s";
        b->limit = "DRAM read";
        b->pct = limits ? 100.0 * b->gbs / L->dram[t] : 0;
        b->pct_c = limits ? 100.0 * b->gbs / cpu / L->dram_c[t] : 0;
        b->pct_adj = b->adj > 0 ? 100.0 * b->gbs / b->adj : 0;
        b->ceil_pct = limits ? bench_ceiling_pct(s, L->dram[t], L, t) : 0;
        /* FMAs per line read: g query heads over each element of the line
         * (rows on the bf16 dot path do other arithmetic: no such stream) */
        const char *path = NULL;
        row_peak(s, L->fma, L->bf16, t, &path);
        const int per_line = 64 / (int)ag_dtype_size(s->kv) * (32 / s->hkv);
        b->stream_fmas = L->fma_lanes && !strcmp(path, "fp32 FMA peak") ? per_line / L->fma_lanes : 0;
        for (int k = 0; limits && k < LIMITS_PAGED_FMA; k++)
            if (limits_paged_fma_n[k] == b->stream_fmas && L->dram[t] > 0)
                b->stream_pct = 100.0 * L->paged_fma[k][t] / L->dram[t];
    } else if (s->kind == ROW_PREFILL) {
        b->gflops = row_flops(s) / sec * 1e-9;
        b->metric = "GFLOP/s";
        const double peak = row_peak(s, L->fma, L->bf16, t, &b->limit);
        const double peak_c = row_peak(s, L->fma_c, L->bf16_c, t, NULL);
        b->pct = limits ? 100.0 * b->gflops / peak : 0;
        b->pct_c = limits ? 100.0 * b->gflops / cpu / peak_c : 0;
        /* bf16: the FMA peak as well, the honest ceiling where the engine
         * computes bf16 prefill with FMAs */
        b->pct_fma_c = limits && s->kv == AG_BF16 ? 100.0 * b->gflops / cpu / L->fma_c[t] : 0;
        b->pct_adj = b->adj > 0 ? 100.0 * b->gflops / b->adj : 0;
    } else {
        b->gflops = row_flops(s) / sec * 1e-9;
        b->gbs = row_bytes(s) / sec * 1e-9;
        b->metric = "GFLOP/s";
        b->limit = "roofline";
        b->n_items = row_items(s, b->items);
        b->roof_bw = L->dram[t];
        b->roof_peak = row_peak(s, L->fma, L->bf16, t, NULL);
        double roof_c = 0;
        for (int i = 0; limits && i < b->n_items; i++) {
            const row_item *it = &b->items[i];
            const double tb = it->bytes / (L->dram[t] * 1e9), tf = it->flops / (b->roof_peak * 1e9);
            b->item_bw[i] = tb >= tf;
            b->item_s[i] = it->count * fmax(tb, tf);
            b->roof_s += b->item_s[i];
            roof_c += it->count * fmax(it->bytes / (L->dram_c[t] * 1e9),
                                       it->flops / (row_peak(s, L->fma_c, L->bf16_c, t, NULL) * 1e9));
        }
        b->pct = limits ? 100.0 * b->roof_s / sec : 0;
        b->pct_c = limits ? 100.0 * roof_c / (sec * cpu) : 0;
    }
    b->target = limits ? row_target(s) : 0;
    b->verdict = b->target > 0 ? bench_verdict(b->target, b->pct, b->pct_adj, b->adj > 0) : "";
}

