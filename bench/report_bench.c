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
    /* issue 60: the same shares on every table, each of its own ceilings */
    static const bench_target_set t = {"issue 60", 85, 80, {0, 80, 75}, 75, 75};
    return &t;
}

/* What the reports say where the CPU has no VDPBF16PS. */
#define BENCH_NO_DOT "no such instruction on this CPU"

void bench_write_json(FILE *f, const bench_limits *L, const char *tune, const char *engine,
                      const bench_row *rows, int n, const fp8_cmp *fp8, int n_fp8) {
    const bench_target_set *T = bench_targets();
    fprintf(f, "{\n  \"engine\": \"%s\",\n  \"limits\": {\"isa\": \"%s\", \"bf16_dot\": \"%s\", "
               "\"fma_gflops\": [%.2f, %.2f], \"product_step_gflops\": [%.2f, %.2f], "
               "\"bf16_dot_gflops\": [%.2f, %.2f], \"amx_tile_gflops\": [%.2f, %.2f], "
               "\"amx_step_gflops\": [%.2f, %.2f], \"amx_path\": %d, \"dram_read_gbs\": [%.2f, %.2f],\n"
               "             \"per_cpu\": {\"fma_gflops\": [%.2f, %.2f], \"bf16_dot_gflops\": "
               "[%.2f, %.2f], \"dram_read_gbs\": [%.2f, %.2f]}},\n"
               "  \"targets\": {\"source\": \"%s\", \"decode\": %.0f, \"fp8\": %.0f, "
               "\"prefill\": [%.0f, %.0f], \"prefill_bf16\": %.0f, \"laguna\": %.0f},\n"
               "  \"huge_pages\": {\"thp_mode\": \"%s\", \"anon_huge_mib\": %ld},\n"
               "  \"tune\": \"%s\",\n  \"results\": [\n",
            engine, L->isa, L->has_dot ? "VDPBF16PS" : BENCH_NO_DOT, L->fma[1], L->fma[2],
            L->gemm[1], L->gemm[2],
            L->bf16[1], L->bf16[2], L->amx[1], L->amx[2], L->amx_step[1], L->amx_step[2], L->amx_path, L->dram[1], L->dram[2],
            L->fma_c[1], L->fma_c[2],
            L->bf16_c[1], L->bf16_c[2], L->dram_c[1], L->dram_c[2], T->source, T->decode, T->fp8,
            T->prefill[1], T->prefill[2], T->prefill_bf16, T->laguna, L->thp_mode, L->thp_mib,
            tune);
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        const row_result *r = &b->r;
        fprintf(f, "    {\"name\": \"%s\", \"threads\": %d, \"isa\": ", b->name, b->threads);
        json_str(f, r->kernels);
        fprintf(f, ", \"ms\": %.3f, \"gbs\": %.2f, \"gflops\": %.2f, \"pct\": %.1f, \"limit\": ",
                r->sec * 1e3, b->gbs, b->gflops, b->pct);
        json_str(f, b->limit ? b->limit : "");
        fprintf(f, ", \"cpu_share\": %.2f, \"pct_per_cpu\": %.1f, \"pct_fma_per_cpu\": %.1f, "
                   "\"pct_of_start_of_run\": %.1f, \"target_pct\": %.0f, \"verdict\": \"%s\",\n"
                   "     \"status\": \"%s\", \"why\": ",
                r->cpu_share, b->pct_c, b->pct_fma_c, b->pct_start, b->target,
                b->verdict ? b->verdict : "",
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
        const bench_ceiling *c = &b->ceil;
        if (c->n) {
            /* every candidate, in the row's metric, and the one that binds */
            fprintf(f, ",\n     \"ceiling\": {\"binds\": ");
            json_str(f, c->what[c->bind]);
            fprintf(f, ", \"value\": %.2f, \"unit\": \"%s\", \"candidates\": [",
                    c->best[c->bind], b->spec->kind == ROW_DECODE ? "GB/s" : "GFLOP/s");
            for (int k = 0; k < c->n; k++) {
                fprintf(f, "%s{\"what\": ", k ? ", " : "");
                json_str(f, c->what[k]);
                fprintf(f, ", \"start\": %.2f, \"best\": %.2f}", c->start[k], c->best[k]);
            }
            fputs("]}", f);
        }
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
               "per CPU-second granted (where the ceiling is the DRAM read or a compute peak). "
               "*next to it*: the row's binding ceiling measured again right before and after "
               "the row (the better of the two): in a VM the host's other load does not show "
               "in the cpu share.\n\n",
            engine);
    char cpu[256];
    bench_cpu_desc(cpu, sizeof cpu);
    fprintf(f, "Machine: %s.\n\n", cpu);
    fprintf(f, "## Machine limits (measured in the same run, %s loops)\n\n| limit | 1 thread | "
               "2 threads |\n|---|---:|---:|\n", L->isa);
    fprintf(f, "| fp32 FMA peak, %d-lane FMA chains (GFLOP/s) | %.1f (%.1f) | %.1f (%.1f) |\n",
            L->fma_lanes, L->fma[1], L->fma_c[1], L->fma[2], L->fma_c[2]);
    fprintf(f, "| product step: %d x %d register block of FMAs with its operand loads, in L1 "
               "(GFLOP/s) | %.1f | %.1f |\n", L->gemm_rows, L->gemm_vecs, L->gemm[1], L->gemm[2]);
    if (L->has_dot)
        fprintf(f, "| bf16 dot peak, VDPBF16PS (GFLOP/s) | %.1f (%.1f) | %.1f (%.1f) |\n",
                L->bf16[1], L->bf16_c[1], L->bf16[2], L->bf16_c[2]);
    else
        fprintf(f, "| bf16 dot peak, VDPBF16PS | %s | %s |\n", BENCH_NO_DOT, BENCH_NO_DOT);
    if (L->has_amx)
        fprintf(f, "| AMX tile peak, TDPBF16PS (GFLOP/s)%s | %.1f (%.1f) | %.1f (%.1f) |\n",
                L->amx_path ? ": the bf16 prefill rows' peak" : ": not the engine's path",
                L->amx[1], L->amx_c[1], L->amx[2], L->amx_c[2]);
    if (L->has_amx)
        fprintf(f, "| AMX product step: 2 x 2 block of tile products with its operand tile loads, "
                   "in L1 (GFLOP/s)%s | %.1f | %.1f |\n",
                L->amx_path ? "" : ": not the engine's path", L->amx_step[1], L->amx_step[2]);
    fprintf(f, "| DRAM read bandwidth, 2 GiB (GB/s) | %.1f (%.1f) | %.1f (%.1f) |\n", L->dram[1],
            L->dram_c[1], L->dram[2], L->dram_c[2]);
    fprintf(f, "\nIn brackets: per CPU-second granted. The DRAM read limit is the better of a "
               "plain sequential read and the same read with a software prefetch ahead.\n\n"
               "Huge pages: THP mode `%s`; %ld MiB of anonymous huge pages with the 2 GiB "
               "buffer filled (-1: not measured).\n\n", L->thp_mode, L->thp_mib);
    fprintf(f, "## Each row's ceiling\n\nMeasured at the start of the run, before any row "
               "(bench/run_ceiling.c; loops in bench/util_limits*.c, %s).  A decode row's "
               "candidates, in GB/s of the K and V bytes it must read: the DRAM read (cold rows) "
               "or a read of its own footprint again and again (hot rows); the walk of its own "
               "paged layout in the order of the engine's decode tile under the profile `%s` "
               "(the 8 KV heads' K then V pieces of one step in turn, the next step prefetched, "
               "%s), loads only; that walk with the row's arithmetic per 64-byte line (its "
               "elements widened to fp32 by the shortest sequence of the instruction set, then "
               "%d FMAs a vector: one per query head of the KV head); and the compute peak of "
               "its instruction path (the row's bytes in the time its flops take at that peak). "
               "A prefill row's: the compute peak of its path and, on FMAs or AMX tiles, that "
               "path's product step above (the FMAs, or the tile products, of a register-blocked "
               "Q.K^T with the loads they need, in L1); "
               "the Laguna batch's: its roofline at the compute peak and at the product step's "
               "rate.  Each candidate is measured at the start of the run and again right "
               "before and right after its row, and counts at the better of the two next to "
               "the row (in brackets: at the start); the lowest binds.\n\n| row | threads | candidates | "
               "binds |\n"
               "|---|---:|---|---|\n", L->isa, tune[0] ? tune : "none", L->nta ? "NTA" : "T1",
            LIMITS_ARITH_G);
    for (int i = 0; i < n; i++) {
        const bench_ceiling *c = &rows[i].ceil;
        if (!c->n) continue;
        fprintf(f, "| %s | %d | ", rows[i].name, rows[i].threads);
        for (int k = 0; k < c->n; k++)
            fprintf(f, "%s%s %.1f (%.1f)", k ? "; " : "", c->what[k], c->best[k], c->start[k]);
        fprintf(f, " | %s |\n", c->what[c->bind]);
    }
    fputs("\n", f);
    fprintf(f, "## Engine\n\n| case | threads | kernels | ms | GB/s | GFLOP/s | %% of ceiling | "
               "ceiling | cpu share | %% of ceiling per CPU | bf16: %% of FMA peak per CPU | %% of "
               "the lowest start-of-run candidate | err |\n"
               "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        if (!b->r.ran) {
            fprintf(f, "| %s | %d | %s ||||||||||\n", b->name, b->threads, b->r.why);
            continue;
        }
        char gb[32] = "", gf[32] = "", ff[32] = "", ps[32] = "", pc[32] = "";
        if (b->pct_c > 0) snprintf(pc, sizeof pc, "%.1f", b->pct_c);
        if (b->gbs > 0) snprintf(gb, sizeof gb, "%.1f", b->gbs);
        if (b->gflops > 0) snprintf(gf, sizeof gf, "%.1f", b->gflops);
        if (b->pct_fma_c > 0) snprintf(ff, sizeof ff, "%.1f", b->pct_fma_c);
        if (b->pct_start > 0) snprintf(ps, sizeof ps, "%.1f", b->pct_start);
        fprintf(f, "| %s | %d | %s | %.2f | %s | %s | %.1f | %s | %.0f%% | %s | %s | %s | %.2g |\n",
                b->name, b->threads, b->r.kernels, b->r.sec * 1e3, gb, gf, b->pct, b->limit,
                100 * b->r.cpu_share, pc, ff, ps, b->r.max_abs_err);
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
    const bench_target_set *T = bench_targets();
    fprintf(f, "\n## Targets\n\nThe speed targets (%s), each a share of the row's own ceiling "
               "(above; %s loops): decode, every cache, hot and cold, >= %.0f %% (fp8 >= %.0f "
               "%%); prefill f32 and f16 >= %.0f %% on 1 thread and %.0f %% on 2, bf16 >= %.0f "
               "%%, of the compute peak of its path; the Laguna batch >= %.0f %% of its "
               "roofline.  A row meets its target at or above it against its ceiling (each "
               "candidate at the better of its two measurements next to the row); each row names the ceiling "
               "that binds it.\n\n"
               "| row | threads | target | %% of its ceiling | %% of the lowest start-of-run "
               "candidate | verdict | binding ceiling |\n|---|---:|---:|---:|---:|---|---|\n",
            T->source, L->isa, T->decode, T->fp8, T->prefill[1], T->prefill[2], T->prefill_bf16,
            T->laguna);
    printf("\ntargets (%% of the row's ceiling / of the lowest candidate at the start of the run):\n");
    int shown = 0;
    for (int i = 0; i < n; i++) {
        const bench_row *b = &rows[i];
        if (b->target <= 0 || !b->r.ran || !b->verdict[0]) continue;
        shown++;
        char pa[32] = "—";
        if (b->pct_start > 0) snprintf(pa, sizeof pa, "%.1f", b->pct_start);
        fprintf(f, "| %s | %d | %.0f %% | %.1f | %s | %s | %s |\n", b->name, b->threads,
                b->target, b->pct, pa, b->verdict, b->limit);
        printf("  %-38s %d thr  target %2.0f%%  %5.1f / %5s  %-8s  (%s)\n", b->name, b->threads,
               b->target, b->pct, pa, b->verdict, b->limit);
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
        fprintf(f, "\n## fp8 decode beside bf16\n\nInformation beside the fp8 rows' verdicts "
                   "(those are judged against their ceilings, above).  Cold decode B=8 kv 4096 "
                   "(Hq 32, Hkv 8, D 128): the bf16, e4m3 and e5m2 rows in %d rounds, their "
                   "order rotating, and in each round a walk of the fp8 layout with loads only "
                   "(1-byte elements, the decode tile's keys a step).  ms are each round's "
                   "median batch; *%% of the read* = the walk's median over the fp8 row's "
                   "median; *rate vs bf16* = bf16's median over the fp8 row's (issue 25 wished "
                   "1.8x).\n\n| threads | cache | ms per round | read ms per round | %% of "
                   "the read | bf16 ms per round | rate vs bf16 |\n"
                   "|---:|---|---|---|---:|---|---:|\n", FP8_ROUNDS);
    else
        printf("\nfp8 decode beside bf16 and a plain walk of its layout (cold B=8, %d rotating "
               "rounds):\n", FP8_ROUNDS);
    for (int i = 0; i < n; i++) {
        if (!c[i].ran) continue;
        char rd[64], b[64];
        rounds(rd, sizeof rd, c[i].read_ms);
        rounds(b, sizeof b, c[i].bf16_ms);
        for (int d = 0; d < 2; d++) {
            char a[64];
            rounds(a, sizeof a, c[i].ms[d]);
            if (f)
                fprintf(f, "| %d | %s | %s | %s | %.1f | %s | %.2fx |\n", c[i].threads, dn[d], a,
                        rd, c[i].pct[d], b, c[i].ratio[d]);
            else
                printf("  %s %d thr  %s ms  (read %s ms)  %.1f%% of the read  (bf16 %s ms, "
                       "%.2fx)\n", dn[d], c[i].threads, a, rd, c[i].pct[d], b, c[i].ratio[d]);
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
                       "\"read_ms\": [%.3f, %.3f, %.3f], \"pct_of_read\": %.1f, "
                       "\"bf16_ms\": [%.3f, %.3f, %.3f], \"rate_vs_bf16\": %.3f}",
                    first ? "" : ",", dn[d], c[i].threads, c[i].ms[d][0], c[i].ms[d][1],
                    c[i].ms[d][2], c[i].read_ms[0], c[i].read_ms[1], c[i].read_ms[2], c[i].pct[d],
                    c[i].bf16_ms[0], c[i].bf16_ms[1], c[i].bf16_ms[2], c[i].ratio[d]);
            first = 0;
        }
    }
    fputs(first ? "]" : "\n  ]", f);
}
