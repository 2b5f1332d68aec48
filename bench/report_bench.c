/*
 * bench/report_bench.c — `make bench`'s reports (report_bench.h): the
 * machine's limits, every row against them, the Laguna roofline, the
 * targets with their verdicts and the fp8 rounds, as bench.md and
 * bench.json (whose "results" stay flat objects: reports/render.py
 * tabulates them).
 */
#include "report_bench.h"
#include "util_host.h"

#include "../harness/util/json.h"

#include <string.h>

const bench_target_set *bench_targets(void) {
    static const bench_target_set avx512 = {"issue 39", 80, 80, 70, 70, 60, 75};
    static const bench_target_set avx2 = {"issue 44", 75, 70, 70, 70, 60, 60};
    return strcmp(limits_isa(), "AVX2") == 0 ? &avx2 : &avx512;
}

/* What the reports say where the CPU has no VDPBF16PS. */
#define BENCH_NO_DOT "no such instruction on this CPU"

void bench_write_json(FILE *f, const bench_limits *L, const char *tune, const char *engine,
                      const bench_row *rows, int n, const fp8_cmp *fp8, int n_fp8) {
    const char *const *pn = limits_paged_name;
    const int *fn = limits_paged_fma_n;
    fprintf(f, "{\n  \"engine\": \"%s\",\n  \"limits\": {\"isa\": \"%s\", \"bf16_dot\": \"%s\", "
               "\"fma_gflops\": [%.2f, %.2f], "
               "\"bf16_dot_gflops\": [%.2f, %.2f], \"dram_read_gbs\": [%.2f, %.2f],\n"
               "             \"paged_read_gbs\": {\"%s\": [%.2f, %.2f], \"%s\": [%.2f, %.2f], "
               "\"%s\": [%.2f, %.2f]},\n             \"paged_read_fma_gbs\": {\"%d\": [%.2f, "
               "%.2f], \"%d\": [%.2f, %.2f], \"%d\": [%.2f, %.2f], \"%d\": [%.2f, %.2f]},\n"
               "             \"per_cpu\": {\"fma_gflops\": [%.2f, %.2f], \"bf16_dot_gflops\": "
               "[%.2f, %.2f], \"dram_read_gbs\": [%.2f, %.2f]}},\n"
               "  \"huge_pages\": {\"thp_mode\": \"%s\", \"anon_huge_mib\": %ld},\n"
               "  \"tune\": \"%s\",\n  \"results\": [\n",
            engine, L->isa, L->has_dot ? "VDPBF16PS" : BENCH_NO_DOT, L->fma[1], L->fma[2], L->bf16[1], L->bf16[2], L->dram[1], L->dram[2], pn[0],
            L->paged[0][1], L->paged[0][2], pn[1], L->paged[1][1], L->paged[1][2], pn[2],
            L->paged[2][1], L->paged[2][2], fn[0], L->paged_fma[0][1], L->paged_fma[0][2], fn[1],
            L->paged_fma[1][1], L->paged_fma[1][2], fn[2], L->paged_fma[2][1], L->paged_fma[2][2],
            fn[3], L->paged_fma[3][1], L->paged_fma[3][2], L->fma_c[1], L->fma_c[2], L->bf16_c[1],
            L->bf16_c[2], L->dram_c[1], L->dram_c[2], L->thp_mode, L->thp_mib, tune);
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        const row_result *r = &b->r;
        /* the first ten keys are the ones reports/render.py tabulates */
        fprintf(f, "    {\"name\": \"%s\", \"threads\": %d, \"isa\": ", b->name, b->threads);
        json_str(f, r->kernels);
        fprintf(f, ", \"ms\": %.3f, \"gbs\": %.2f, \"gflops\": %.2f, \"pct\": %.1f, \"limit\": "
                   "\"%s\", \"cpu_share\": %.2f, \"pct_per_cpu\": %.1f, \"pct_fma_per_cpu\": "
                   "%.1f, \"limit_next_to_it\": %.2f, \"pct_next_to_it\": %.1f, \"target_pct\": "
                   "%.0f, \"verdict\": \"%s\",\n     \"status\": \"%s\", \"why\": ",
                r->sec * 1e3, b->gbs, b->gflops, b->pct, b->limit ? b->limit : "", r->cpu_share,
                b->pct_c, b->pct_fma_c, b->adj, b->pct_adj, b->target, b->verdict ? b->verdict : "",
                r->ran ? "ok" : strncmp(r->why, "skipped", 7) == 0 ? "skipped" : "failed");
        json_str(f, r->ran ? "" : r->why);
        fputs(", \"detail\": ", f);
        json_str(f, r->detail);
        fprintf(f, ", \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"rotations\": %d, "
                   "\"max_abs_err\": ",
                ag_dtype_name(row_io_dtype(b->spec)), ag_dtype_name(b->spec->kv), r->rotations);
        json_num(f, r->max_abs_err, 3);
        fputs(", \"max_rel_err\": ", f);
        json_num(f, r->max_rel_err, 3);
        fprintf(f, ", \"err_rows\": %d, \"nan\": %zu", r->err_rows, r->nan_count);
        if (b->ceil_pct > 0) fprintf(f, ", \"compute_ceiling_pct\": %.1f", b->ceil_pct);
        if (b->stream_pct > 0)
            fprintf(f, ", \"stream_fmas_per_line\": %d, \"stream_pct\": %.1f", b->stream_fmas,
                    b->stream_pct);
        if (b->n_items && r->ran && b->roof_s > 0) {
            fprintf(f, ",\n     \"roofline\": {\"dram_gbs\": %.2f, \"peak_gflops\": %.2f, "
                       "\"seconds\": %.6f, \"items\": [", b->roof_bw, b->roof_peak, b->roof_s);
            for (int k = 0; k < b->n_items; k++)
                fprintf(f, "%s{\"what\": \"%s\", \"count\": %d, \"bytes\": %.0f, \"flops\": %.0f, "
                           "\"bound\": \"%s\", \"seconds\": %.6f}", k ? ", " : "",
                        b->items[k].what, b->items[k].count, b->items[k].bytes, b->items[k].flops,
                        b->item_bw[k] ? "bandwidth" : "compute", b->item_s[k]);
            fputs("]}", f);
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fputs("  ],\n  \"fp8\": ", f);
    bench_fp8_json(f, fp8, n_fp8);
    fputs("\n}\n", f);
}

void bench_write_md(FILE *f, const bench_limits *L, const char *tune, const char *engine,
                    const bench_row *rows, int n) {
    fprintf(f, "# %s benchmark\n\nGenerated by `make bench` (bench/run_bench.c) through the adapter "
               "ABI. Median of >= 5 runs per row; the engine's default variant. Decode: B x "
               "Hkv x 4096 keys x D 128 x (K+V) bytes / time; cold = rotating through >= 1.5 GiB "
               "of KV (one session per rotation). Every large buffer (KV, query, output, "
               "scratch) asks for huge pages (what it got: *Huge pages* below). Prefill: useful "
               "flops 4 D H L (L + 1) / 2. *err*: the largest |output - fp64 reference| over "
               "up to 48 sampled query rows (all heads and dims) of a check run after the "
               "timing, which also finds every output element written.\n\n"
               "*cpu share* = process CPU time / (threads x wall) while timed: below 100%% "
               "the machine was shared; the *per CPU* column compares engine and limit both "
               "per CPU-second granted. *next to it*: the row's limit measured again right "
               "before and after the row (the better of the two; cold decode and prefill "
               "rows): in a VM the host's other load does not show in the cpu share.\n\n",
            engine);
    char cpu[256];
    bench_cpu_desc(cpu, sizeof cpu);
    fprintf(f, "Machine: %s.\n\n", cpu);
    fprintf(f, "## Machine limits (measured in the same run, %s loops)\n\n| limit | 1 thread | "
               "2 threads |\n|---|---:|---:|\n", L->isa);
    fprintf(f, "| fp32 FMA peak, %d-lane FMA chains (GFLOP/s) | %.1f (%.1f) | %.1f (%.1f) |\n",
            L->fma_lanes, L->fma[1], L->fma_c[1], L->fma[2], L->fma_c[2]);
    if (L->has_dot)
        fprintf(f, "| bf16 dot peak, VDPBF16PS (GFLOP/s) | %.1f (%.1f) | %.1f (%.1f) |\n",
                L->bf16[1], L->bf16_c[1], L->bf16[2], L->bf16_c[2]);
    else
        fprintf(f, "| bf16 dot peak, VDPBF16PS | %s | %s |\n", BENCH_NO_DOT, BENCH_NO_DOT);
    fprintf(f, "| DRAM read bandwidth, 2 GiB (GB/s) | %.1f (%.1f) | %.1f (%.1f) |\n", L->dram[1],
            L->dram_c[1], L->dram[2], L->dram_c[2]);
    for (int k = 0; k < LIMITS_PAGED; k++)
        fprintf(f, "| paged K/V read, %s, D 128, Hkv 8 (GB/s) | %.1f | %.1f |\n",
                limits_paged_name[k], L->paged[k][1], L->paged[k][2]);
    for (int k = 0; k < LIMITS_PAGED_FMA; k++)
        fprintf(f, "| paged K/V read, bf16_bs16, %d %d-lane FMAs per line read (GB/s) | %.1f | "
                   "%.1f |\n", limits_paged_fma_n[k], L->fma_lanes, L->paged_fma[k][1],
                L->paged_fma[k][2]);
    fprintf(f, "\nIn brackets: per CPU-second granted. The DRAM read limit is the better of a "
               "plain sequential read and the same read with a software prefetch ahead. The "
               "paged rows read the decode layout with no arithmetic in the order of the "
               "engine's decode tile under its tuning profile `%s` (chunks of %d keys for fp32, "
               "%d for bf16, the 8 KV heads' K then V pieces in turn, the next step "
               "prefetched, %s): the ceiling of the access pattern; with N FMAs per line read "
               "(N/2 cycles at two FMAs a cycle), the ceiling for a kernel doing that much "
               "arithmetic per line.\n\nHuge pages: THP mode `%s`; %ld MiB of anonymous huge "
               "pages with the 2 GiB buffer filled (-1: not measured).\n\n",
            tune[0] ? tune : "none", L->paged_chunk[0], L->paged_chunk[1], L->nta ? "NTA" : "T1",
            L->thp_mode, L->thp_mib);
    fprintf(f, "## Engine\n\n| case | threads | kernels | ms | GB/s | GFLOP/s | %% of limit | "
               "limit | cpu share | %% of limit per CPU | bf16: %% of FMA peak per CPU | limit "
               "next to it | %% of it | err |\n"
               "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        if (!b->r.ran) {
            fprintf(f, "| %s | %d | %s |||||||||||\n", b->name, b->threads, b->r.why);
            continue;
        }
        char gb[32] = "", gf[32] = "", ff[32] = "", la[32] = "", pa[32] = "";
        if (b->gbs > 0) snprintf(gb, sizeof gb, "%.1f", b->gbs);
        if (b->gflops > 0) snprintf(gf, sizeof gf, "%.1f", b->gflops);
        if (b->pct_fma_c > 0) snprintf(ff, sizeof ff, "%.1f", b->pct_fma_c);
        if (b->adj > 0) {
            snprintf(la, sizeof la, "%.1f", b->adj);
            snprintf(pa, sizeof pa, "%.1f", b->pct_adj);
        }
        fprintf(f, "| %s | %d | %s | %.2f | %s | %s | %.1f | %s | %.0f%% | %.1f | %s | %s | %s | "
                   "%.2g |\n", b->name, b->threads, b->r.kernels, b->r.sec * 1e3, gb, gf, b->pct,
                b->limit, 100 * b->r.cpu_share, b->pct_c, ff, la, pa, b->r.max_abs_err);
    }
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        if (!b->n_items || !b->r.ran || b->roof_s <= 0) continue;   /* no limits measured */
        fprintf(f, "\n### Roofline of `%s`, %d thread%s\n\nEach item is bound by the larger of "
                   "bytes / DRAM read (%.1f GB/s, measured at the start of this run) and flops / "
                   "compute peak (%.1f GFLOP/s: the faster of the fp32 FMA and bf16 dot peaks); "
                   "the roofline time is the sum over the items (each group has its own KV "
                   "cache).\n\n| item | count | MB each | GFLOP each | bound | ms (x count) |\n"
                   "|---|---:|---:|---:|---|---:|\n",
                b->name, b->threads, b->threads == 1 ? "" : "s", b->roof_bw, b->roof_peak);
        for (int k = 0; k < b->n_items; k++)
            fprintf(f, "| %s | %d | %.2f | %.4f | %s | %.3f |\n", b->items[k].what,
                    b->items[k].count, b->items[k].bytes / 1e6, b->items[k].flops / 1e9,
                    b->item_bw[k] ? "bandwidth" : "compute", b->item_s[k] * 1e3);
        fprintf(f, "\nRoofline %.3f ms; measured %.3f ms: %.3f / %.3f = %.1f %% of the "
                   "roofline.\n", b->roof_s * 1e3, b->r.sec * 1e3, b->roof_s * 1e3,
                b->r.sec * 1e3, b->pct);
    }
    fprintf(f, "\n## Targets\n\nThe speed targets, restated against this machine's own "
               "limits (%s, for the %s loops): cold decode >= %.0f %% of the DRAM read; prefill >= %.0f %% "
               "(f32), %.0f %% (f16), %.0f %% (bf16) of the fp32 FMA peak, or for bf16 of the "
               "VDPBF16PS peak where the CPU has it and it is the faster; the Laguna batch >= "
               "%.0f %% of its roofline; fp8 decode >= %.0f %% of a plain read of its layout in "
               "the same rounds (its own section below).  Hot decode rows have no target: "
               "their KV is partly in the caches, so the DRAM read is no limit for them.  A row "
               "counts as met only at or above its target against both the limit measured at "
               "the start of the run and the one measured next to the row (where there is "
               "one).\n\n*Compute ceiling* (decode rows): the most of the row's limit that "
               "its multiply-adds allow at the compute peak of its instruction path, both "
               "measured at the start of the run (the limit's time over the flops' time at "
               "that peak, at most 100 %%); a target above it is out of reach of any kernel on "
               "that path here, however it overlaps memory and arithmetic.  *Stream with its "
               "FMAs*: the paged read of the limits above with as many FMAs per line read as "
               "the row does, in %% of the DRAM read (fp8 rows: of the same walk without the "
               "FMAs): what a loop doing that arithmetic and nothing else (no widening, no "
               "softmax) streamed here.\n\n| row | threads "
               "| target | %% of the start-of-run limit | %% of the limit next to it | verdict | "
               "compute ceiling | stream with its FMAs |\n|---|---:|---:|---:|---:|---|---:|---:|\n",
            bench_targets()->source, L->isa, BENCH_TARGET_DECODE, BENCH_TARGET_PREFILL_F32,
            BENCH_TARGET_PREFILL_F16, BENCH_TARGET_PREFILL_BF16, BENCH_TARGET_LAGUNA,
            FP8_TARGET_PCT);
    printf("\ntargets (%% of the start-of-run limit / of the limit next to the row):\n");
    int shown = 0;
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        if (b->target <= 0 || !b->r.ran || !b->verdict[0]) continue;
        shown++;
        char pa[32] = "—", ce[48] = "—";
        if (b->adj > 0) snprintf(pa, sizeof pa, "%.1f", b->pct_adj);
        if (b->ceil_pct > 0)
            snprintf(ce, sizeof ce, "%.1f %%%s", b->ceil_pct,
                     b->ceil_pct < b->target ? " (below the target)" : "");
        char st[48] = "—";
        if (b->stream_pct > 0)
            snprintf(st, sizeof st, "%.1f %% (%d FMAs/line)", b->stream_pct, b->stream_fmas);
        fprintf(f, "| %s | %d | %.0f %% | %.1f | %s | %s | %s | %s |\n", b->name, b->threads,
                b->target, b->pct, pa, b->verdict, ce, st);
        char tail[160] = "";
        if (b->ceil_pct > 0)
            snprintf(tail, sizeof tail, "  (compute ceiling %s; stream with its FMAs %s)", ce, st);
        printf("  %-36s %d thr  target %2.0f%%  %5.1f / %5s  %s%s\n", b->name, b->threads,
               b->target, b->pct, pa, b->verdict, tail);
    }
    if (!shown) {
        fputs("\nNo target row ran (or the limits were not measured).\n", f);
        printf("  none in this run\n");
    }
}

/* ------------------------------------------------------------ fp8 rounds */

static void rounds(char *buf, size_t cap, const double *x) {
    snprintf(buf, cap, "%.2f %.2f %.2f", x[0], x[1], x[2]);
}

void bench_fp8_write(FILE *f, const fp8_cmp *c, int n) {
    static const char *dn[2] = {"fp8e4m3", "fp8e5m2"};
    if (f)
        fprintf(f, "\n## fp8 decode against its ceiling\n\nCold decode B=8 kv 4096 (Hq 32, Hkv 8, "
                   "D 128): the bf16, e4m3 and e5m2 rows in %d rounds, their order rotating, "
                   "and in each round a plain read of the fp8 layout (the paged read above with "
                   "1-byte elements, the decode tile's keys a step, no arithmetic): the ceiling "
                   "of an fp8 kernel at that moment.  ms are each round's median batch; *%% of "
                   "ceiling* = the read's median over the fp8 row's median (target %.0f %%); "
                   "*rate vs bf16* = bf16's median over the fp8 row's (information: issue 25 "
                   "wished 1.8x); *compute ceiling* = the most of the read's rate that the "
                   "row's multiply-adds allow at the compute peak measured at the start of the "
                   "run (the read's time over the flops' time at that peak).\n\n| threads | "
                   "cache | ms per round | read ms per round | %% of ceiling | target | verdict | "
                   "compute ceiling | bf16 ms per round | rate vs bf16 |\n"
                   "|---:|---|---|---|---:|---:|---|---:|---|---:|\n",
                FP8_ROUNDS, FP8_TARGET_PCT);
    else
        printf("\nfp8 decode against a plain read of its layout (cold B=8, %d rotating rounds; "
               "target %.0f%% of the read's rate):\n", FP8_ROUNDS, FP8_TARGET_PCT);
    for (int i = 0; i < n; i++) {
        if (!c[i].ran) continue;
        char rd[64], b[64];
        rounds(rd, sizeof rd, c[i].read_ms);
        rounds(b, sizeof b, c[i].bf16_ms);
        for (int d = 0; d < 2; d++) {
            char a[64];
            rounds(a, sizeof a, c[i].ms[d]);
            if (f)
                fprintf(f, "| %d | %s | %s | %s | %.1f | %.0f %% | %s | %.1f %% | %s | %.2fx |\n",
                        c[i].threads, dn[d], a, rd, c[i].pct[d], FP8_TARGET_PCT, c[i].verdict[d],
                        c[i].ceil_pct, b, c[i].ratio[d]);
            else
                printf("  %s %d thr  %s ms  (read %s ms)  %.1f%% of the read  %s  (compute "
                       "ceiling %.1f%%; bf16 %s ms, %.2fx)\n", dn[d], c[i].threads, a, rd,
                       c[i].pct[d], c[i].verdict[d], c[i].ceil_pct, b, c[i].ratio[d]);
        }
    }
}

void bench_fp8_json(FILE *f, const fp8_cmp *c, int n) {
    static const char *dn[2] = {"fp8e4m3", "fp8e5m2"};
    fputs("[", f);
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!c[i].ran) continue;
        for (int d = 0; d < 2; d++) {
            fprintf(f, "%s\n    {\"cache\": \"%s\", \"threads\": %d, \"ms\": [%.3f, %.3f, %.3f], "
                       "\"read_ms\": [%.3f, %.3f, %.3f], \"pct_of_ceiling\": %.1f, "
                       "\"target_pct\": %.0f, \"verdict\": \"%s\", \"compute_ceiling_pct\": "
                       "%.1f, \"bf16_ms\": [%.3f, %.3f, %.3f], \"rate_vs_bf16\": %.3f}",
                    first ? "" : ",", dn[d], c[i].threads, c[i].ms[d][0], c[i].ms[d][1],
                    c[i].ms[d][2], c[i].read_ms[0], c[i].read_ms[1], c[i].read_ms[2], c[i].pct[d],
                    FP8_TARGET_PCT, c[i].verdict[d], c[i].ceil_pct, c[i].bf16_ms[0], c[i].bf16_ms[1],
                    c[i].bf16_ms[2], c[i].ratio[d]);
            first = 0;
        }
    }
    fputs(first ? "]" : "\n  ]", f);
}
