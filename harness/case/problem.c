/*
 * problem.c — turns a case into the adapter-ABI descriptions and input
 * buffers, deterministically from the case's seed (splitmix64).
 *
 * Owns: the block-table policies (contiguous, shuffled, repeated; the last
 * physical block used and full), the per-layer slopes and sinks, the plain
 * K/V rows, and the decision whether a case is materialized at all.  Does
 * not own what an engine accepts: a case the engine must refuse still gets
 * its raw descriptions (so the refusal can be checked) but no buffers, and
 * nothing here allocates more than max_bytes of inputs or trusts an
 * unchecked product.  Values come from values.c.
 *
 * Streams: every purpose (block shuffle, K, V, each layer's query, each
 * layer's sinks) draws from its own splitmix64 stream derived from the seed,
 * so changing one layer does not move the values of another.
 *
 * A problem holds pointers into itself (group.layers, layer names): never
 * copy the struct after problem_init; pass it by pointer.
 */
#include "problem.h"
#include "rng.h"
#include "validity.h"
#include "values.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_BLOCKS = 1, STREAM_K, STREAM_V, STREAM_Q0 = 16, STREAM_SINKS0 = 32 };

/* ------------------------------------------------------------------- rng */

static uint64_t stream_state(uint64_t seed, uint64_t purpose) {
    uint64_t s = seed ^ (purpose * 0xD1B54A32D192ED03ull);
    (void)rng_next(&s);
    return s;
}

/* -------------------------------------------------------------- validity */

/* Why the case cannot be materialized (the first of its defects, by the
 * one validity model, for an engine without limits), or NULL.  Mixed head
 * counts are not a reason: each layer is valid on its own, so the buffers
 * are built and a test can run a layer against its own plan. */
static const char *case_invalid_reason(const case_spec *c) {
    case_defects d;
    validity_defects(c, NULL, &d);
    if (d.unexpressible) return "layer or request count";
    for (int i = 0; i < d.n; i++)
        if (d.d[i].kind != AG_R_MIXED_HEADS) return case_key_name(d.d[i].key);
    return NULL;
}

/* ------------------------------------------------------------ init/free */

static int fail(problem *p, char *errbuf, size_t errlen, const char *msg) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "problem: %s", msg);
    problem_free(p);
    return -1;
}

/* Checked a*b (+)= into *acc; returns 1 on overflow. */
static int mul_add(size_t *acc, size_t a, size_t b) {
    size_t t;
    if (__builtin_mul_overflow(a, b, &t)) return 1;
    return __builtin_add_overflow(*acc, t, acc);
}

/* With last_block_full: the logical block that should sit at the highest
 * physical id — a full block (all its slots used), else the last block of
 * the longest request; -1 if no request has a block. */
static int64_t block_to_put_last(const case_spec *c, const int64_t *nb) {
    int64_t logical = 0, best = -1, best_len = -1;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (nb[r] > 0 && c->kv_len[r] >= c->block_size) return logical;   /* block 0 is full */
        if (nb[r] > 0 && c->kv_len[r] > best_len) {
            best_len = c->kv_len[r];
            best = logical + nb[r] - 1;
        }
        logical += nb[r];
    }
    return best;
}

/* Block table per policy.  nb[r] = blocks request r needs; the first
 * `needed` logical blocks are handed out in request order, mapped through a
 * seed permutation unless contiguous; padding entries get a spare block. */
static int fill_block_table(problem *p, const int64_t *nb) {
    const case_spec *c = &p->c;
    int32_t nblk = p->num_blocks, stride = p->bt_stride;
    int32_t *perm = malloc((size_t)nblk * sizeof(*perm));
    if (!perm) return -1;
    uint64_t st = stream_state(c->seed, STREAM_BLOCKS);
    for (int32_t i = 0; i < nblk; i++) perm[i] = i;
    if (c->blocks != CASE_BLOCKS_CONTIGUOUS) {
        for (int32_t i = nblk - 1; i > 0; i--) {
            int32_t j = (int32_t)rng_below(&st, (uint64_t)i + 1);
            int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
    }
    if (c->last_block_full) {
        /* Whatever the policy, that block gets the highest physical id, so a
         * read one element past it leaves the cache. */
        int64_t lb = block_to_put_last(c, nb);
        for (int32_t i = 0; lb >= 0 && i < nblk; i++)
            if (perm[i] == nblk - 1) {
                perm[i] = perm[lb];
                perm[lb] = nblk - 1;
                break;
            }
    }
    /* a spare block: valid id, used by nobody (the last logical one) */
    int32_t pad = perm[nblk - 1];
    int64_t logical = 0;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        for (int32_t j = 0; j < stride; j++) {
            int32_t *e = &p->block_table[(size_t)r * (size_t)stride + (size_t)j];
            *e = j < nb[r] ? perm[logical + j] : pad;
        }
        logical += nb[r];
    }
    if (c->blocks == CASE_BLOCKS_REPEATED) {
        /* Prefix-cache style: request 1 always, later ones with chance 1/2,
         * read their first blocks from an earlier request's physical blocks. */
        for (int32_t r = 1; r < c->num_reqs; r++) {
            if (r > 1 && (rng_next(&st) & 1u)) continue;
            int32_t src = (int32_t)rng_below(&st, (uint64_t)r);
            int64_t n = nb[r] < nb[src] ? nb[r] : nb[src];
            if (n < 1) continue;
            int64_t share = 1 + (int64_t)rng_below(&st, (uint64_t)n);
            for (int64_t j = 0; j < share; j++)
                p->block_table[(size_t)r * (size_t)stride + (size_t)j] =
                    p->block_table[(size_t)src * (size_t)stride + (size_t)j];
        }
    }
    if (c->blocks == CASE_BLOCKS_OUTSIDE && c->num_reqs > 0 && nb[0] > 0)
        p->block_table[nb[0] - 1] = nblk;   /* one past the last physical block */
    free(perm);
    return 0;
}

/* Slopes and sinks of layer l as its source says (valid heads only). */
static int layer_arrays(problem *p, int32_t l) {
    const case_spec *c = &p->c;
    const case_layer *L = &c->layers[l];
    ag_layer *d = &p->layers[l];
    const int32_t H = L->num_heads;
    if (H <= 0 || H > CASE_MAX_HEADS) return 0;
    if (L->alibi == CASE_SRC_STANDARD ||
        (L->alibi == CASE_SRC_LIST && (int32_t)L->alibi_off + H <= c->list_len)) {
        if (!(p->alibi[l] = malloc((size_t)H * sizeof(float)))) return -1;
        if (L->alibi == CASE_SRC_STANDARD) case_alibi_standard(H, p->alibi[l]);
        else memcpy(p->alibi[l], c->list + L->alibi_off, (size_t)H * sizeof(float));
        d->alibi_slopes = p->alibi[l];
    }
    if (L->sinks == CASE_SRC_STANDARD ||
        (L->sinks == CASE_SRC_LIST && (int32_t)L->sinks_off + H <= c->list_len)) {
        if (!(p->sinks[l] = malloc((size_t)H * sizeof(float)))) return -1;
        if (L->sinks == CASE_SRC_LIST) {
            memcpy(p->sinks[l], c->list + L->sinks_off, (size_t)H * sizeof(float));
        } else {
            uint64_t st = stream_state(c->seed, (uint64_t)STREAM_SINKS0 + (uint64_t)l);
            for (int32_t h = 0; h < H; h++) p->sinks[l][h] = (float)(2.0 * rng_unit(&st));
        }
        d->sinks = p->sinks[l];
    }
    return 0;
}

/* K or V rows, drawn in the order of the paged layout [block][Hkv][bs][D]
 * that every shipped case and fuzz finding was made with (so they keep
 * their values), stored slot-major [block * bs + slot][Hkv][D]. */
static int kv_fill(problem *p, void *rows, const case_values *v, uint64_t state) {
    const case_spec *c = &p->c;
    const size_t D = (size_t)c->head_dim;
    const size_t H = (size_t)c->num_kv_heads, bs = (size_t)c->block_size;
    size_t rb, all;   /* bytes of one head's row (whole blocks of a block dtype), of all */
    if (ag_dtype_bytes(c->kv_dtype, D, &rb) || ag_dtype_bytes(c->kv_dtype, p->row_elems, &all))
        return -1;    /* init checked both */
    unsigned char *tmp = malloc(all ? all : 1);
    if (!tmp) return -1;
    values_fill(tmp, p->row_elems, D, c->kv_dtype, v, state);
    for (size_t b = 0; b < (size_t)p->num_blocks; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t s = 0; s < bs; s++)
                memcpy((unsigned char *)rows + ((b * bs + s) * H + h) * rb,
                       tmp + ((b * H + h) * bs + s) * rb, rb);
    free(tmp);
    return 0;
}

static int init(problem *p, const case_spec *c, size_t max_bytes, int tensors, char *errbuf,
                size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!p) return -1;
    memset(p, 0, sizeof(*p));
    if (!c) return fail(p, errbuf, errlen, "NULL case");
    p->c = *c;
    c = &p->c;

    int32_t nl = c->num_layers < 0 ? 0 : (c->num_layers > CASE_MAX_LAYERS ? CASE_MAX_LAYERS
                                                                           : c->num_layers);
    int32_t nr = c->num_reqs < 0 ? 0 : (c->num_reqs > CASE_MAX_REQS ? CASE_MAX_REQS
                                                                     : c->num_reqs);
    const char *why = case_invalid_reason(c);
    p->unmaterialized_reason = why;

    /* ---- layers (raw values) ---- */
    for (int32_t l = 0; l < nl; l++) {
        const case_layer *L = &c->layers[l];
        ag_layer *d = &p->layers[l];
        snprintf(p->layer_names[l], sizeof p->layer_names[l], "layers.%d", (int)l);
        d->name = p->layer_names[l];
        d->num_heads = L->num_heads;
        case_layer_window(L, &d->window_left, &d->window_right);
        d->softcap = L->softcap;
        d->scale = L->scale;
        d->k_scale = L->k_scale;
        d->v_scale = L->v_scale;
        if (layer_arrays(p, l)) return fail(p, errbuf, errlen, "out of memory (slopes, sinks)");
    }

    /* ---- group ---- */
    p->group.layers = nl ? p->layers : NULL;
    p->group.num_layers = nl;
    p->group.num_kv_heads = c->num_kv_heads;
    p->group.head_dim = c->head_dim;
    p->group.block_size = c->block_size;
    p->group.kv_dtype = c->kv_dtype;
    p->group.q_dtype = c->q_dtype;
    p->group.out_dtype = c->out_dtype;
    p->group.model_num_heads = c->model_num_heads;
    p->group.num_threads = c->threads;
    p->group.options = c->options[0] ? c->options : NULL;

    /* ---- batch: prefix sums and seq_lens from the raw values ---- */
    p->qsl = calloc((size_t)nr + 1, sizeof(int32_t));
    p->seq_lens = calloc((size_t)(nr ? nr : 1), sizeof(int32_t));
    p->causal = calloc((size_t)(nr ? nr : 1), 1);
    if (!p->qsl || !p->seq_lens || !p->causal) return fail(p, errbuf, errlen, "out of memory (batch)");
    int64_t acc = 0;
    for (int32_t r = 0; r < nr; r++) {
        acc += c->q_len[r];
        /* saturate: a sum outside int32 is an invalid batch either way */
        p->qsl[r + 1] = acc > INT32_MAX ? INT32_MAX : (acc < INT32_MIN ? INT32_MIN : (int32_t)acc);
        p->seq_lens[r] = c->kv_len[r];
        p->causal[r] = c->causal[r];
    }
    p->num_tokens = p->qsl[nr];

    /* ---- block geometry (64-bit, then checked into int32) ---- */
    int64_t nb[CASE_MAX_REQS] = {0};
    int64_t max_nb = 0, needed = 0;
    for (int32_t r = 0; r < nr; r++) {
        if (c->block_size > 0 && c->kv_len[r] > 0)
            nb[r] = ((int64_t)c->kv_len[r] + c->block_size - 1) / c->block_size;
        if (nb[r] > max_nb) max_nb = nb[r];
        needed += nb[r];
    }
    int64_t stride = max_nb + 1;
    int64_t nblocks = needed + PROBLEM_SPARE_BLOCKS;
    size_t bt_bytes = 0;
    int geometry_ok = stride <= INT32_MAX && nblocks <= INT32_MAX &&
                      !mul_add(&bt_bytes, (size_t)nr * (size_t)stride, sizeof(int32_t)) &&
                      bt_bytes <= max_bytes;
    if (!geometry_ok) {
        /* Descriptions only: a one-entry-per-request table with a valid id. */
        stride = 1;
        if (nblocks > INT32_MAX) nblocks = INT32_MAX;
        if (!why) why = p->unmaterialized_reason = "block table exceeds max_bytes";
    }
    p->bt_stride = (int32_t)stride;
    p->num_blocks = (int32_t)nblocks;
    p->block_table = calloc((size_t)(nr ? nr : 1) * (size_t)stride, sizeof(int32_t));
    if (!p->block_table) return fail(p, errbuf, errlen, "out of memory (block table)");

    p->batch.num_reqs = c->num_reqs;
    p->batch.query_start_loc = p->qsl;
    p->batch.seq_lens = p->seq_lens;
    p->batch.causal = p->causal;
    p->batch.block_table = p->block_table;
    p->batch.block_table_stride = p->bt_stride;
    p->batch.num_blocks = p->num_blocks;

    /* Planning needs the real block table (a defective case's too: its
     * defect may be in the table) but none of the values. */
    if (geometry_ok && fill_block_table(p, nb))
        return fail(p, errbuf, errlen, "out of memory (blocks)");
    if (why) return 0;   /* the engine must refuse it: no buffers */
    if (!tensors) {
        p->unmaterialized_reason = "descriptions only (no tensors requested)";
        return 0;
    }

    /* ---- sizes, all checked, against max_bytes ---- */
    /* bytes through ag_dtype_bytes: a block dtype's rows are whole blocks
     * (validity refuses a head_dim that is not; a q dtype of blocks is a
     * feature no engine has, and such rows are not formed either) */
    size_t total = bt_bytes, row_elems = 0, q_elems[CASE_MAX_LAYERS] = {0};
    size_t kv_bytes = 0, q_bytes[CASE_MAX_LAYERS] = {0};
    if (ag_dtype_bytes(c->q_dtype, (size_t)c->head_dim, &q_bytes[0]) ||
        ag_dtype_bytes(c->kv_dtype, (size_t)c->head_dim, &kv_bytes)) {
        p->unmaterialized_reason = "head_dim not whole blocks of a block dtype";
        return 0;
    }
    int over = __builtin_mul_overflow((size_t)p->num_blocks, (size_t)c->block_size, &row_elems) ||
               __builtin_mul_overflow(row_elems, (size_t)c->num_kv_heads, &row_elems) ||
               __builtin_mul_overflow(row_elems, (size_t)c->head_dim, &row_elems) ||
               ag_dtype_bytes(c->kv_dtype, row_elems, &kv_bytes) ||
               mul_add(&total, kv_bytes, 2);
    for (int32_t l = 0; l < nl && !over; l++) {
        over = __builtin_mul_overflow((size_t)p->num_tokens, (size_t)c->layers[l].num_heads,
                                      &q_elems[l]) ||
               __builtin_mul_overflow(q_elems[l], (size_t)c->head_dim, &q_elems[l]) ||
               ag_dtype_bytes(c->q_dtype, q_elems[l], &q_bytes[l]) ||
               mul_add(&total, q_bytes[l], 1);
    }
    p->input_bytes = over ? SIZE_MAX : total;
    if (over || total > max_bytes) {
        p->unmaterialized_reason = "inputs exceed max_bytes";
        return 0;
    }

    /* ---- buffers (the block table is filled above) ---- */
    p->row_elems = row_elems;
    const int fill = tensors == 1;
    p->k_rows = fill ? malloc(kv_bytes ? kv_bytes : 1) : calloc(kv_bytes ? kv_bytes : 1, 1);
    p->v_rows = fill ? malloc(kv_bytes ? kv_bytes : 1) : calloc(kv_bytes ? kv_bytes : 1, 1);
    if (!p->k_rows || !p->v_rows) return fail(p, errbuf, errlen, "out of memory (K/V rows)");
    const size_t D = (size_t)c->head_dim;
    if (fill && (kv_fill(p, p->k_rows, &c->values[CASE_T_K], stream_state(c->seed, STREAM_K)) ||
                 kv_fill(p, p->v_rows, &c->values[CASE_T_V], stream_state(c->seed, STREAM_V))))
        return fail(p, errbuf, errlen, "out of memory (K/V rows)");
    for (int32_t l = 0; l < nl; l++) {
        p->q[l] = fill ? malloc(q_bytes[l] ? q_bytes[l] : 1)
                       : calloc(q_bytes[l] ? q_bytes[l] : 1, 1);
        if (!p->q[l]) return fail(p, errbuf, errlen, "out of memory (query)");
        if (fill)
            values_fill(p->q[l], q_elems[l], D, c->q_dtype, &c->values[CASE_T_Q],
                        stream_state(c->seed, (uint64_t)STREAM_Q0 + (uint64_t)l));
    }
    p->materialized = 1;
    p->unmaterialized_reason = NULL;
    return 0;
}

void problem_free(problem *p) {
    if (!p) return;
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        free(p->alibi[l]);
        free(p->sinks[l]);
        free(p->q[l]);
    }
    free(p->qsl);
    free(p->seq_lens);
    free(p->causal);
    free(p->block_table);
    free(p->k_rows);
    free(p->v_rows);
    memset(p, 0, sizeof(*p));
}

size_t problem_out_elems(const problem *p, int32_t l) {
    if (!p || l < 0 || l >= p->c.num_layers || l >= CASE_MAX_LAYERS) return 0;
    int32_t h = p->c.layers[l].num_heads, d = p->c.head_dim, t = p->num_tokens;
    if (h <= 0 || d <= 0 || t <= 0) return 0;
    size_t n;
    if (__builtin_mul_overflow((size_t)t, (size_t)h, &n) ||
        __builtin_mul_overflow(n, (size_t)d, &n))
        return 0;
    return n;
}

int64_t *problem_identity_slots(const problem *p) {
    const size_t n = (size_t)p->num_blocks * (size_t)p->c.block_size;
    int64_t *s = malloc((n ? n : 1) * sizeof *s);
    for (size_t i = 0; s && i < n; i++) s[i] = (int64_t)i;
    return s;
}

int problem_init(problem *p, const case_spec *c, size_t max_bytes, char *errbuf, size_t errlen) {
    return init(p, c, max_bytes, 1, errbuf, errlen);
}

int problem_init_descriptions(problem *p, const case_spec *c, size_t max_bytes, char *errbuf,
                              size_t errlen) {
    return init(p, c, max_bytes, 0, errbuf, errlen);
}

int problem_init_zeros(problem *p, const case_spec *c, size_t max_bytes, char *errbuf,
                       size_t errlen) {
    return init(p, c, max_bytes, 2, errbuf, errlen);
}

