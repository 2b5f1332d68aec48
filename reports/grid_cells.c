/*
 * grid_cells.c — see grid_cells.h.
 *
 * Blocks (each cell's "origin"):
 *   crossed         kv dtype (f32, bf16, f16) x head_dim x group x window,
 *                   crossed in full (216); everything else dealt out;
 *   fp8             fp8 KV (e4m3, e5m2) with k/v scales;
 *   causality       batches of causal and non-causal requests together;
 *   window-lr       (left, right) windows on non-causal and mixed batches;
 *   prefill-normal  bf16/f16-KV prefill on normal inputs (vLLM's randn)
 *                   beside uniform ones, on every engine variant;
 *   laguna-xs       the literal Laguna XS groups, on every engine variant.
 * Dealt dimensions (a seeded, balanced permutation per block, so each value
 * lands in many cells and in varied company): soft cap, sinks, ALiBi,
 * batch shape, split policy, threads, block size, q/out dtype (the KV
 * dtype, or f32), value distribution, causality, fp8 scales; grid.c deals
 * each engine's variants the same way.  Sequence lengths shrink with the
 * cost of a key (heads x head_dim) so that the reference stays cheap.
 */
#include "grid_cells.h"

#include "../harness/case/problem.h"
#include "../harness/case/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- dimensions */

/* GQA ratios 1, 4, 6, 8 (MQA) and the two Laguna XS layer kinds, each its
 * own attention group (an engine refuses a group that mixes them). */
const grid_group grid_groups[] = {
    {"mha-8/8", 8, 8},          {"gqa-16/4", 16, 4},          {"gqa-12/2", 12, 2},
    {"mqa-8/1", 8, 1},          {"laguna-48/8", 48, 8},       {"laguna-64/8", 64, 8},
};
enum { G_MHA, G_GQA16, G_GQA12, G_MQA, G_LAGUNA48, G_LAGUNA64 };

static const float softcaps[] = {0.0f, 0.5f, 50.0f};
const char *const grid_mode_names[] = {"decode", "prefill", "mixed"};
enum { MODE_DECODE, MODE_PREFILL, MODE_MIXED };
static const int32_t splits[] = {AG_SPLIT_AUTO, AG_SPLIT_OFF, AG_SPLIT_ON, AG_SPLIT_FIXED};
const char *const grid_split_names[] = {"auto", "off", "on", "fixed3"};
static const int32_t thread_counts[] = {1, 2, 3};
static const int32_t block_sizes[] = {16, 32, 7};
enum { IO_KV, IO_F32 };   /* q and out: the KV dtype (bf16 for fp8 KV), or f32 */
const char *const grid_caus_names[] = {"causal", "noncausal", "mixed"};
enum { CAUS_CAUSAL, CAUS_NONCAUSAL, CAUS_MIXED };
/* fp8 (k_scale, v_scale): none, vLLM-like small ones, and a large k */
static const float fp8_scales[][2] = {{1.0f, 1.0f}, {0.5f, 2.0f}, {3.0f, 0.25f}};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------ utilities */

static uint64_t mix(uint64_t *s) { return rng_next(s); }

void grid_deal(int *out, int n, int k, uint64_t *rng) {
    for (int i = 0; i < n; i++) out[i] = i % k;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(mix(rng) % (uint64_t)(i + 1));
        int t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

static int32_t clampi(int64_t v, int64_t lo, int64_t hi) {
    return (int32_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* ------------------------------------------------------------- batches */

/* Fill the requests of a cell's case; lengths follow the key budget. */
static void make_batch(const grid_cell *ce, case_spec *c, uint64_t *rng) {
    const grid_group *gs = &grid_groups[ce->group];
    /* ~1.6e7 multiply-adds per pass of the reference at 2*Hq*D per pair */
    int64_t budget = 16000000 / ((int64_t)gs->heads * ce->head_dim);
    if (budget < 1500) budget = 1500;
    if (budget > 40000) budget = 40000;
    const int wide = ce->wl >= 511;   /* make a 512 window bite */
    int n = 0;
    if (ce->mode == MODE_DECODE) {
        int32_t l1 = clampi(budget / 2, 64, 1000);
        if (wide && l1 < 530) l1 = 530;
        c->q_len[n] = 1; c->kv_len[n++] = l1;
        c->q_len[n] = 1; c->kv_len[n++] = 1 + (int32_t)(mix(rng) % (uint64_t)(l1 / 3 + 1));
        c->q_len[n] = 1; c->kv_len[n++] = 1;
    } else if (ce->mode == MODE_PREFILL) {
        int32_t l1 = clampi((int64_t)sqrt((double)budget * 1.5), 8, 300);
        c->q_len[n] = l1; c->kv_len[n++] = l1;
        int32_t l2 = 1 + (int32_t)(mix(rng) % 40u);
        c->q_len[n] = l2; c->kv_len[n++] = l2;
    } else {
        /* chunked prefill continuing a long context, a decode, a fresh prefill */
        int32_t k = clampi(budget / 6, 40, 700);
        if (wide && k < 530) k = 530;
        int32_t chunk = clampi(budget / (3 * (int64_t)k), 2, 64);
        c->q_len[n] = chunk; c->kv_len[n++] = k;
        c->q_len[n] = 1; c->kv_len[n++] = clampi(budget / 3, 32, 800);
        int32_t fresh = clampi((int64_t)sqrt((double)budget / 3.0), 4, 100);
        c->q_len[n] = fresh; c->kv_len[n++] = fresh;
        c->q_len[n] = 1; c->kv_len[n++] = 1 + (int32_t)(mix(rng) % 200u);
    }
    c->num_reqs = n;
    /* mixed: even requests non-causal (the chunk, so a non-causal row with
     * q_len < seq_len is always there), odd ones causal */
    for (int r = 0; r < n; r++)
        c->causal[r] = ce->caus == CAUS_CAUSAL ? 1 : ce->caus == CAUS_NONCAUSAL ? 0 : (r % 2);
}

void grid_cell_case(const grid_cell *ce, uint64_t seed, case_spec *c) {
    case_default(c);
    const grid_group *gs = &grid_groups[ce->group];
    snprintf(c->name, sizeof c->name, "grid-%d", ce->id);
    c->num_layers = 1;
    case_layer *L = &c->layers[0];
    L->num_heads = gs->heads;
    L->window = -1;
    L->window_left = ce->wl;
    L->window_right = ce->wr;
    L->softcap = ce->softcap;
    L->sinks = ce->sinks ? CASE_SRC_STANDARD : CASE_SRC_NONE;
    L->alibi = ce->alibi ? CASE_SRC_STANDARD : CASE_SRC_NONE;
    L->k_scale = ce->k_scale;
    L->v_scale = ce->v_scale;
    c->model_num_heads = gs->heads;
    c->num_kv_heads = gs->kv_heads;
    c->head_dim = ce->head_dim;
    c->block_size = ce->block_size;
    c->q_dtype = ce->q;
    c->kv_dtype = ce->kv;
    c->out_dtype = ce->out;
    for (int t = 0; t < CASE_T_COUNT; t++) {
        c->values[t].dist = (uint8_t)ce->dist;
        c->values[t].amp = 1.0f;
    }
    c->blocks = (case_blocks)(ce->id % 2 ? CASE_BLOCKS_SHUFFLED : CASE_BLOCKS_CONTIGUOUS);
    c->threads = ce->threads;
    c->split = splits[ce->split];
    c->split_count = 3;
    c->seed = seed * 1000003u + (uint64_t)ce->id;
    c->expect = AG_R_NONE;
    uint64_t rng = c->seed ^ 0x5eedu;
    make_batch(ce, c, &rng);
}

/* The problem's shape for the JSON, and whether a non-causal row's
 * position (DESIGN §2: p = i) changes its output: a non-causal request
 * with q_len < seq_len and a window, or ALiBi with sinks. */
void grid_describe(const grid_cell *ce, const case_spec *c, grid_cell_info *ci) {
    memset(ci, 0, sizeof *ci);
    ci->num_reqs = c->num_reqs;
    size_t used = 0;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (used + 24 < sizeof ci->reqs)
            used += (size_t)snprintf(ci->reqs + used, sizeof ci->reqs - used, "%s%d/%d",
                                     r ? "," : "", (int)c->q_len[r], (int)c->kv_len[r]);
        if ((size_t)r + 1 < sizeof ci->causal_flags) ci->causal_flags[r] = c->causal[r] ? '1' : '0';
        const int64_t seq = c->kv_len[r], ql = c->q_len[r];
        ci->num_tokens += (int32_t)ql;
        /* ALiBi alone shifts a row's logits by a constant: only a sink,
         * which does not move, makes the shift visible */
        if (!c->causal[r] && ql < seq && (ce->wl >= 0 || ce->wr >= 0 || (ce->alibi && ce->sinks)))
            ci->nc_positions = 1;
        for (int64_t i = 0; i < ql; i++) {
            const int64_t p = c->causal[r] ? seq - ql + i : i;
            int64_t lo = ce->wl >= 0 ? p - ce->wl : 0, hi = seq - 1;
            if (c->causal[r]) hi = p;
            else if (ce->wr >= 0 && p + ce->wr < hi) hi = p + ce->wr;
            if (lo < 0) lo = 0;
            if (hi >= lo) ci->pairs += hi - lo + 1;
        }
    }
}

/* --------------------------------------------------------------- cells */

static void resolve_io(grid_cell *ce) {
    /* fp8 KV serves bf16 models */
    const ag_dtype kv_io = ag_dtype_is_fp8(ce->kv) ? AG_BF16 : ce->kv;
    ce->q = ce->out = ce->io == IO_F32 ? AG_F32 : kv_io;
}

/* The dimensions every block deals, from one rng stream per block. */
typedef struct dealt {
    int cap[GRID_MAX_CELLS], sink[GRID_MAX_CELLS], alibi[GRID_MAX_CELLS], mode[GRID_MAX_CELLS], split[GRID_MAX_CELLS],
        thr[GRID_MAX_CELLS], bs[GRID_MAX_CELLS], io[GRID_MAX_CELLS], dist[GRID_MAX_CELLS], caus[GRID_MAX_CELLS],
        scale[GRID_MAX_CELLS];
} dealt;

/* ALiBi in a quarter of the cells; causality as `caus_k` says (core: a
 * quarter non-causal; other blocks their own). */
static void deal_block(dealt *d, int n, int caus_k, uint64_t *rng) {
    grid_deal(d->cap, n, N_OF(softcaps), rng);
    grid_deal(d->sink, n, 2, rng);
    grid_deal(d->alibi, n, 4, rng);
    grid_deal(d->mode, n, N_OF(grid_mode_names), rng);
    grid_deal(d->split, n, N_OF(splits), rng);
    grid_deal(d->thr, n, N_OF(thread_counts), rng);
    grid_deal(d->bs, n, N_OF(block_sizes), rng);
    grid_deal(d->io, n, 2, rng);
    grid_deal(d->dist, n, 2, rng);
    grid_deal(d->caus, n, caus_k, rng);
    grid_deal(d->scale, n, N_OF(fp8_scales), rng);
}

static void apply_dealt(grid_cell *ce, const dealt *d, int i) {
    ce->softcap = softcaps[d->cap[i]];
    ce->sinks = d->sink[i];
    ce->alibi = d->alibi[i] == 0;
    ce->mode = d->mode[i];
    ce->split = d->split[i];
    ce->threads = thread_counts[d->thr[i]];
    ce->block_size = block_sizes[d->bs[i]];
    ce->io = d->io[i];
    ce->dist = d->dist[i] ? CASE_DIST_NORMAL : CASE_DIST_UNIFORM;
    ce->k_scale = ce->v_scale = 1.0f;
    if (ag_dtype_is_fp8(ce->kv)) {
        ce->k_scale = fp8_scales[d->scale[i]][0];
        ce->v_scale = fp8_scales[d->scale[i]][1];
    }
    ce->every_variant = 0;
}

static grid_cell *new_cell(grid_cell *cells, int *n, const char *origin) {
    grid_cell *ce = &cells[*n];
    memset(ce, 0, sizeof *ce);
    ce->id = (*n)++;
    ce->origin = origin;
    return ce;
}

static void set_window(grid_cell *ce, int32_t w) {
    ce->wl = ce->wr = w > 0 ? w - 1 : -1;   /* W: W-1 keys each way */
}

int grid_build_cells(grid_cell *cells, uint64_t seed) {
    static dealt d;
    int n = 0;
    uint64_t rng = seed ^ 0xa77e1d5ull;

    /* crossed: the core product, as served by decoders and encoders */
    static const ag_dtype core_kv[] = {AG_F32, AG_BF16, AG_F16};
    static const int32_t core_d[] = {64, 80, 128, 256};
    static const int32_t core_w[] = {-1, 7, 512};
    int k = 0;
    deal_block(&d, N_OF(core_kv) * N_OF(core_d) * N_OF(grid_groups) * N_OF(core_w), 4, &rng);
    for (int a = 0; a < N_OF(core_kv); a++)
        for (int b = 0; b < N_OF(core_d); b++)
            for (int g = 0; g < N_OF(grid_groups); g++)
                for (int w = 0; w < N_OF(core_w); w++, k++) {
                    grid_cell *ce = new_cell(cells, &n, "crossed");
                    ce->kv = core_kv[a];
                    ce->head_dim = core_d[b];
                    ce->group = g;
                    set_window(ce, core_w[w]);
                    apply_dealt(ce, &d, k);
                    ce->caus = d.caus[k] == 3 ? CAUS_NONCAUSAL : CAUS_CAUSAL;
                    resolve_io(ce);
                }

    /* fp8 KV with scales (vLLM's k_scale / v_scale) */
    static const ag_dtype f8[] = {AG_FP8_E4M3, AG_FP8_E5M2};
    static const int32_t f8_d[] = {64, 128};
    static const int f8_g[] = {G_GQA16, G_MQA, G_LAGUNA64};
    static const int32_t f8_w[] = {-1, 512};
    k = 0;
    deal_block(&d, 2 * 2 * 3 * 2, 4, &rng);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int g = 0; g < 3; g++)
                for (int w = 0; w < 2; w++, k++) {
                    grid_cell *ce = new_cell(cells, &n, "fp8");
                    ce->kv = f8[a];
                    ce->head_dim = f8_d[b];
                    ce->group = f8_g[g];
                    set_window(ce, f8_w[w]);
                    apply_dealt(ce, &d, k);
                    ce->caus = d.caus[k] == 3 ? CAUS_NONCAUSAL : CAUS_CAUSAL;
                    resolve_io(ce);
                }

    /* causal and non-causal requests in one batch (vLLM's per-request flag) */
    static const ag_dtype cz_kv[] = {AG_F32, AG_BF16};
    static const int32_t cz_d[] = {64, 128};
    static const int cz_g[] = {G_MHA, G_GQA16, G_LAGUNA48};
    k = 0;
    deal_block(&d, 2 * 2 * 3 * 3, 1, &rng);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int g = 0; g < 3; g++)
                for (int w = 0; w < N_OF(core_w); w++, k++) {
                    grid_cell *ce = new_cell(cells, &n, "causality");
                    ce->kv = cz_kv[a];
                    ce->head_dim = cz_d[b];
                    ce->group = cz_g[g];
                    set_window(ce, core_w[w]);
                    apply_dealt(ce, &d, k);
                    ce->mode = MODE_MIXED;
                    ce->caus = CAUS_MIXED;
                    resolve_io(ce);
                }

    /* (left, right) windows: a causal row sees only k <= p, so they differ
     * from W-shaped ones on non-causal rows */
    static const ag_dtype lr_kv[] = {AG_F32, AG_F16};
    static const int lr_g[] = {G_GQA12, G_MQA};
    static const int32_t lr_w[][2] = {{6, 2}, {0, 15}, {31, 0}, {511, 100}};
    k = 0;
    deal_block(&d, 2 * 2 * 2 * 4, 2, &rng);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int g = 0; g < 2; g++)
                for (int w = 0; w < 4; w++, k++) {
                    grid_cell *ce = new_cell(cells, &n, "window-lr");
                    ce->kv = lr_kv[a];
                    ce->head_dim = cz_d[b];
                    ce->group = lr_g[g];
                    ce->wl = lr_w[w][0];
                    ce->wr = lr_w[w][1];
                    apply_dealt(ce, &d, k);
                    ce->caus = d.caus[k] ? CAUS_MIXED : CAUS_NONCAUSAL;
                    resolve_io(ce);
                }

    /* On every engine variant: bf16/f16-KV prefill on normal inputs beside
     * uniform ones (the bf16-KV prefill rounding of attnguard's tune=amd
     * is measured here on vLLM's randn inputs), and Laguna XS as served
     * (full layers: 48 heads, no window; sliding: 64 heads, window 512;
     * bf16, D 128, 8 KV heads; a mixed batch with split on, then pure
     * decode, both cores).  One problem and reference per cell, whatever
     * the number of variants. */
    static const ag_dtype pn_kv[] = {AG_BF16, AG_F16};
    static const int32_t pn_d[] = {64, 128};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int io = 0; io < 2; io++)
                for (int dist = 0; dist < 2; dist++) {
                    grid_cell *ce = new_cell(cells, &n, "prefill-normal");
                    ce->kv = pn_kv[a];
                    ce->head_dim = pn_d[b];
                    ce->group = G_GQA16;
                    set_window(ce, -1);
                    ce->mode = MODE_PREFILL;
                    ce->split = 0;
                    ce->threads = 2;
                    ce->block_size = 16;
                    ce->io = io;
                    ce->dist = dist ? CASE_DIST_UNIFORM : CASE_DIST_NORMAL;
                    ce->caus = CAUS_CAUSAL;
                    ce->k_scale = ce->v_scale = 1.0f;
                    ce->every_variant = 1;
                    resolve_io(ce);
                }
    for (int q = 0; q < 8; q++) {
        grid_cell *ce = new_cell(cells, &n, "laguna-xs");
        ce->kv = AG_BF16;
        ce->head_dim = 128;
        ce->group = (q % 2) ? G_LAGUNA64 : G_LAGUNA48;
        set_window(ce, (q % 2) ? 512 : -1);
        ce->mode = (q / 2) % 2 ? MODE_DECODE : MODE_MIXED;
        ce->split = (q / 2) % 2 ? 0 : 2;          /* auto; on */
        ce->threads = 2;
        ce->block_size = 16;
        ce->io = q / 4;                           /* bf16 q/out, then f32 */
        ce->dist = CASE_DIST_UNIFORM;
        ce->caus = CAUS_CAUSAL;
        ce->k_scale = ce->v_scale = 1.0f;
        ce->every_variant = 1;
        resolve_io(ce);
    }
    return n;
}
