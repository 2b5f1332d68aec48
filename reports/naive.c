/*
 * naive.c — the same-precision naive baseline of the differential report
 * (see naive.h).  Two passes per query row over the visible keys: logits
 * into a row buffer and their max, then the weights, their sum and the
 * weighted sum of V rows; one division and one rounding to the output
 * dtype at the end.  Where the engine declares a rounding (q_dot, p_dot,
 * acc other than f32) the baseline rounds at the same three points.
 *
 * Deliberately independent of src/ and harness/: masking and the loops
 * are written here again from DESIGN §2; decoding and rounding are the
 * ABI's definitions of the layouts (include/attnguard/dtype.h), never an
 * engine's conversions.
 */
#include "naive.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ formats */

/* x rounded to dt, as a float (f32: unchanged); non-finite values pass
 * through (an infinity stays one even in e4m3fn). */
static float round_to(ag_dtype dt, float x) {
    return dt == AG_F32 || !isfinite(x) ? x : (float)ag_dtype_round(x, dt);
}

/* Element i of a buffer of dtype dt, decoded from its bits. */
static float load(const void *base, size_t i, ag_dtype dt) {
    return (float)ag_dtype_decode(base, i, dt);
}

/* Store v rounded to nearest even into element i of an output buffer; a
 * NaN is stored as the positive quiet NaN of the type. */
static void store(void *base, size_t i, ag_dtype dt, float v) {
    if (dt == AG_F32) ((float *)base)[i] = v;
    else if (isnan(v)) ((uint16_t *)base)[i] = dt == AG_BF16 ? 0x7fc0u : 0x7e00u;
    else ag_dtype_encode(base, i, dt, v);
}

/* ------------------------------------------------------------ masking */

/* DESIGN §2: key k (< seq_len, the caller's loop) is visible from
 * position p when a causal row has k <= p, and k lies in [p - left,
 * p + right] for the bounds that are set. */
static int visible(long k, long p, int causal, int32_t left, int32_t right) {
    if (causal && k > p) return 0;
    if (left >= 0 && k < p - left) return 0;
    if (right >= 0 && k > p + right) return 0;
    return 1;
}

/* The first element of token k's row for KV head kvh, request r. */
static size_t row_at(const naive_input *in, int32_t r, long k, int32_t kvh) {
    const size_t blk = (size_t)in->block_table[(size_t)r * (size_t)in->block_table_stride +
                                               (size_t)(k / in->block_size)];
    const size_t row = blk * (size_t)in->block_size + (size_t)(k % in->block_size);
    return (row * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)in->head_dim;
}

/* A type the baseline rounds to at q_dot, p_dot or acc: not a block type
 * (whose rounding is per block, not per value). */
static int rounds_to(ag_dtype dt) {
    return ag_dtype_traits_of(dt) && !ag_dtype_is_block(dt);
}

static int valid(const naive_input *in) {
    const ag_precision *pr = &in->precision;
    return in->num_reqs >= 1 && in->num_heads >= 1 && in->num_kv_heads >= 1 &&
           in->num_heads % in->num_kv_heads == 0 && in->head_dim >= 1 && in->block_size >= 1 &&
           in->query_start_loc && in->seq_lens && in->causal && in->block_table && in->q &&
           in->k_rows && in->v_rows && ag_dtype_traits_of(in->q_dtype) &&
           ag_dtype_traits_of(in->kv_dtype) &&
           (in->out_dtype == AG_F32 || in->out_dtype == AG_BF16 || in->out_dtype == AG_F16) &&
           rounds_to(pr->q_dot) && rounds_to(pr->p_dot) && rounds_to(pr->acc) &&
           (!ag_dtype_is_fp8(in->kv_dtype) || (in->k_scale > 0 && in->v_scale > 0));
}

/* ------------------------------------------------------------ attention */

int naive_attention(const naive_input *in, void *out) {
    if (!in || !out || !valid(in)) return -1;
    const int32_t H = in->num_heads, D = in->head_dim, g = in->num_heads / in->num_kv_heads;
    const float scale = in->scale > 0 ? in->scale : 1.0f / sqrtf((float)D);
    const int fp8 = ag_dtype_is_fp8(in->kv_dtype);
    const float ks = fp8 ? in->k_scale : 1.0f, vs = fp8 ? in->v_scale : 1.0f;
    const ag_precision pr = in->precision;
    int32_t max_seq = 1;
    for (int32_t r = 0; r < in->num_reqs; r++)
        if (in->seq_lens[r] > max_seq) max_seq = in->seq_lens[r];
    float *logit = malloc((size_t)max_seq * sizeof *logit);
    float *qrow = malloc((size_t)D * sizeof *qrow);
    float *acc = malloc((size_t)D * sizeof *acc);
    if (!logit || !qrow || !acc) {
        free(logit), free(qrow), free(acc);
        return -1;
    }
    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int32_t t0 = in->query_start_loc[r], t1 = in->query_start_loc[r + 1];
        const long seq = in->seq_lens[r];
        const int causal = in->causal[r] != 0;
        for (int32_t t = t0; t < t1; t++) {
            /* causal: the query's own position; non-causal: its index */
            const long p = causal ? seq - (t1 - t0) + (t - t0) : (long)(t - t0);
            for (int32_t h = 0; h < H; h++) {
                const int32_t kvh = h / g;
                const size_t qoff = ((size_t)t * (size_t)H + (size_t)h) * (size_t)D;
                for (int32_t d = 0; d < D; d++)
                    qrow[d] = round_to(pr.q_dot, load(in->q, qoff + (size_t)d, in->q_dtype));
                float m = -INFINITY;
                for (long k = 0; k < seq; k++) {
                    if (!visible(k, p, causal, in->window_left, in->window_right)) continue;
                    const size_t kr = row_at(in, r, k, kvh);
                    float s = 0.0f;
                    for (int32_t d = 0; d < D; d++)
                        s += qrow[d] * (load(in->k_rows, kr + (size_t)d, in->kv_dtype) * ks);
                    s *= scale;
                    if (in->softcap > 0) s = in->softcap * tanhf(s / in->softcap);
                    if (in->alibi_slopes) s += in->alibi_slopes[h] * (float)(k - p);
                    logit[k] = s;
                    if (s > m) m = s;
                }
                if (in->sinks && in->sinks[h] > m) m = in->sinks[h];
                float l = in->sinks ? expf(in->sinks[h] - m) : 0.0f;
                for (int32_t d = 0; d < D; d++) acc[d] = 0.0f;
                for (long k = 0; k < seq; k++) {
                    if (!visible(k, p, causal, in->window_left, in->window_right)) continue;
                    const float w = round_to(pr.p_dot, expf(logit[k] - m));
                    const size_t vr = row_at(in, r, k, kvh);
                    l += w;
                    for (int32_t d = 0; d < D; d++)
                        acc[d] = round_to(pr.acc, acc[d] + w * (load(in->v_rows, vr + (size_t)d,
                                                                     in->kv_dtype) * vs));
                }
                for (int32_t d = 0; d < D; d++)
                    store(out, qoff + (size_t)d, in->out_dtype, l > 0 ? acc[d] / l : 0.0f);
            }
        }
    }
    free(logit);
    free(qrow);
    free(acc);
    return 0;
}
