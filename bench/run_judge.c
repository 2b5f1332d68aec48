/*
 * bench/run_judge.c — see run_judge.h.  Metrics: decode GB/s = K+V bytes
 * the batch must read / time; prefill useful GFLOP/s = 4 D H L (L + 1) / 2
 * / time; the Laguna batch's useful GFLOP/s.  Each as % of the row's
 * ceiling (run_ceiling.c: the lowest of its candidates); the Laguna
 * roofline's items are kept so that its percentage can be checked by hand.
 */
#include "run_judge.h"

#include <math.h>
#include <string.h>

/* The target of a row (report_bench.h: bench_targets), % of its ceiling;
 * 0: none (a row with no ceiling measured). */
static double row_target(const row_spec *s, int t) {
    const bench_target_set *T = bench_targets();
    if (s->kind == ROW_LAGUNA) return T->laguna;
    if (s->kind == ROW_DECODE) return ag_dtype_is_fp8(s->kv) ? T->fp8 : T->decode;
    return s->kv == AG_BF16 ? T->prefill_bf16 : T->prefill[t < 2 ? 1 : 2];
}

void bench_figures(bench_row *b, const bench_limits *L, int limits) {
    const row_spec *s = b->spec;
    const int t = b->threads;
    const double sec = b->r.sec, cpu = b->r.cpu_share;
    const bench_ceiling *c = &b->ceil;
    const int has = limits && c->n > 0;
    const double ceiling = has ? c->best[c->bind] : 0;
    /* the lowest candidate as measured at the start of the run alone */
    double start = 0;
    for (int k = 0; has && k < c->n; k++)
        if (start == 0 || c->start[k] < start) start = c->start[k];
    const ceil_kind bind = has ? c->kind[c->bind] : CEIL_ROOF;
    if (s->kind == ROW_DECODE) {
        b->gbs = row_bytes(s) / sec * 1e-9;
        b->metric = "GB/s";
    } else {
        b->gflops = row_flops(s) / sec * 1e-9;
        b->metric = "GFLOP/s";
        if (s->kind == ROW_LAGUNA) b->gbs = row_bytes(s) / sec * 1e-9;
    }
    const double fig = s->kind == ROW_DECODE ? b->gbs : b->gflops;
    b->limit = has ? c->what[c->bind] : "";
    b->pct = has ? 100.0 * fig / ceiling : 0;
    b->pct_start = start > 0 ? 100.0 * fig / start : 0;
    /* per CPU-second granted, where the ceiling is a machine-wide limit
     * whose share was measured with it */
    if (has && bind == CEIL_READ && s->cold && L->dram_c[t] > 0)
        b->pct_c = 100.0 * fig / cpu / L->dram_c[t];
    if (has && bind == CEIL_PEAK && s->kind == ROW_PREFILL) {
        const int dot = strncmp(b->limit, "bf16", 4) == 0, amx = strncmp(b->limit, "AMX", 3) == 0;
        b->pct_c = 100.0 * fig / cpu / (amx ? L->amx_c[t] : dot ? L->bf16_c[t] : L->fma_c[t]);
    }
    /* bf16 prefill: the FMA peak as well, the honest figure where the
     * engine computes bf16 prefill with FMAs */
    if (limits && s->kind == ROW_PREFILL && s->kv == AG_BF16 && L->fma_c[t] > 0)
        b->pct_fma_c = 100.0 * fig / cpu / L->fma_c[t];
    if (s->kind == ROW_LAGUNA && limits) {
        /* the roofline's items for the report, each at its bound */
        b->n_items = row_items(s, b->items);
        b->roof_bw = L->dram[t];
        b->roof_peak = (s->kv == AG_BF16 && L->amx_path && L->amx[t] > 0) ? L->amx[t]
                       : (s->kv == AG_BF16 && L->bf16[t] > L->fma[t]) ? L->bf16[t]
                                                                       : L->fma[t];
        for (int i = 0; i < b->n_items; i++) {
            const row_item *it = &b->items[i];
            const double tb = it->bytes / (L->dram[t] * 1e9), tf = it->flops / (b->roof_peak * 1e9);
            b->item_bw[i] = tb >= tf;
            b->item_s[i] = it->count * fmax(tb, tf);
            b->roof_s += b->item_s[i];
        }
    }
    b->target = has ? row_target(s, t) : 0;
    b->verdict = b->target <= 0 ? "" : b->pct >= b->target ? "met" : "not met";
}
