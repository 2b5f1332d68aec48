/*
 * bench.c — the benchmark's entry point and `make bench`: its rows
 * against this machine's limits and each target's verdict (rows:
 * bench/rows.c, row_run.c; machine limits: bench/limits.c; reports:
 * bench_report.c; fp8 rounds: bench_fp8.c; engines side by side:
 * bench/side_by_side.c).
 *
 *   bench [--engine NAME] OUTDIR
 *       `make bench`: this machine's limits, then one engine (attnguard by
 *       default) on every row against them, in one run; writes
 *       OUTDIR/bench.md and OUTDIR/bench.json.
 *   bench --peer [--engines a,b,...] OUTDIR
 *       `make bench-peer`: attnguard and every peer given ($BENCH_ENGINES)
 *       in each of its configurations, and PyTorch (--torch CMD), on the
 *       same rows, timed round by round in turn in the same run, each
 *       output checked against the fp64 reference; each row names every
 *       peer's fastest correct configuration and attnguard's verdict
 *       against the best; writes OUTDIR/bench-peer.md and .json.
 *
 * Metrics: decode GB/s = K+V bytes the batch must read / time, % of the
 * DRAM read bandwidth; prefill useful GFLOP/s = 4 D H L (L + 1) / 2 /
 * time, % of the fp32 FMA peak (f32, f16 KV) or of the faster of the FMA
 * and the bf16 dot peak (bf16 KV, where the CPU has VDPBF16PS); the Laguna
 * batch against its roofline, the
 * sum over its items of the larger of bytes / DRAM bandwidth and flops /
 * compute peak, printed item by item so the percentage can be checked by
 * hand.  Each row also reports its output's largest error against the
 * fp64 reference on sampled query rows.
 *
 * Narrowing (environment): BENCH_ONLY=word[,word] (decode1, decode8,
 * prefill, laguna, fp8; a word takes every part it begins: decode takes
 * decode1 and decode8), BENCH_DTYPE (f32, f16, bf16, fp8e4m3, fp8e5m2:
 * the decode and prefill rows of one KV dtype), BENCH_HKV (32, 8: the
 * prefill rows), BENCH_THREADS=1, BENCH_NO_LIMITS=1 (skips the limits),
 * BENCH_READ_PF=bytes (the DRAM read loop's prefetch distance, 1024).
 * Reports are written from what ran.
 */
#include "bench_report.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 7

/* ------------------------------------------------------------- narrowing */

/* 1 when a word of `only` (comma- or space-separated) begins `part`:
 * "decode" takes decode1 and decode8. */
static int only_takes(const char *only, const char *part) {
    for (const char *w = only; *w;) {
        w += strspn(w, ", ");
        const size_t n = strcspn(w, ", ");
        if (n && strncmp(part, w, n) == 0) return 1;
        w += n;
    }
    return 0;
}

int bench_skip_row(const row_spec *r) {
    const char *only = getenv("BENCH_ONLY"), *dt = getenv("BENCH_DTYPE"), *hkv = getenv("BENCH_HKV");
    if (only && !only_takes(only, r->part)) return 1;
    if (dt && r->kind != ROW_LAGUNA && strcmp(dt, ag_dtype_name(r->kv)) != 0) return 1;
    if (hkv && r->kind == ROW_PREFILL && atoi(hkv) != r->hkv) return 1;
    return 0;
}

int bench_threads_max(void) {
    const char *t = getenv("BENCH_THREADS");
    return t && atoi(t) == 1 ? 1 : 2;
}

/* Timed batches of a row: cold decode rows twice the rest (their
 * rotation makes single runs noisier), prefill 5. */
int bench_row_reps(const row_spec *r) {
    return r->kind == ROW_PREFILL ? 5 : r->kind == ROW_DECODE && r->cold ? 2 * REPS : REPS;
}

void bench_json_num(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.3g", x);
    else fputs("null", f);
}

void bench_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

int bench_open_engine(engine_host *h, const char *name) {
    char err[AG_MSG_TEXT_LEN + 64];
    if (engine_host_open(h, name, NULL, err, sizeof err) == 0) return 0;
    fprintf(stderr, "bench: %s\n", err);
    return -1;
}

/* The tuning profile an engine reports for a small group ("tune=<p>" in
 * its group_info detail; attnguard's), or "" for none. */
static void engine_tune(const engine_host *h, char *tune, size_t cap) {
    tune[0] = '\0';
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
    }
    h->e->destroy(grp);
}

/* ================================================================ bench */

/* The target of a row (issue 39: bench_report.h's BENCH_TARGET_*), as %
 * of the limit it names; 0: none (hot decode rows, whose KV is partly in
 * the caches; fp8 rows, judged in their own rounds: bench_fp8.c). */
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

static void figures(bench_row *b, const bench_limits *L, int limits) {
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

static void print_row(const bench_row *b) {
    const row_result *r = &b->r;
    if (!r->ran) {
        printf("%-36s %d thr %s\n", b->name, b->threads, r->why);
        return;
    }
    const double fig = strcmp(b->metric, "GB/s") == 0 ? b->gbs : b->gflops;
    printf("%-36s %d thr %8.2f ms %7.1f %s %5.1f%% of %s | cpu %3.0f%% -> %5.1f%%", b->name,
           b->threads, r->sec * 1e3, fig, b->metric, b->pct, b->limit, 100 * r->cpu_share, b->pct_c);
    if (b->adj > 0) printf(" | next to it %5.1f -> %5.1f%%", b->adj, b->pct_adj);
    printf(" | err %.2g\n", r->max_abs_err);
    fflush(stdout);
}

static int cmd_bench(const char *engine, const char *outdir) {
    engine_host h;
    if (bench_open_engine(&h, engine) != 0) return 1;
    char tune[16];
    engine_tune(&h, tune, sizeof tune);
    static bench_limits L;
    memset(&L, 0, sizeof L);
    const int limits = getenv("BENCH_NO_LIMITS") == NULL;
    const size_t read_pf = getenv("BENCH_READ_PF") ? strtoul(getenv("BENCH_READ_PF"), NULL, 10) : 0;
    if (limits && limits_measure(&L, tune, read_pf) != 0) {
        fprintf(stderr, "bench: no limits: %s\n",
                strcmp(L.isa, "none") == 0 ? "the CPU has neither AVX-512F nor AVX2 + FMA "
                                             "(BENCH_NO_LIMITS=1 runs the rows alone)"
                                           : "cannot allocate the 2 GiB bandwidth buffer");
        return 1;
    }
    printf("limits (wall | per granted CPU): 1 thread, 2 threads; %s loops\n", L.isa);
    printf("  fp32 FMA peak  %6.1f %6.1f | %6.1f %6.1f GFLOP/s (%d-lane FMA chains)\n", L.fma[1],
           L.fma[2], L.fma_c[1], L.fma_c[2], L.fma_lanes);
    if (L.has_dot)
        printf("  bf16 dot peak  %6.1f %6.1f | %6.1f %6.1f GFLOP/s (VDPBF16PS)\n", L.bf16[1],
               L.bf16[2], L.bf16_c[1], L.bf16_c[2]);
    else printf("  bf16 dot peak  VDPBF16PS: no such instruction on this CPU\n");
    printf("  DRAM read      %6.1f %6.1f | %6.1f %6.1f GB/s (2 GiB)\n", L.dram[1], L.dram[2],
           L.dram_c[1], L.dram_c[2]);
    for (int k = 0; k < LIMITS_PAGED; k++)
        printf("  paged K/V read %6.1f %6.1f GB/s (%s, decode layout, profile %s)\n", L.paged[k][1],
               L.paged[k][2], limits_paged_name[k], tune[0] ? tune : "none");
    for (int k = 0; k < LIMITS_PAGED_FMA; k++)
        printf("  paged + %2d FMA %6.1f %6.1f GB/s (bf16_bs16, %d-lane FMAs)\n",
               limits_paged_fma_n[k], L.paged_fma[k][1], L.paged_fma[k][2], L.fma_lanes);
    if (limits) printf("  huge pages     THP mode %s; %ld MiB anonymous huge pages\n", L.thp_mode, L.thp_mib);
    printf("\n");
    fflush(stdout);

    static bench_row rows[BENCH_MAX_RESULTS];
    int n = 0;
    const engine_host *E[1] = {&h};
    const row_config cfg = {&h, NULL, ""};
    for (int t = 1; t <= bench_threads_max(); t++)
        for (int i = 0; i < bench_num_rows && n < BENCH_MAX_RESULTS; i++) {
            const row_spec *s = &bench_rows[i];
            if (bench_skip_row(s)) continue;
            bench_row *b = &rows[n++];
            memset(b, 0, sizeof *b);
            b->spec = s;
            b->threads = t;
            row_name(s, b->name, sizeof b->name);
            /* the row's limit again right before and after it: this shared
             * machine's speed drifts over a run (cold decode: the sweep
             * empties the caches; prefill: the peak of its path) */
            const int near_bw = limits && s->kind == ROW_DECODE && s->cold;
            const int near_peak = limits && s->kind == ROW_PREFILL;
            if (near_bw) b->adj = limits_read_bw(&L, t, 2);
            if (near_peak) b->adj = s->kv == AG_BF16 && L.bf16[t] > L.fma[t]
                                        ? limits_bf16_peak(t, 20000000) : limits_fma_peak(t, 20000000);
            if (row_run(s, &cfg, 1, t, bench_row_reps(s), row_io_dtype(s), &b->r, NULL) != 0)
                fprintf(stderr, "bench: %s: %s\n", b->name, b->r.why);
            if (near_bw) b->adj = fmax(b->adj, limits_read_bw(&L, t, 2));
            if (near_peak) b->adj = fmax(b->adj, s->kv == AG_BF16 && L.bf16[t] > L.fma[t]
                                                     ? limits_bf16_peak(t, 20000000)
                                                     : limits_fma_peak(t, 20000000));
            if (b->r.ran) figures(b, &L, limits);
            print_row(b);
        }
    /* with the fp8 rows: their rounds against a plain read of the layout */
    const row_spec fp8_probe = {"fp8", ROW_DECODE, 8, AG_FP8_E4M3, 8, 16, 1};
    fp8_cmp cmp[2];
    memset(cmp, 0, sizeof cmp);
    const int do_fp8 = !bench_skip_row(&fp8_probe);
    if (do_fp8) {
        bench_fp8_rounds(E, &L, cmp);
        bench_fp8_write(NULL, cmp, bench_threads_max());
        /* the fp8 rows are judged by their rounds: their target, figure
         * and verdict in the rows' tables are those */
        for (int i = 0; i < n; i++) {
            bench_row *b = &rows[i];
            const int d = b->spec->kv == AG_FP8_E5M2;
            const fp8_cmp *c = &cmp[b->threads - 1];
            if (b->spec->kv != AG_FP8_E4M3 && !d) continue;
            if (!b->r.ran || !c->ran || c->pct[d] <= 0) continue;
            b->target = FP8_TARGET_PCT;
            b->pct = c->pct[d];
            b->adj = b->pct_adj = 0;
            b->limit = "plain read of its layout (fp8 rounds)";
            b->verdict = c->verdict[d];
            b->ceil_pct = c->ceil_pct;
            /* against a plain read: the arithmetic stream over the same
             * walk without its FMAs (bf16_bs16, the limits' paged rows) */
            for (int k = 0; k < LIMITS_PAGED_FMA; k++)
                if (limits_paged_fma_n[k] == b->stream_fmas && L.paged[1][b->threads] > 0)
                    b->stream_pct = 100.0 * L.paged_fma[k][b->threads] / L.paged[1][b->threads];
        }
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

static void usage(void) {
    fputs("usage: bench [--engine NAME] OUTDIR            limits + one engine -> bench.{md,json}\n"
          "       bench --peer [--engines a,b] [--torch CMD] OUTDIR\n"
          "                                               the first engine against the others "
          "at their best,\n"
          "                                               and PyTorch (CMD: bench/peer.py "
          "--serve) -> bench-peer.{md,json}\n"
          "(engines: built-in names or adapter paths; --engines defaults to $BENCH_ENGINES, "
          "else attnguard)\n",
          stderr);
}

int main(int argc, char **argv) {
    const char *outdir = NULL, *engine = "attnguard", *torch = NULL;
    const char *engines = getenv("BENCH_ENGINES");
    int peer = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--peer") == 0) peer = 1;
        else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) engine = argv[++i];
        else if (strcmp(argv[i], "--engines") == 0 && i + 1 < argc) engines = argv[++i];
        else if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc) torch = argv[++i];
        else if (argv[i][0] != '-' && !outdir) outdir = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!outdir) outdir = "reports";
    const char *isa = getenv("ATTN_ISA");
    if (isa && strstr(isa, "@emu")) {
        /* an emulated table runs the AVX-512 kernels over SIMDe: correct,
         * and no measure of anything a user would run */
        fprintf(stderr, "bench: ATTN_ISA=%s is an emulated kernel table (mk/isa.mk, EMU_TABLES); "
                        "it is for tests and fuzzing and is never timed\n", isa);
        return 2;
    }
    return peer ? bench_side_by_side(engines && *engines ? engines : "attnguard", torch, outdir)
                : cmd_bench(engine, outdir);
}
