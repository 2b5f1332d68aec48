/*
 * avx512_decode.c — the AVX-512 tile for single-token items (decode, and
 * the pieces of a split decode row): n_tok = 1 and at most AVX512_DEC_MAX_ROWS
 * query heads per KV head.  Both AVX-512 tables route such items here
 * (table_avx512.c, table_avx512bf16.c); everything else takes the general
 * flash-style tile.
 *
 * Why a separate tile: a decode item reads every K and V byte once and does
 * only g (= 4 for Llama-style GQA) multiply-adds per element, and the
 * general tile's transpose of each K chunk (shuffles on the FMA ports)
 * would cost more than the dot products themselves.  Here:
 *
 *   Q.K  keys 4 at a time straight from the cache: per 16-dim slice, 4 K
 *        loads and AVX512_DR = 4 query rows feed 16 FMAs into 16 accumulators;
 *        the horizontal sums are a transpose-and-add tree (~3 shuffles per
 *        key and row).  bf16 K is widened exactly with one AND (odd
 *        elements) and one shift (even elements) per 32, against a copy of
 *        q whose dims are permuted the same way; f16 with VCVTPH2PS; fp8
 *        by way of f16 (avx512_inl.h), e4m3 left at 2^-8 times its value
 *        with q and the weights times 2^8 (exact), and its NaN codes
 *        tested per step, 64 at a time, not per widening.  q stays fp32:
 *        nothing is rounded.
 *   softmax and P.V are the general tile's (avx512_inl.h): one visible
 *        interval for every row, V widened on the fly.
 *   memory: row addresses are walked block by block (no division per
 *        key), and the next step's K and V lines are prefetched one per
 *        load of this step (the paged layout puts a head's consecutive
 *        blocks Hkv blocks apart, so the hardware streamer restarts at
 *        every block): K's in the loads' order, V's in address order.
 *   heads: the executor hands a run of several KV heads' items of one
 *        token at once (attn_tile_heads_fn), walked chunk by chunk, every
 *        head in turn, so that adjacent pieces of the same blocks are read
 *        back to back.
 *
 * (fp8 on the avx512bf16 table may take a dot-product path: this driver with
 * avx512bf16_dec8.c's micro-kernels, attn__dec_dot.)  Numerics: as the
 * general avx512 tile (fp32 products and sums in another association than
 * the portable kernel; same exp and masking).  Why: docs/perf-notes.md.
 */
#include "avx512_inl.h"
#include "mask.h"

#define AVX512_DR 4              /* rows per Q.K register block */
#define DEC_SM_MAX 8     /* bounds a profile's sm_keys (the line list on the stack) */
#define AVX512_DEC_MAX_ROWS 16   /* larger groups amortise the general tile's transpose */
#define AVX512_DEC_MAX_D 256     /* bounds the on-stack copies of q and acc (16 KiB each) */
/* one item at the bounds, or several heads */
#define AVX512_DEC_STACK_FLOATS (AVX512_DEC_MAX_ROWS * AVX512_DEC_MAX_D)
/* Keys per chunk, at most DT (the bound of the tile's stack arrays: row
 * pointers, scores).  The chunk actually used, and the prefetch hint, come
 * from the CPU's profile below. */
#define DT ATTN__AVX512_DEC_KEYS

/* ------------------------------------------------------------ profiles */

/* How the tile walks memory depends on the CPU family more than on
 * anything else measured, so it has two profiles, picked at run time by
 * the tuning profile (kernels.h, attn_tile_args.tune):
 *
 *   L2  (Intel, tuned on Sapphire Rapids): T1 prefetches, chunks of 64 keys
 *       for bf16/f16 caches and 32 for fp32.
 *   NTA (AMD, tuned on Zen 5): non-temporal prefetches, chunks of 32 keys
 *       for bf16/f16 and 16 for fp32; fp32 prefetches half a step ahead,
 *       the softmax issues the prefetches of sm_keys keys per step, and
 *       Q.K's prefetches of V rows (fp32) go in address order, because on
 *       that core prefetches pay only when they arrive spread out.
 *
 * The hint reaches every K and V prefetch of the tile (fp32 and f16 V
 * through pv_rows' NTA instances in avx512_inl.h).  Both profiles compute
 * the same values up to the chunking of the online softmax (rounding
 * only); the tests run the tile under each.  The measurements behind each
 * choice, and what was tried and not kept: docs/perf-notes.md. */
typedef struct dec_profile {
    int nta;        /* prefetch hint: 1 NTA, 0 T1 */
    int32_t dt_f32; /* keys per chunk, fp32 caches */
    int32_t dt_16;  /* keys per chunk, bf16 and f16 caches */
    int half_f32;   /* fp32 caches: prefetch half a step ahead (decode_batch) */
    int32_t sm_keys; /* keys of each step whose prefetches the softmax issues */
} dec_profile;

static const dec_profile dec_profiles[] = {
    [ATTN__TUNE_INTEL] = {0, 32, 64, 0, 0}, /* "L2" */
    [ATTN__TUNE_AMD] = {1, 16, 32, 1, 4},   /* "NTA" */
};

/* bf16 slices of 32 dims that are whole (D a multiple of 32, as every
 * usual head size) load K and V rows without a mask (the FULL instances
 * below): a masked 16-bit load (VMOVDQU16 with a zeroing mask) costs an
 * extra micro-op on the FMA ports, which Q.K and P.V keep busy.  fp32
 * keeps its masks.  docs/perf-notes.md, "Unmasked whole bf16 slices". */

/* The items this tile takes: one token, few rows, D within the stack
 * copies.  It uses none of the plan's work areas (scores, kv). */
int attn_decode_fits__avx512(const attn_tile_args *a) {
    return a->n_tok == 1 && a->g <= AVX512_DEC_MAX_ROWS && a->head_dim <= AVX512_DEC_MAX_D;
}

/* ---------------------------------------------------------- Q.K block */

/* Raw dots of R (<= AVX512_DR) rows of the q block qb with keys [0, n) of the
 * chunk, into s (rows of stride DT).  qb is slice-major: slice sl of row r
 * is the sw floats at qb + (sl * R + r) * sw (sw = 32 for bf16, else 16),
 * so one pointer with immediate offsets reaches every row.  Keys of the
 * last group past n repeat key n-1 (their lanes are masked by the
 * softmax).  nc slices, the last one holding the elements of mask tm.
 * kpf: rows to prefetch (NULL entries: none), one line per K load, four
 * keys at a time: in the loads' order (slice by slice across the 4 rows),
 * or with ADDR (fp32 only: a slice is a line) in address order (row by
 * row).  decode_batch says which rows and why.  FULL (bf16, f16, fp8): every
 * slice is whole (tm all ones), so K loads unmasked. */
INLINE void qk_block(int R, attn_dtype kdt, int FULL, int NTA, int ADDR, const float *qb, size_t nc,
                     uint32_t tm,
                     const void *const *krow, const void *const *kpf,
                     int32_t n, float *s) {
    const size_t es = read_size(kdt);
    const size_t slice_bytes = kdt == ATTN_DTYPE_BF16 ? 64 : 16 * es;
    const size_t sw = kdt == ATTN_DTYPE_BF16 ? 32 : 16;
    __m512 u[AVX512_DR][DT / 4];
    for (int32_t i0 = 0; i0 < n; i0 += 4) {
        /* the next chunk's K rows of these 4 keys (pk), one line per
         * slice and key (f16: every line twice), spread through the slice
         * loop */
        const unsigned char *kr[4];
        const char *pk[4];
        dec_group_rows(krow, kpf, i0, n, kr, pk);
        __m512 c[AVX512_DR][4];
        UNROLL
        for (int r = 0; r < R; r++)
            UNROLL
            for (int j = 0; j < 4; j++) c[r][j] = _mm512_setzero_ps();
        /* (one loop with a per-slice mask: a separate tail step made GCC
         * keep the accumulators in memory) */
        const float *qv = qb;
        for (size_t sl = 0; sl < nc; sl++, qv += (size_t)R * sw) {
            const uint32_t m = sl + 1 == nc ? tm : 0xffffffffu;
            /* fp8 slices are 16 bytes: one prefetch per line (every 4th) */
            if (kpf && (es > 1 || sl % 4 == 0)) {
                UNROLL
                for (int j = 0; j < 4; j++) {
                    /* the t-th line of the 4 rows.  The division is left in
                     * on purpose: it paces the prefetches, which pay on the
                     * AMD profile only when they arrive spread out; a
                     * counter in its place was slower, a chain of dependent
                     * multiplies as fast (docs/perf-notes.md, "Prefetch
                     * pacing"). */
                    const size_t t = sl * 4 + (size_t)j;
                    const char *line = ADDR ? pk[t / nc] + t % nc * slice_bytes
                                            : pk[j] + sl * slice_bytes;
                    prefetch_hint(line, NTA);
                }
            }
            if (kdt == ATTN_DTYPE_BF16) {
                /* 32 bf16 per load: odd elements are the top halves of the
                 * 32-bit lanes, even elements the bottom halves shifted up */
                __m512 ke[4], ko[4];
                UNROLL
                for (int j = 0; j < 4; j++) {
                    /* a masked 16-bit load costs an extra micro-op:
                     * whole slices load plainly (FULL, see above) */
                    const __m512i w = FULL ? _mm512_loadu_si512(kr[j] + sl * 64)
                                           : _mm512_maskz_loadu_epi16((__mmask32)m, kr[j] + sl * 64);
                    ke[j] = bf16_even(w);
                    ko[j] = bf16_odd(w);
                }
                UNROLL
                for (int r = 0; r < R; r++) {
                    const __m512 qe = _mm512_load_ps(qv + 32 * r);
                    const __m512 qo = _mm512_load_ps(qv + 32 * r + 16);
                    UNROLL
                    for (int j = 0; j < 4; j++) {
                        c[r][j] = _mm512_fmadd_ps(qe, ke[j], c[r][j]);
                        c[r][j] = _mm512_fmadd_ps(qo, ko[j], c[r][j]);
                    }
                }
            } else {
                __m512 k[4];
                UNROLL
                for (int j = 0; j < 4; j++)
                    k[j] = load16(kdt, kr[j] + sl * 16 * es, FULL ? (__mmask16)0xffff : (__mmask16)m);
                UNROLL
                for (int r = 0; r < R; r++) {
                    const __m512 q = _mm512_load_ps(qv + 16 * r);
                    UNROLL
                    for (int j = 0; j < 4; j++) c[r][j] = _mm512_fmadd_ps(q, k[j], c[r][j]);
                }
            }
        }
        UNROLL
        for (int r = 0; r < R; r++) u[r][i0 / 4] = fold4(c[r][0], c[r][1], c[r][2], c[r][3]);
    }
    fold_store(R, u, n, s);
}

#define QK_FN(name_, T_, F_, NTA_, A_)                                              \
    static void name_(int32_t R, const float *qb, size_t nc, uint32_t tm,           \
                      const void *const *krow, const void *const *kpf, int32_t n,   \
                      float *s) {                                                   \
        switch (R) {                                                                \
        case 1: qk_block(1, T_, F_, NTA_, A_, qb, nc, tm, krow, kpf, n, s); break;  \
        case 2: qk_block(2, T_, F_, NTA_, A_, qb, nc, tm, krow, kpf, n, s); break;  \
        case 3: qk_block(3, T_, F_, NTA_, A_, qb, nc, tm, krow, kpf, n, s); break;  \
        default: qk_block(4, T_, F_, NTA_, A_, qb, nc, tm, krow, kpf, n, s); break; \
        }                                                                           \
    }
QK_FN(qk_f32, ATTN_DTYPE_F32, 0, 0, 0)
QK_FN(qk_bf16, ATTN_DTYPE_BF16, 0, 0, 0)
QK_FN(qk_bf16_full, ATTN_DTYPE_BF16, 1, 0, 0)
QK_FN(qk_f16, ATTN_DTYPE_F16, 0, 0, 0)
QK_FN(qk_f16_full, ATTN_DTYPE_F16, 1, 0, 0)
QK_FN(qk_f32_nta, ATTN_DTYPE_F32, 0, 1, 0)
QK_FN(qk_bf16_nta, ATTN_DTYPE_BF16, 0, 1, 0)
QK_FN(qk_bf16_full_nta, ATTN_DTYPE_BF16, 1, 1, 0)
QK_FN(qk_f16_nta, ATTN_DTYPE_F16, 0, 1, 0)
QK_FN(qk_f16_full_nta, ATTN_DTYPE_F16, 1, 1, 0)
QK_FN(qk_e4m3s, ATTN__E4M3S, 0, 0, 0)
QK_FN(qk_e4m3s_full, ATTN__E4M3S, 1, 0, 0)
QK_FN(qk_e4m3s_nan, ATTN__E4M3S_NAN, 0, 0, 0)
QK_FN(qk_e4m3s_nan_full, ATTN__E4M3S_NAN, 1, 0, 0)
QK_FN(qk_fp8e5m2, ATTN_DTYPE_FP8_E5M2, 0, 0, 0)
QK_FN(qk_fp8e5m2_full, ATTN_DTYPE_FP8_E5M2, 1, 0, 0)
QK_FN(qk_e4m3s_nta, ATTN__E4M3S, 0, 1, 0)
QK_FN(qk_e4m3s_full_nta, ATTN__E4M3S, 1, 1, 0)
QK_FN(qk_e4m3s_nan_nta, ATTN__E4M3S_NAN, 0, 1, 0)
QK_FN(qk_e4m3s_nan_full_nta, ATTN__E4M3S_NAN, 1, 1, 0)
QK_FN(qk_fp8e5m2_nta, ATTN_DTYPE_FP8_E5M2, 0, 1, 0)
QK_FN(qk_fp8e5m2_full_nta, ATTN_DTYPE_FP8_E5M2, 1, 1, 0)
QK_FN(qk_f32_addr, ATTN_DTYPE_F32, 0, 0, 1)     /* half a step: V rows */
QK_FN(qk_f32_nta_addr, ATTN_DTYPE_F32, 0, 1, 1)

/* ---------------------------------------------------- P.V, bf16 pairs */

/* P.V for bf16 V with the accumulator in the slice layout (per 32 dims:
 * 16 even dims, then 16 odd dims; row stride qs): each 64-byte load of a V
 * row is widened exactly into that layout with one shift and one AND, half
 * the conversion work of VPMOVZXWD + shift per 16 elements.  NS (1 or 2)
 * slices from sl0 of the row's nc, the last one masked by ml unless FULL
 * (ml all ones: plain loads, as in qk_block); R <= AVX512_PR rows.  vpf (or
 * NULL): the next chunk's rows of the same keys. */
INLINE void pv_pairs_rows(int R, int NS, int FULL, int NTA, float *accp, size_t qs, size_t nc, size_t sl0,
                          uint32_t ml, const float *alpha, const float *p,
                          const void *const *vrow, const void *const *vpf, int32_t ilo,
                          int32_t ihi) {
    /* the next chunk's rows in address order, 2 slices (128 bytes) per key
     * and pass (pv_pf, avx512_inl.h) */
    pv_pf pc = pv_pf_start((int32_t)(sl0 / 2), (int32_t)((nc + 1) / 2), ilo, ihi);
    __m512 c[AVX512_PR][4];
    UNROLL
    for (int r = 0; r < R; r++) {
        const __m512 al = _mm512_set1_ps(alpha[r]);
        UNROLL
        for (int v = 0; v < 2 * NS; v++)
            c[r][v] = _mm512_mul_ps(_mm512_load_ps(accp + (size_t)r * qs + sl0 * 32 + 16 * (size_t)v), al);
    }
    for (int32_t i = ilo; i < ihi; i++) {
        const unsigned char *vr = (const unsigned char *)vrow[i] + sl0 * 64;
        if (vpf) {
            if (vpf[pc.key]) {
                UNROLL
                for (int sl = 0; sl < 2; sl++)
                    if (2 * (size_t)pc.part + (size_t)sl < nc)
                        prefetch_hint((const char *)vpf[pc.key] + (2 * (size_t)pc.part + (size_t)sl) * 64,
                                     NTA);
            }
            pv_pf_next(&pc);
        }
        UNROLL
        for (int sl = 0; sl < NS; sl++) {
            const __m512i w = sl == NS - 1 && !FULL
                                  ? _mm512_maskz_loadu_epi16((__mmask32)ml, vr + 64 * sl)
                                  : _mm512_loadu_si512(vr + 64 * sl);
            const __m512 e = bf16_even(w);
            const __m512 o = bf16_odd(w);
            UNROLL
            for (int r = 0; r < R; r++) {
                const __m512 pb = _mm512_set1_ps(p[(size_t)r * DT + (size_t)i]);
                c[r][2 * sl] = _mm512_fmadd_ps(pb, e, c[r][2 * sl]);
                c[r][2 * sl + 1] = _mm512_fmadd_ps(pb, o, c[r][2 * sl + 1]);
            }
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 2 * NS; v++)
            _mm512_store_ps(accp + (size_t)r * qs + sl0 * 32 + 16 * (size_t)v, c[r][v]);
}

#define PVP_CASE(R_, N_, NTA_)                                                            \
    case ((R_) * 4 + (N_)) * 2:                                                           \
        pv_pairs_rows(R_, N_, 0, NTA_, accp, qs, nc, sl0, ml, alpha, p, vrow, vpf, ilo, ihi); \
        break;                                                                            \
    case ((R_) * 4 + (N_)) * 2 + 1:                                                       \
        pv_pairs_rows(R_, N_, 1, NTA_, accp, qs, nc, sl0, ml, alpha, p, vrow, vpf, ilo, ihi); \
        break;

#define PV_PAIRS_FN(name_, NTA_)                                                          \
    static void name_(int32_t R, float *accp, size_t qs, size_t nc, uint32_t tm,         \
                      const float *alpha, const float *p, const void *const *vrow,       \
                      const void *const *vpf, int32_t ilo, int32_t ihi) {                \
        for (size_t sl0 = 0; sl0 < nc; sl0 += 2) {                                        \
            const int ns = nc - sl0 >= 2 ? 2 : 1;                                         \
            const uint32_t ml = sl0 + (size_t)ns == nc ? tm : 0xffffffffu;                \
            switch ((R * 4 + ns) * 2 + (ml == 0xffffffffu)) {                             \
                PVP_CASE(1, 1, NTA_) PVP_CASE(1, 2, NTA_) PVP_CASE(2, 1, NTA_)            \
                PVP_CASE(2, 2, NTA_) PVP_CASE(3, 1, NTA_) PVP_CASE(3, 2, NTA_)            \
                PVP_CASE(4, 1, NTA_) PVP_CASE(4, 2, NTA_) PVP_CASE(5, 1, NTA_)            \
                PVP_CASE(5, 2, NTA_) PVP_CASE(6, 1, NTA_) PVP_CASE(6, 2, NTA_)            \
            default: break;                                                               \
            }                                                                             \
        }                                                                                 \
    }
PV_PAIRS_FN(pv_pairs, 0)
PV_PAIRS_FN(pv_pairs_nta, 1)

/* The bf16 slice layout, the one place it is spelled: within each 32-dim
 * slice, the 16 even dims first, then the 16 odd dims (what one AND and
 * one shift of 32 packed bf16 produce).  Position of natural dim d. */
static inline size_t pair_pos(size_t d) {
    const size_t e = d % 32;
    return d - e + (e % 2 ? 16 + e / 2 : e / 2);
}

/* pair_pos for ns whole 32-dim slices of one row at once: natural dims
 * nat[0 .. 32 ns) times mul into slices (slice k at sl + k stride: 16 even
 * dims, then 16 odd ones); pairs_from: back, slices 32 apart. */
static void pairs_to(const float *nat, size_t ns, float *sl, size_t stride, float mul) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    const __m512 m = _mm512_set1_ps(mul);
    for (size_t k = 0; k < ns; k++, nat += 32, sl += stride) {
        const __m512 n0 = _mm512_mul_ps(_mm512_loadu_ps(nat), m);
        const __m512 n1 = _mm512_mul_ps(_mm512_loadu_ps(nat + 16), m);
        _mm512_storeu_ps(sl, _mm512_permutex2var_ps(n0, ev, n1));
        _mm512_storeu_ps(sl + 16, _mm512_permutex2var_ps(n0, od, n1));
    }
}

static void pairs_from(const float *sl, size_t ns, float *nat) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    for (size_t k = 0; k < ns; k++, nat += 32, sl += 32) {
        const __m512 e = _mm512_loadu_ps(sl), o = _mm512_loadu_ps(sl + 16);
        _mm512_storeu_ps(nat, _mm512_permutex2var_ps(e, lo, o));
        _mm512_storeu_ps(nat + 16, _mm512_permutex2var_ps(e, hi, o));
    }
}

/* acc_layout's whole slices for pv_pairs (attn__dec_dot.acc_whole's form) */
static void pairs_whole_acc(float *acc, size_t ns, float *accp, int to_slices) {
    if (to_slices)
        pairs_to(acc, ns, accp, 32, 1.0f);
    else
        pairs_from(accp, ns, acc);
}

/* The position of natural dim d in a layout of sw-dim slices whose dim e
 * sits at pos[e] (a table: the layouts' functions are called once per
 * batch, not per element). */
static inline size_t slice_pos(size_t d, size_t sw, const uint8_t *pos) {
    return d - (d & (sw - 1)) + pos[d & (sw - 1)]; /* sw: 16, 32 or 64 */
}

/* Copy rows x D accumulators between the natural layout and a slice
 * layout (pv_pairs': sw 32, pair_pos; the dot path's: sw 64, its acc_pos);
 * to_slices: natural -> slices, padding dims zeroed.  whole (or NULL):
 * the same for a row's whole slices at once (attn__dec_dot.acc_whole). */
static void acc_layout(float *acc, size_t D, float *accp, size_t qs, int32_t rows,
                       int to_slices, size_t sw, const uint8_t *pos,
                       void (*whole)(float *, size_t, float *, int)) {
    const size_t nw = whole ? D / sw : 0; /* slices done by `whole` */
    for (int32_t r = 0; r < rows; r++)
        for (size_t d = to_slices ? D : qs; d < qs; d++)
            accp[(size_t)r * qs + slice_pos(d, sw, pos)] = 0.0f;
    for (int32_t r = 0; r < rows; r++) {
        if (nw) whole(acc + (size_t)r * D, nw, accp + (size_t)r * qs, to_slices);
        for (size_t d = nw * sw; d < D; d++) {
            const size_t pos_d = slice_pos(d, sw, pos);
            if (to_slices)
                accp[(size_t)r * qs + pos_d] = acc[(size_t)r * D + d];
            else
                acc[(size_t)r * D + d] = accp[(size_t)r * qs + pos_d];
        }
    }
}

/* Whether K or V of keys [ilo, ihi) holds an e4m3 NaN code (0x7f, 0xff)
 * in its D bytes: 64 codes per test, a quarter of what testing them as
 * they are widened costs (ATTN__E4M3S, avx512_inl.h). */
static int avx512_e4m3_nan_in(const void *const *krow, const void *const *vrow, int32_t ilo,
                              int32_t ihi, size_t D) {
    const __m512i top = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(-1);
    __mmask64 any = 0;
    for (int32_t i = ilo; i < ihi; i++)
        for (size_t o = 0; o < D; o += 64) {
            const __mmask64 m = D - o >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (D - o)) - 1;
            const __m512i k = _mm512_maskz_loadu_epi8(m, (const char *)krow[i] + o);
            const __m512i v = _mm512_maskz_loadu_epi8(m, (const char *)vrow[i] + o);
            any |= _mm512_cmpeq_epi8_mask(_mm512_or_si512(k, top), ones) |
                   _mm512_cmpeq_epi8_mask(_mm512_or_si512(v, top), ones);
        }
    return any != 0;
}

/* ------------------------------------------------------------- driver */

typedef void (*dec_qk_fn)(int32_t, const float *, size_t, uint32_t, const void *const *,
                          const void *const *, int32_t, float *);
typedef void (*dec_pv_fn)(int32_t, float *, size_t, const float *, const float *, size_t,
                          const void *const *, const void *const *, int32_t, int32_t);

/* One batch of heads whose stack copies fit (decode_heads):
 * a[0 .. nh) share the token, the key range and everything but the KV
 * head and the per-head state.  Walk: chunk by chunk, every head of the
 * batch in turn, so one chunk's K (then V) pieces of all the batch's heads
 * are read one after another — adjacent pieces of the same blocks — and
 * the prefetch runs one (head, chunk) step ahead: the next head's rows of
 * this chunk, after the last head the first head's next chunk, after the
 * last chunk the item after a[nh - 1].  dot (or NULL): the dot-product
 * path's layouts and micro-kernels (fp8 K/V, attn__dec_dot). */
static void avx512_decode_batch(const attn_tile_args *a, int32_t nh, attn_dtype kdt,
                                const dec_profile *pr, const attn__dec_dot *dot) {
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    const int32_t rows = a->g;
    const size_t D = (size_t)a->head_dim, es = attn__dtype_size(kdt);
    int64_t vlo, vhi; /* the one row interval every head of the token shares */
    attn__row_interval((int64_t)a->pos0, key_limit, a->causal,
                       a->window_left, a->window_right, &vlo, &vhi);
    if (vlo < a->k0) vlo = a->k0;
    if (vhi > k1) vhi = k1;
    if (vlo >= vhi) return; /* nothing visible: every row keeps its state */

    /* q in the slice layout of qk_block: fp32/f16 slices of 16 dims, bf16
     * slices of 32 dims as [16 even dims][16 odd dims]; zero past D; and
     * slice-major within each block of AVX512_DR rows (see qk_block).  Head h's
     * rows start at h * rows * qs. */
    const int pairs = kdt == ATTN_DTYPE_BF16;
    /* the dot path: q rounded to bf16 in its slices of 64 dims */
    ATTN_ASSERT(!dot || (pr->nta && attn__dtype_size(kdt) == 1));
    /* e4m3 is read as its value times 2^-8 (ATTN__E4M3S), q and the
     * weights times 2^8: q here is normalised (at most 2^33, executor.c),
     * the weights at most 1, so both products are exact. */
    const int e4m3 = kdt == ATTN_DTYPE_FP8_E4M3 && !dot;
    const size_t sw = dot ? 64 : pairs ? 32 : 16, nc = (D + sw - 1) / sw, qs = nc * sw;
    const size_t tail = D - (nc - 1) * sw;
    const uint32_t tm = tail >= 32 ? 0xffffffffu : (1u << tail) - 1u;
    const uint64_t tm64 = tail >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << tail) - 1u;
    const size_t head_floats = (size_t)rows * qs;
    ATTN_ASSERT((size_t)nh * head_floats <= AVX512_DEC_STACK_FLOATS);
    /* q: fp32 (f), or bf16 words for the dot path (w); one or the other */
    union {
        float f[AVX512_DEC_STACK_FLOATS];
        uint16_t w[AVX512_DEC_STACK_FLOATS];
    } qbuf __attribute__((aligned(64)));
    float *const qp = qbuf.f;
    uint16_t *const qw = qbuf.w;
    /* bf16: the accumulators live in the slice layout for the call */
    float accp[AVX512_DEC_STACK_FLOATS] __attribute__((aligned(64)));
    /* the slice layouts as tables: q's (the dot path) and the accumulators' */
    uint8_t qpos[64], apos[64];
    for (size_t e = 0; e < sw && (pairs || dot); e++) {
        qpos[e] = (uint8_t)(dot ? dot->q_pos(e) : e);
        apos[e] = (uint8_t)(dot ? dot->acc_pos(e) : pair_pos(e));
    }
    for (int32_t h = 0; h < nh; h++) {
        ATTN_ASSERT(a[h].pos0 == a->pos0 && a[h].k0 == a->k0 && a[h].k1 == a->k1 &&
                    a[h].g == rows && a[h].head_dim == a->head_dim);
        for (int32_t r = 0; dot && r < rows; r++) {
            const int32_t r0 = r / AVX512_DR * AVX512_DR;
            const int32_t R = rows - r0 < AVX512_DR ? rows - r0 : AVX512_DR;
            const float *q = a[h].q + (size_t)r * D;
            uint16_t *blk = qw + (size_t)h * head_floats + (size_t)r0 * qs + (size_t)(r - r0) * sw;
            const size_t nw = D / 64; /* whole slices, then the tail (sw = 64: shifts) */
            dot->q_whole(q, nw, (size_t)R, blk);
            for (size_t d = nw * 64; d < qs; d++)
                blk[(d >> 6) * (size_t)R * 64 + qpos[d & 63]] = d >= D ? 0 : attn__f32_to_bf16(q[d]);
        }
        for (int32_t r = 0; !dot && r < rows; r++) {
            const int32_t r0 = r / AVX512_DR * AVX512_DR;
            const int32_t R = rows - r0 < AVX512_DR ? rows - r0 : AVX512_DR;
            const float *q = a[h].q + (size_t)r * D;
            float *blk = qp + (size_t)h * head_floats + (size_t)r0 * qs + (size_t)(r - r0) * sw;
            /* whole slices with vector code (bf16: pairs_to; else the
             * slices are the natural order), then the tail by shifts, not
             * a division by sw per element, whose cost short decodes felt
             * (docs/perf-notes.md, "Figures moved out of source comments") */
            const unsigned sw_log2 = pairs ? 5 : 4;
            const size_t nw = D / sw;
            const float mul = e4m3 ? 0x1p8f : 1.0f;
            if (pairs)
                pairs_to(q, nw, blk, (size_t)R * sw, mul);
            else
                for (size_t k = 0; k < nw; k++)
                    _mm512_storeu_ps(blk + k * (size_t)R * sw,
                                     _mm512_mul_ps(_mm512_loadu_ps(q + 16 * k), _mm512_set1_ps(mul)));
            for (size_t d = nw * sw; d < qs; d++) {
                const size_t pos = pairs ? pair_pos(d) : d;
                blk[(pos >> sw_log2) * (size_t)R * sw + (pos & (sw - 1))] =
                    d >= D ? 0.0f : e4m3 ? q[d] * 0x1p8f : q[d];
            }
        }
        if (pairs || dot)
            acc_layout(a[h].acc, D, accp + (size_t)h * head_floats, qs, rows, 1, sw, apos,
                       dot ? dot->acc_whole : pairs_whole_acc);
    }
    dec_qk_fn qk = qk_f32;
    dec_pv_fn pv = pv_block_f32;
    if (kdt == ATTN_DTYPE_BF16) qk = tm == 0xffffffffu ? qk_bf16_full : qk_bf16;
    /* f16 and fp8: whole 16-dim slices load plainly (FULL), as bf16's */
    const int whole = tm == 0xffffu;
#ifndef ATTN_INJECT_f16_decode_full_tail
    const int f16_whole = whole;
#else
    /* INJECTED BUG (f16_decode_full_tail): f16 K slices always load
     * whole, past the row where head_dim is not a multiple of 16 */
    const int f16_whole = 1;
#endif
    if (kdt == ATTN_DTYPE_F16) qk = f16_whole ? qk_f16_full : qk_f16, pv = pv_block_f16;
    /* e4m3: the NaN-free reading, and the one that keeps NaN codes for a
     * step whose keys hold one */
    dec_qk_fn qk_nan = qk;
    dec_pv_fn pv_nan = pv;
    if (e4m3) {
        qk = whole ? qk_e4m3s_full : qk_e4m3s, pv = pv_block_e4m3s;
        qk_nan = whole ? qk_e4m3s_nan_full : qk_e4m3s_nan, pv_nan = pv_block_e4m3s_nan;
    }
    if (kdt == ATTN_DTYPE_FP8_E5M2)
        qk = whole ? qk_fp8e5m2_full : qk_fp8e5m2, pv = pv_block_fp8e5m2;
    void (*pvp)(int32_t, float *, size_t, size_t, uint32_t, const float *, const float *,
                const void *const *, const void *const *, int32_t, int32_t) = pv_pairs;
    if (pr->nta) {
        qk = kdt == ATTN_DTYPE_BF16 ? (tm == 0xffffffffu ? qk_bf16_full_nta : qk_bf16_nta)
             : kdt == ATTN_DTYPE_F16 ? (f16_whole ? qk_f16_full_nta : qk_f16_nta)
             : kdt == ATTN_DTYPE_FP8_E4M3 ? (whole ? qk_e4m3s_full_nta : qk_e4m3s_nta)
             : kdt == ATTN_DTYPE_FP8_E5M2 ? (whole ? qk_fp8e5m2_full_nta : qk_fp8e5m2_nta)
                                          : qk_f32_nta;
        pvp = pv_pairs_nta;
        pv = kdt == ATTN_DTYPE_F16 ? pv_block_f16_nta
             : kdt == ATTN_DTYPE_FP8_E4M3 ? pv_block_e4m3s_nta
             : kdt == ATTN_DTYPE_FP8_E5M2 ? pv_block_fp8e5m2_nta
                                          : pv_block_f32_nta;
        if (e4m3)
            qk_nan = whole ? qk_e4m3s_nan_full_nta : qk_e4m3s_nan_nta, pv_nan = pv_block_e4m3s_nan_nta;
    }

    const void *krow[DT], *vrow[DT], *kpf[DT], *vpf[DT];
    const char *smlines[DEC_SM_MAX * (AVX512_DEC_MAX_D * 4 / 64)];
    /* Which rows each phase of a step prefetches.  Whole step (default):
     * Q.K the next step's K rows, P.V its V rows.  Half a step (half_f32):
     * Q.K this step's V rows, P.V the next step's K rows, so a line
     * arrives half as long before its use and at most three half steps
     * (one chunk's K or V pieces of one head each) are in L1 at a time.
     * Either way the softmax, which reads no memory, takes over the first
     * sm_keys keys of P.V's list: the stream of prefetches then has no gap
     * (see the profiles). */
    const int half = kdt == ATTN_DTYPE_F32 && pr->half_f32;
    /* V rows are prefetched in address order, K rows in the loads' order
     * (avx512_inl.h, pv_pf; for Q.K's V rows: the profiles) */
    if (half) qk = pr->nta ? qk_f32_nta_addr : qk_f32_addr;
    const void *const *pf_qk = half ? vrow : kpf;
    const void **pf_pv = half ? kpf : vpf;
    ATTN_ASSERT(pr->sm_keys <= DEC_SM_MAX);
    float sc[AVX512_DEC_MAX_ROWS * DT] __attribute__((aligned(64))); /* scores, then weights */
    const size_t row_bytes = D * es;

    /* chunks are aligned to k0 as in the general tile, starting at the
     * first chunk that holds a visible key */
    /* keys per chunk: fp8 rows are half a 16-bit row, so twice the keys
     * make the same bytes per step (and halve the softmax's per-step work) */
    int32_t dt = kdt == ATTN_DTYPE_F32 ? pr->dt_f32 : pr->dt_16;
    if (es == 1) dt = 2 * dt <= DT ? 2 * dt : DT;
    ATTN_ASSERT(dt % 16 == 0 && dt <= DT);
    const int32_t c_first = a->k0 + (int32_t)((vlo - a->k0) / dt) * dt;
    for (int32_t c0 = c_first; c0 < vhi; c0 += dt) {
        const int32_t n = (k1 - c0 < dt) ? k1 - c0 : dt;
        const int32_t c1 = c0 + n;
        const int32_t ilo = vlo > c0 ? (int32_t)(vlo - c0) : 0;
        const int32_t ihi = vhi < c1 ? (int32_t)(vhi - c0) : n;
        for (int32_t h = 0; h < nh; h++) {
            const attn_tile_args *x = &a[h];
            attn__row_ptrs(x, es, row_bytes, c0, n, krow, vrow);
            /* the next step's rows (only keys that will be visible), or NULL */
            int32_t nn = 0;
            const int64_t pf0 = (int64_t)c0 + dt; /* one step ahead */
            if (h + 1 < nh) {
                nn = ihi - ilo;
                attn__row_ptrs(&a[h + 1], es, row_bytes, c0 + ilo, nn, kpf + ilo, vpf + ilo);
                for (int32_t i = 0; i < ilo; i++) kpf[i] = vpf[i] = NULL;
                nn += ilo;
            } else if (pf0 < vhi) {
                nn = vhi - pf0 < dt ? (int32_t)(vhi - pf0) : dt;
                attn__row_ptrs(a, es, row_bytes, (int32_t)pf0, nn, kpf, vpf);
            } else if (x->next_blocks) {
                /* the last step: prefetch the first keys of the next item */
                attn_tile_args nx = *x;
                nx.blocks = x->next_blocks;
                nx.head_offset = x->next_head_offset;
                nn = x->next_k1 - x->next_k0 < dt ? x->next_k1 - x->next_k0 : dt;
                attn__row_ptrs(&nx, es, row_bytes, x->next_k0, nn, kpf, vpf);
            }
            /* entries read: qk_block's up to its last group of 4 keys,
             * P.V's [ilo, ihi) */
            const int32_t n4 = (n + 3) / 4 * 4;
            for (int32_t i = nn; i < n4; i++) kpf[i] = vpf[i] = NULL;
            if (half) { /* P.V reads only [ilo, ihi) of vrow: the others become NULL */
                for (int32_t i = 0; i < ilo; i++) vrow[i] = NULL;
                for (int32_t i = ihi; i < n4; i++) vrow[i] = NULL;
            }

            /* the softmax's share: those keys' lines, taken off P.V's list */
            int32_t nsm = 0;
            const int32_t lpr = (int32_t)((row_bytes + 63) / 64);
            for (int32_t i = 0; i < pr->sm_keys && i < n4; i++) {
                for (int32_t o = 0; o < lpr && pf_pv[i]; o++)
                    smlines[nsm++] = (const char *)pf_pv[i] + 64 * o;
                pf_pv[i] = NULL;
            }
            sm_pf smc = {smlines, nsm, 0, (nsm + 2 * rows - 1) / (2 * rows), pr->nta};
            int32_t rlo[AVX512_DEC_MAX_ROWS], rhi[AVX512_DEC_MAX_ROWS], jh[AVX512_DEC_MAX_ROWS];
            int64_t kp0[AVX512_DEC_MAX_ROWS];
            for (int32_t r = 0; r < rows; r++) /* every head of the token sees the same keys */
                rlo[r] = ilo, rhi[r] = ihi, jh[r] = r, kp0[r] = (int64_t)c0 - x->pos0;
            const float *qh = qp + (size_t)h * head_floats;
            const int nan_step = e4m3 && avx512_e4m3_nan_in(krow, vrow, ilo, ihi, D);
            for (int32_t r0 = 0; r0 < rows; r0 += AVX512_DR) {
                const int32_t R = rows - r0 < AVX512_DR ? rows - r0 : AVX512_DR;
                const void *const *kpf_r = r0 == 0 ? pf_qk : NULL;
                if (dot)
                    dot->qk(R, qw + (size_t)h * head_floats + (size_t)r0 * qs, nc, tm64,
                            krow, kpf_r, n, sc + (size_t)r0 * DT);
                else
                    (nan_step ? qk_nan : qk)(R, qh + (size_t)r0 * qs, nc, tm, krow, kpf_r, n,
                                             sc + (size_t)r0 * DT);
            }
            float alpha[AVX512_DEC_MAX_ROWS];
            /* the dot path multiplies bf16 weights: l sums the rounded ones */
            sm_pf *smp = nsm ? &smc : NULL;
            if (dot) /* (two instances: no test per vector) */
                softmax_rows_pf(x, rows, dt / 16, rlo, rhi, jh, kp0, sc, DT, x->m, x->l, alpha, smp, 1);
            else
                softmax_rows_pf(x, rows, dt / 16, rlo, rhi, jh, kp0, sc, DT, x->m, x->l, alpha, smp, 0);
            if (e4m3) /* the weights times 2^8 for V read times 2^-8 (l keeps the true sum) */
                for (int32_t r = 0; r < rows; r++)
                    for (int32_t i = ilo; i < ihi; i++) sc[(size_t)r * DT + (size_t)i] *= 0x1p8f;
            float *acch = accp + (size_t)h * head_floats;
            const int32_t pr_rows = dot ? AVX512_DR : AVX512_PR; /* rows per P.V block */
            for (int32_t r0 = 0; r0 < rows; r0 += pr_rows) {
                const int32_t R = rows - r0 < pr_rows ? rows - r0 : pr_rows;
                const void *const *pfv = r0 == 0 ? pf_pv : NULL;
                if (dot)
                    dot->pv(R, acch + (size_t)r0 * qs, qs, nc, tm64, alpha + r0,
                            sc + (size_t)r0 * DT, vrow, pfv, ilo, ihi);
                else if (pairs)
                    pvp(R, acch + (size_t)r0 * qs, qs, nc, tm, alpha + r0, sc + (size_t)r0 * DT,
                             vrow, pfv, ilo, ihi);
                else
                    (nan_step ? pv_nan : pv)(R, x->acc + (size_t)r0 * D, D, alpha + r0,
                                        sc + (size_t)r0 * DT, DT, vrow, pfv, ilo, ihi);
            }
        }
    }
    if (pairs || dot)
        for (int32_t h = 0; h < nh; h++)
            acc_layout(a[h].acc, D, accp + (size_t)h * head_floats, qs, rows, 0, sw, apos,
                       dot ? dot->acc_whole : pairs_whole_acc);
}

static void avx512_decode_heads(const attn_tile_args *a, int32_t n, attn_dtype kdt,
                                const attn__dec_dot *dot) {
    ATTN_ASSERT(n >= 1);
    for (int32_t h = 0; h < n; h++) ATTN_ASSERT(attn_decode_fits__avx512(&a[h]));
    ATTN_ASSERT(a->g >= 1 && a->head_dim >= 1);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    /* as many heads per batch as the stack copies hold (8 at g 4, D 128) */
    const size_t sw = dot ? 64 : kdt == ATTN_DTYPE_BF16 ? 32 : 16;
    const size_t qs = ((size_t)a->head_dim + sw - 1) / sw * sw;
    const int32_t per = (int32_t)(AVX512_DEC_STACK_FLOATS / ((size_t)a->g * qs));
    const dec_profile *pr = &dec_profiles[a->tune == ATTN__TUNE_AMD ? ATTN__TUNE_AMD : ATTN__TUNE_INTEL];
    for (int32_t h0 = 0; h0 < n; h0 += per)
        avx512_decode_batch(a + h0, n - h0 < per ? n - h0 : per, kdt, pr, dot);
}

void attn_decode_f32__avx512(const attn_tile_args *a, int32_t n) {
    avx512_decode_heads(a, n, ATTN_DTYPE_F32, NULL);
}
void attn_decode_bf16__avx512(const attn_tile_args *a, int32_t n) {
    avx512_decode_heads(a, n, ATTN_DTYPE_BF16, NULL);
}
void attn_decode_f16__avx512(const attn_tile_args *a, int32_t n) {
    avx512_decode_heads(a, n, ATTN_DTYPE_F16, NULL);
}
void attn_decode_fp8e4m3__avx512(const attn_tile_args *a, int32_t n) {
    avx512_decode_heads(a, n, ATTN_DTYPE_FP8_E4M3, NULL);
}
void attn_decode_fp8e5m2__avx512(const attn_tile_args *a, int32_t n) {
    avx512_decode_heads(a, n, ATTN_DTYPE_FP8_E5M2, NULL);
}

/* The dot-product path (attn__dec_dot): only under the AMD profile (its
 * NTA walk), for 1-byte caches. */
void attn_decode_dot__avx512(const attn_tile_args *a, int32_t n, attn_dtype kdt,
                             const attn__dec_dot *dot) {
    ATTN_ASSERT(dot && a->tune == ATTN__TUNE_AMD);
    avx512_decode_heads(a, n, kdt, dot);
}
