/*
 * bench/run_bench.c — see run_bench.h: the limits printed as they are
 * measured, every row's ceiling measured before any row runs, each row
 * run between two measurements of its binding ceiling (the machine's speed
 * drifts over a run) and printed as it ends, the fp8 rounds, and the
 * reports written from what ran.
 */
#include "run_bench.h"
#include "run_ceiling.h"
#include "run_fp8.h"
#include "run_judge.h"
#include "run_rows.h"
#include "report_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tuning profile an engine reports for a small group ("tune=<p>" in
 * its group_info detail; attnguard's), or "" for none; and the kernels it
 * names (attnguard's table). */
static void engine_tune(const engine_host *h, char *tune, size_t cap, char *kernels, size_t kcap) {
    tune[0] = '\0';
    kernels[0] = '\0';
    ag_layer layer;
    memset(&layer, 0, sizeof layer);
    layer.num_heads = 8;
    layer.window_left = layer.window_right = -1;
    layer.k_scale = layer.v_scale = 1.0f;
    ag_group g;
    memset(&g, 0, sizeof g);
    g.layers = &layer;
    g.num_layers = 1;
    g.num_kv_heads = 8;
    g.head_dim = 128;
    g.block_size = 16;
    g.model_num_heads = 8;
    g.num_threads = 1;
    void *grp = NULL;
    ag_msg msg;
    ag_group_info gi;
    if (h->e->create(h->ctx, &g, &grp, &msg) != AG_OK) return;
    if (h->e->group_info && h->e->group_info(grp, &gi) == AG_OK) {
        const char *t = strstr(gi.detail, "tune=");
        if (t) snprintf(tune, cap, "%.*s", (int)strcspn(t + 5, " ,;"), t + 5);
        snprintf(kernels, kcap, "%s", gi.kernels);
    }
    h->e->destroy(grp);
}

static void print_row(const bench_row *b) {
    const row_result *r = &b->r;
    if (!r->ran) {
        printf("%-36s %d thr %s\n", b->name, b->threads, r->why);
        return;
    }
    const double fig = strcmp(b->metric, "GB/s") == 0 ? b->gbs : b->gflops;
    printf("%-36s %d thr %8.2f ms %7.2f %s %5.1f%% of %s | cpu %3.0f%%", b->name, b->threads,
           r->sec * 1e3, fig, b->metric, b->pct, b->limit, 100 * r->cpu_share);
    if (b->pct_c > 0) printf(" -> %5.1f%%", b->pct_c);
    if (b->pct_start > 0) printf(" | start-of-run %5.1f%%", b->pct_start);
    printf(" | err %.2g\n", r->max_abs_err);
    fflush(stdout);
}

int run_bench(const char *engine, const char *outdir) {
    engine_host h;
    if (bench_open_engine(&h, engine) != 0) return 1;
    char tune[16], kernels[64];
    engine_tune(&h, tune, sizeof tune, kernels, sizeof kernels);
    /* attnguard's amx table computes bf16 prefill on AMX tiles */
    const int amx_path = strcmp(kernels, "amx") == 0;
    static bench_limits L;
    memset(&L, 0, sizeof L);
    const int limits = getenv("BENCH_NO_LIMITS") == NULL;
    const size_t read_pf = getenv("BENCH_READ_PF") ? strtoul(getenv("BENCH_READ_PF"), NULL, 10) : 0;
    if (limits && limits_measure(&L, tune, read_pf, amx_path) != 0) {
        fprintf(stderr, "bench: no limits: %s\n",
                strcmp(L.isa, "none") == 0 ? "the CPU has neither AVX-512F nor AVX2 + FMA "
                                             "(BENCH_NO_LIMITS=1 runs the rows alone)"
                                           : "cannot allocate the 2 GiB bandwidth buffer");
        return 1;
    }
    printf("limits (wall | per granted CPU): 1 thread, 2 threads; %s loops\n", L.isa);
    printf("  fp32 FMA peak  %6.1f %6.1f | %6.1f %6.1f GFLOP/s (%d-lane FMA chains)\n", L.fma[1],
           L.fma[2], L.fma_c[1], L.fma_c[2], L.fma_lanes);
    printf("  product step   %6.1f %6.1f GFLOP/s (%d x %d register block, operands in L1)\n",
           L.gemm[1], L.gemm[2], L.gemm_rows, L.gemm_vecs);
    if (L.has_dot)
        printf("  bf16 dot peak  %6.1f %6.1f | %6.1f %6.1f GFLOP/s (VDPBF16PS)\n", L.bf16[1],
               L.bf16[2], L.bf16_c[1], L.bf16_c[2]);
    else printf("  bf16 dot peak  VDPBF16PS: no such instruction on this CPU\n");
    if (L.has_amx)
        printf("  AMX tile peak  %6.1f %6.1f | %6.1f %6.1f GFLOP/s (TDPBF16PS%s)\n", L.amx[1],
               L.amx[2], L.amx_c[1], L.amx_c[2],
               L.amx_path ? "; the bf16 prefill rows' peak" : "; not the engine's path");
    if (L.has_amx)
        printf("  AMX step       %6.1f %6.1f GFLOP/s (2 x 2 tile products, operand tiles in L1%s)\n",
               L.amx_step[1], L.amx_step[2], L.amx_path ? "" : "; not the engine's path");
    printf("  DRAM read      %6.1f %6.1f | %6.1f %6.1f GB/s (2 GiB)\n", L.dram[1], L.dram[2],
           L.dram_c[1], L.dram_c[2]);
    if (limits) printf("  huge pages     THP mode %s; %ld MiB anonymous huge pages\n", L.thp_mode, L.thp_mib);
    printf("\n");
    fflush(stdout);

    static bench_row rows[BENCH_MAX_RESULTS];
    int n = 0;
    for (int t = 1; t <= bench_threads_max(); t++)
        for (int i = 0; i < bench_num_rows && n < BENCH_MAX_RESULTS; i++) {
            const row_spec *s = &bench_rows[i];
            if (bench_skip_row(s)) continue;
            bench_row *b = &rows[n++];
            memset(b, 0, sizeof *b);
            b->spec = s;
            b->threads = t;
            row_name(s, b->name, sizeof b->name);
        }
    /* every row's ceiling at the start of the run, before any row runs */
    if (limits) {
        printf("ceilings (the lowest candidate of each row binds; run_ceiling.c):\n");
        for (int i = 0; i < n; i++) {
            bench_row *b = &rows[i];
            ceiling_measure(b, &L);
            const bench_ceiling *c = &b->ceil;
            printf("  %-38s %d thr", b->name, b->threads);
            for (int k = 0; k < c->n; k++)
                printf("%s %s %.1f", k ? ";" : "", c->what[k], c->start[k]);
            printf("  -> %s\n", c->n ? c->what[c->bind] : "none");
        }
        printf("\n");
        fflush(stdout);
    }
    const engine_host *E[1] = {&h};
    const row_config cfg = {&h, NULL, ""};
    for (int i = 0; i < n; i++) {
        bench_row *b = &rows[i];
        const row_spec *s = b->spec;
        const int t = b->threads;
        /* the row's ceilings again right before and after it: this shared
         * machine's speed drifts over a run */
        if (limits) ceiling_again(b, &L);
        if (row_run(s, &cfg, 1, t, bench_row_reps(s), row_io_dtype(s), &b->r, NULL, NULL) != 0)
            fprintf(stderr, "bench: %s: %s\n", b->name, b->r.why);
        if (limits) ceiling_again(b, &L);
        if (b->r.ran) bench_figures(b, &L, limits);
        print_row(b);
    }
    /* with the fp8 rows: their rounds against bf16 and a plain read of
     * their layout (information beside their verdicts) */
    const row_spec fp8_probe = {"fp8", ROW_DECODE, 8, AG_FP8_E4M3, 8, 16, 1};
    fp8_cmp cmp[2];
    memset(cmp, 0, sizeof cmp);
    const int do_fp8 = !bench_skip_row(&fp8_probe) && limits;
    if (do_fp8) {
        bench_fp8_rounds(E, &L, cmp);
        bench_fp8_write(NULL, cmp, bench_threads_max());
    }

    char path[512];
    snprintf(path, sizeof path, "%s/bench.json", outdir);
    FILE *fj = fopen(path, "w");
    snprintf(path, sizeof path, "%s/bench.md", outdir);
    FILE *fm = fopen(path, "w");
    if (!fj || !fm) {
        fprintf(stderr, "bench: cannot write reports into %s\n", outdir);
        return 1;
    }
    bench_write_json(fj, &L, tune, h.e->name, rows, n, cmp, do_fp8 ? bench_threads_max() : 0);
    bench_write_md(fm, &L, tune, h.e->name, rows, n);
    if (do_fp8) bench_fp8_write(fm, cmp, bench_threads_max());
    fclose(fj);
    fclose(fm);
    limits_free(&L);
    engine_host_close(&h);
    return 0;
}

