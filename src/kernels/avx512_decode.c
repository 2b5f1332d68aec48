/*
 * avx512_decode.c — the AVX-512 tile for single-token items
 * (decode, and the pieces of a split decode row): n_tok = 1 and at most
 * DEC_MAX_ROWS query heads per KV head.  Both AVX-512 tables route such
 * items here (table_avx512.c, table_avx512bf16.c); everything else
 * takes the general flash-style tile.
 *
 * Why a separate tile: a decode item reads every K and V byte exactly once
 * and does only g (= 4 for Llama-style GQA) multiply-adds per element, so
 * it must run several times faster than DRAM delivers for the stream to be
 * the limit.  The general tile transposes each 64-key chunk of K into the
 * work area (16x16 shuffles: ~32 shuffle instructions per key, on the same
 * ports as the FMAs) so that many rows can share it; with 4 rows that
 * transpose costs more than the dot products themselves.  Here:
 *
 *   Q.K  keys are taken 4 at a time, straight from the cache: for each
 *        16-dim slice, 4 K loads and DR = 4 query rows feed 16 FMAs into
 *        16 accumulators (one per row and key, each a partial dot product
 *        spread over 16 lanes).  The horizontal sums are then done as a
 *        transpose-and-add tree: 6 shuffles + 3 adds fold a row's 4 key
 *        vectors into one vector whose 128-bit lanes hold the 4 keys'
 *        lane sums; after 16 keys, 6 more shuffles + 3 adds give the 16
 *        dot products in key order.  Per key and row that is ~3 shuffles
 *        against D/16 FMAs, and rows beyond DR re-read K from L1.
 *        bf16 K is widened exactly with one AND (odd elements: a bf16 is
 *        the top half of an fp32) and one shift (even elements) per 32
 *        elements, against a copy of q whose dims are permuted the same
 *        way (even dims, then odd dims, per 32) — a dot product does not
 *        care about the order of its terms, so no un-permute is needed.
 *        f16 K is widened with VCVTPH2PS.  q stays fp32: unlike the
 *        VDPBF16PS path (avx512bf16.c) nothing is rounded.
 *   softmax and P.V are the general tile's (avx512_inl.h): one
 *        visible interval for every row, V widened on the fly.
 *   memory: key and value row addresses are walked block by block (no
 *        division per key), and the next step's K and V lines are
 *        prefetched one per load of the current step (to L2, or
 *        non-temporally on AMD: see the profiles below) — in the paged
 *        layout a head's consecutive blocks are Hkv blocks apart, so the
 *        hardware streamer restarts at every block and would leave the
 *        stream latency-bound.  K's lines are prefetched in the loads'
 *        order (a slice of 4 keys at a time), V's in address order (pv_pf
 *        in avx512_inl.h).  Both orders were measured each way
 *        (`scripts/bench_ab.sh 4 decode8`, B=8 cold, 2 threads): V in
 *        address order instead of the loads' order +3.7 to +8.1 % (fp32),
 *        +5.6 to +9.3 % (bf16); K in address order as well then -1 to
 *        -7 % (fp32) and -6 to +1 % (bf16), so K keeps the loads' order.
 *        Why K and V differ we do not know (no PMU counters on the
 *        development VM).  The AMD profile (below) moves some of these
 *        prefetches: fp32 runs half a step ahead, and the softmax issues
 *        a share, so that the stream has no gap while the step computes.
 *   heads: the executor hands a decode run of several KV heads' items of
 *        one token at once (kernels.h, attn_tile_heads_fn), and the walk
 *        goes chunk by chunk, every head of the run in turn: one chunk's K
 *        (then V) pieces of all those heads, which in the paged layout are
 *        adjacent pieces of the same blocks, are read back to back, and a
 *        step is one (head, chunk).  Pure reads of the bench's layout
 *        (/tmp driver, 2 threads, D 128, block 16): one head at a time
 *        26-29 GB/s, 8 heads chunk by chunk 34-36 GB/s.  Measured on the
 *        engine (`scripts/bench_ab.sh 3 decode8`, B=8 cold, 2 threads):
 *        fp32 24.2 -> 27.0 GB/s, bf16 21.4 -> 23.8 GB/s.
 *
 * Numerics: as the general avx512 tile (fp32 products and sums in a
 * different association than the portable kernel; same exp and masking).
 */
#include "avx512_inl.h"
#include "mask.h"

#define DR 4              /* rows per Q.K register block */
#ifndef ATTN_AVX512_DEC_PF
#define ATTN_AVX512_DEC_PF 1 /* 0: no software prefetch (for measurements) */
#endif
#ifndef DEC_PF_DIST
#define DEC_PF_DIST 1
#endif
#define DEC_SM_MAX 8     /* bounds a profile's sm_keys (the line list on the stack) */
#define DEC_MAX_ROWS 16   /* larger groups amortise the general tile's transpose */
#define DEC_MAX_D 256     /* bounds the on-stack copies of q and acc (16 KiB each) */
#define DEC_STACK_FLOATS (DEC_MAX_ROWS * DEC_MAX_D) /* one item at the bounds, or several heads */
/* Keys per chunk, at most DT (the bound of the tile's stack arrays: row
 * pointers, scores).  The chunk actually used, and the prefetch hint, come
 * from the CPU's profile below. */
#define DT 64

/* ------------------------------------------------------------ profiles */

/* How the tile walks memory depends on the CPU family more than on
 * anything else we measured, so it has two profiles, picked at run time by
 * the tuning profile (kernels.h, attn_tile_args.tune):
 *
 *   L2  (Intel; tuned on a Sapphire Rapids VM, 2026-11-30): prefetches to
 *       L2 (T1), chunks of 64 keys for bf16/f16 caches and 32 for fp32.
 *       There, against this profile (B=8 cold, 2 threads,
 *       `scripts/bench_ab.sh`): NTA prefetches -48 to -66 %; bf16 chunks of
 *       32 keys -3 to -4 %; fp32 chunks of 64 keys -0.8 to -4.8 %, of 16
 *       within noise; 128-key chunks 3-8 % slower.
 *   NTA (AMD; tuned on a Zen 5 EPYC VM, 2026-12-01): non-temporal
 *       prefetches, chunks of 32 keys for bf16/f16 and 16 for fp32.  There
 *       (`scripts/bench_ab.sh 3-5 decode8`, 2 threads, B=8 cold, the rounds
 *       where neither build hit the VM's slow phases): NTA instead of T1
 *       +3.5 to +8.4 % (fp32), +2.5 to +7.4 % (bf16); bf16 chunks of 32
 *       instead of 64 +7.0 to +10.0 % (block 32: +8.4 to +9.9 %), of 16
 *       -1.5 to +0.5 % (block 32: -11 to -16.5 %); fp32 chunks of 16
 *       instead of 32 +11.0 to +14.4 %, of 64 -1.1 to -2.5 %; no software
 *       prefetch at all -51 to -68 %.  On 1 thread (B=8 cold, 3 rounds
 *       alternating, where the VM's bandwidth phases do not reach): T0 as
 *       fast as NTA, T1 and T2 -8 to -11 % (fp32) and -3 to -8 % (bf16):
 *       what pays is the line in L1; prefetching 2 or 4 steps ahead
 *       instead of 1: fp32 -8 to -11 %, bf16 -3 to -6 %.  The profile
 *       against the session's starting point (1 thread, 3 rounds): fp32
 *       22.0 -> 27.0 GB/s, bf16 26.5 -> 28.5, bf16 block 32 26.7 -> 32.5.
 *       Then changes to when the lines are asked for (1 thread, B=8
 *       cold, rounds alternating):
 *       - fp32 half a step ahead (half_f32, decode_batch): 26.8-27.2 ->
 *         29.9-30.2 GB/s; for bf16 -3 to +3 % (block 16 up, block 32
 *         down), so bf16 keeps the whole step.
 *       - the softmax issues the prefetches of sm_keys = 4 keys per step
 *         (of 16 or 32), K's and V's: fp32 +2 to +7 %, bf16 +6 to +10 %,
 *         bf16 block 32 -2 to +2 %; 2 keys +1 to +5 %, 6 keys as 4, 8 keys
 *         -1 to +4 %, 16 keys -25 % (16 lines at once at each row: a
 *         burst).  Only P.V's (V's, or for fp32 the next K's), 4 keys:
 *         bf16 +5 to +7 % more, block 32 +4 to +6 % (2 keys -1 to +2 %, 6
 *         and 8 keys as 4; fp32 is the same build).
 *       - and Q.K's prefetches of this step's V rows (fp32, half a step)
 *         in address order, as P.V's are, instead of the loads' order:
 *         fp32 +5 to +7 % (30.3-30.8 -> 32.3-32.6 GB/s); the same for
 *         Q.K's K rows (bf16, whole step) -3 to -8 %, as on the Intel VM.
 *         Part of that gain is pacing (qk_block): each of those
 *         prefetch addresses waits for a division, and with a counter
 *         instead the gain shrinks to +2 to +3 %; a chain of 4-5 dependent
 *         multiplies per prefetch (3 cycles each) gives it back.  The
 *         same pacing of bf16's K prefetches: block 16 +2 to +3 %, block
 *         32 -4 to -5 %; of bf16 P.V's V prefetches (2-6 multiplies): -15
 *         to -20 %; neither kept.
 *       Why the first two pay: a
 *         step's softmax reads no memory, and a core's prefetches are not
 *         a queue that keeps DRAM busy through such a gap: they must
 *         arrive spread out.  The same shows on a plain read of the
 *         layout (1 thread, bf16 block 16, chunks of 32 keys, /tmp
 *         driver): one prefetch per load 34.6 GB/s, each step's
 *         prefetches at its start 30.4; with 256 FMAs (~128 cycles) per
 *         step and no memory access between the K and V halves 25.9, with
 *         a quarter of the prefetches moved into that gap 29.5.  It is
 *         also why Q.K on VDPBF16PS (q rounded to bf16, as the prefill
 *         tile of avx512bf16_lanes.c) did not pay here: 60 -> 52
 *         cycles per key and head with K in L3, but cold 28.7 -> 26.1
 *         GB/s, its prefetches now issued in a shorter burst (with them
 *         paced by 3-6 dependent multiplies each: 28.6-30.0 against
 *         31.3-32.9 GB/s for the FMA Q.K, 3 rounds).  Nor did
 *         a softmax for rows that share one interval (masks made once,
 *         maxima and sums reduced four rows at a time with shuffles):
 *         1 thread -3 to +3 %, 2 threads -2.6 to +1.9 %, not kept.
 *       Against the start of that session (1 thread, 3 rounds): fp32
 *       27.0-27.4 -> 32.2-32.9 GB/s, bf16 28.6-28.8 -> 32.0-32.8, bf16
 *       block 32 32.3-32.7 -> 33.2-34.0.  Two threads (3 rounds, in one
 *       of the VM's slow phases, where a plain read of the layout gave
 *       47-54 GB/s): fp32 35.8-36.2 -> 43.1-45.1 GB/s (+19 to +26 %),
 *       bf16 +2.4 to +5.1 %, block 32 +2.1 to +3.7 %.  Also tried: bf16
 *       half a step ahead with Q.K's V prefetches in address order: -7 to
 *       -11 % on 2 threads, -8 to -11 % on 1.
 *       A second session the same day (1 thread, B=8 cold, 2-3 rounds
 *       alternating against this profile; nothing kept).  Each phase of a
 *       step timed with rdtsc (TSC cycles, ~2.4 GHz): fp32 (16 keys, one
 *       head) set-up 66-73, Q.K 545-561, softmax 183-190, P.V 296-323 with
 *       K and V in L2, 84 / 632 / 204 / 394 cold; bf16 (32 keys) 79 / 487
 *       / 184 / 379 in L2.  Less work per step did not make cold faster:
 *       - Q.K's prefetch addresses by shifts, no division: Q.K 557 -> 294
 *         in L2 (L2-resident decode 35.2 -> 44.9 GB/s), cold +0.3 to -2.6
 *         %, P.V then waiting (311 -> 538 cold); the addresses made to
 *         wait for the previous slice's K load instead (self-clocked): 124
 *         -> 99 core cycles per key and head in L2, cold -1 to +4 %; P.V's
 *         as well: -2 to +3 %.
 *       - bf16 P.V on VDPBF16PS (weights rounded, pairs of V rows
 *         interleaved by VPUNPCKLWD/VPUNPCKHWD): P.V 379 -> 306 in L2, B=1
 *         hot +6 to +12 %, cold -5 to -11 %.
 *       - P.V of step s after Q.K and softmax of step s + 1 (software
 *         pipelined, the softmax's chains beside P.V's FMAs): L2 -1 to -5
 *         %, cold fp32 -1.6 to -2.5 %, bf16 -1 to +2 %.
 *       - bf16 block 16 in the order a plain read prefers: reading the
 *         pieces per head (its two blocks' K, then V) gets 35.4-35.8 GB/s,
 *         every head's K pieces of one block, then of the next, then V
 *         40.9-41.0 (/tmp driver, prefetch of the next piece); the tile in
 *         that order -11 to -15 % (prefetch 2-8 pieces ahead), -22 to -25
 *         % (1 piece).  Chunks of 16 keys -11 to -14 % (2 threads, a slow
 *         phase: -13 to -27 %; a step's fixed costs: the softmax takes 160
 *         cycles at 16 keys, 191 at 32); two heads of 16 keys per step -4
 *         to -10 %; a T1 prefetch of the next chunk's pieces in address
 *         order, in place of the step-ahead prefetches -16 to -22 %,
 *         beside them -8 to -16 %.  Batches of 4 or 2 heads (fp32 and
 *         bf16) -7 to -15 %.
 *       - fp32: Q.K prefetching 3 lines in 4 and the softmax 64 lines: -3
 *         to -11 %; all of a step's lines in one list, each phase issuing
 *         its share at a fixed rate: 0 to -5 %.
 *       Software prefetches are not dropped when many are in flight here:
 *       256 NTA prefetches of random cold lines all arrived (/tmp probe).
 *       A third pass the same day (1 thread, B=8 cold, 2-5 rounds
 *       alternating; nothing kept):
 *       - bf16 with half its arithmetic (timing only, wrong results: the
 *         odd-element FMAs of Q.K and P.V taken out): L2-resident 72-73 ->
 *         61-62 cycles per key and head, cold 31.0-32.1 -> 24.7-25.3 GB/s
 *         (block 32: 30.9-33.6 -> 25.5-26.1), no better with the prefetch
 *         2 or 4 steps ahead.
 *       - every load in address order (K key by key, each row front to
 *         back; P.V over whole rows, two rows per pass): fp32 and bf16
 *         within 2 %, block 32 -4 to -7 %; L2-resident fp32 125-129 -> 104
 *         cycles.  Without software prefetch it read 11.7-12.7 GB/s (9.3-10.2
 *         in this tile's order): the hardware prefetchers do not carry it.
 *       - a lean fp32 step in groups of 4 keys (Q.K of 4 keys, their
 *         softmax as one vector of 4 rows x 4 keys, P.V of those keys over
 *         whole rows, NTA prefetches 4-16 keys ahead in each stream):
 *         L2-resident 128 -> 100 cycles, cold at best (8 keys ahead)
 *         29.1-30.0 against 29.8-30.9 GB/s; the same groups built from
 *         this file's pieces -23 to -43 %.
 *       A /tmp skeleton of the step does not predict the tile: there, K and
 *       V read key by key with 4-12 FMAs per line reach 37-40 GB/s on the
 *       hardware prefetchers alone (24 in this tile's Q.K order), 4-key
 *       groups beat 16-key steps (33-36.7 against 28.5-31.5 GB/s), and
 *       128-256 more L1 loads per 4 keys bring it down to 26 and 13.
 *
 * The hint reaches every K and V prefetch of the tile (fp32 and f16 V
 * through pv_rows' NTA instances in avx512_inl.h: on Zen 5 NTA
 * for fp32 V as well +4.2 to +8.5 %, 5 rounds).  Both
 * profiles compute the same values up to the chunking of the online
 * softmax (rounding only); the tests run the tile under each. */
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
 * usual head size) load K and V rows without a mask: a masked 16-bit load
 * (VMOVDQU16 with a zeroing mask) costs this CPU an extra micro-op on the
 * FMA ports.  Q.K with K in L1 (/tmp driver around qk_bf16, 4 rows, D 128)
 * 35.6-36.4 -> 33.1-34.2 cycles per key.  B=8 bf16 cold decode, 2
 * threads (`BENCH_DTYPE=bf16 scripts/bench_ab.sh 4 decode8`, against the
 * masked loads): block 32 +6.0 to +15.9 %, block 16 0 to +6.0 %; with
 * both builds -falign-loops=64, block 32 +3.7 to +8.3 %, block 16 -2.2 to
 * +1.8 %.  0 keeps the masks (for measurements). */
#ifndef ATTN_DEC_FULL
#define ATTN_DEC_FULL 1
#endif

/* The items this tile takes: one token, few rows, D within the stack
 * copies.  It uses none of the plan's work areas (scores, kv). */
int attn_decode_fits__avx512(const attn_tile_args *a) {
    return a->n_tok == 1 && a->g <= DEC_MAX_ROWS && a->head_dim <= DEC_MAX_D;
}

/* ---------------------------------------------------------- Q.K block */

/* Fold the 4 per-key accumulators of one row (lanes = partial sums) into
 * one vector: 128-bit lane L holds [S_L(k0), S_L(k1), S_L(k2), S_L(k3)],
 * S_L = the sum of lane L's 4 elements. */
INLINE __m512 fold4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    return _mm512_add_ps(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xEE));
}

/* Four fold4 results of keys 0-3, 4-7, 8-11, 12-15 -> the 16 full sums in
 * key order. */
INLINE __m512 fold16(__m512 u0, __m512 u1, __m512 u2, __m512 u3) {
    const __m512 x1 = _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88),
                                    _mm512_shuffle_f32x4(u0, u1, 0xDD));
    const __m512 x2 = _mm512_add_ps(_mm512_shuffle_f32x4(u2, u3, 0x88),
                                    _mm512_shuffle_f32x4(u2, u3, 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x1, x2, 0x88), _mm512_shuffle_f32x4(x1, x2, 0xDD));
}

/* Raw dots of R (<= DR) rows of the q block qb with keys [0, n) of the
 * chunk, into s (rows of stride DT).  qb is slice-major: slice sl of row r
 * is the sw floats at qb + (sl * R + r) * sw (sw = 32 for bf16, else 16),
 * so one pointer with immediate offsets reaches every row.  Keys of the
 * last group past n repeat key n-1 (their lanes are masked by the
 * softmax).  nc slices, the last one holding the elements of mask tm.
 * kpf: rows to prefetch (NULL entries: none), one line per K load, four
 * keys at a time: in the loads' order (slice by slice across the 4 rows),
 * or with ADDR (fp32 only: a slice is a line) in address order (row by
 * row).  decode_batch says which rows and why.  FULL (bf16, fp8): every
 * slice is whole (tm all ones), so K loads unmasked. */
INLINE void qk_block(int R, attn_dtype kdt, int FULL, int NTA, int ADDR, const float *qb, size_t nc,
                     uint32_t tm,
                     const void *const *krow, const void *const *kpf,
                     int32_t n, float *s) {
    const size_t es = attn__dtype_size(kdt);
    const size_t slice_bytes = kdt == ATTN_DTYPE_BF16 ? 64 : 16 * es;
    const size_t sw = kdt == ATTN_DTYPE_BF16 ? 32 : 16;
    __m512 u[DR][DT / 4];
    for (int32_t i0 = 0; i0 < n; i0 += 4) {
        const unsigned char *kr[4];
        UNROLL
        for (int j = 0; j < 4; j++)
            kr[j] = (const unsigned char *)krow[i0 + j < n ? i0 + j : n - 1];
        /* the next chunk's K rows of these 4 keys, one line per slice and
         * key (f16: every line twice), spread through the slice loop; keys
         * with nothing to prefetch re-touch their own row (no branch) */
        const char *pk[4];
        UNROLL
        for (int j = 0; j < 4; j++)
            pk[j] = kpf && i0 + j < DT && kpf[i0 + j] ? (const char *)kpf[i0 + j]
                                                          : (const char *)kr[j];
        __m512 c[DR][4];
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
                     * on purpose: it paces the prefetches.  A counter
                     * instead ran -3 to -5 % (fp32, 1 thread, B=8 cold,
                     * 3 rounds), and a chain of 4-5 dependent multiplies
                     * per prefetch (an explicit pace) as fast as this. */
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
                    /* a masked 16-bit load costs an extra micro-op here:
                     * whole slices load plainly (see ATTN_DEC_FULL) */
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
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
        const int g4 = i0 / 4;
        UNROLL
        for (int r = 0; r < R; r++) {
            /* groups past n were not computed: fold zeros (masked later) */
            const __m512 z = _mm512_setzero_ps();
            const __m512 u1 = i0 + 4 < n ? u[r][g4 + 1] : z;
            const __m512 u2 = i0 + 8 < n ? u[r][g4 + 2] : z;
            const __m512 u3 = i0 + 12 < n ? u[r][g4 + 3] : z;
            _mm512_store_ps(s + (size_t)r * DT + i0, fold16(u[r][g4], u1, u2, u3));
        }
    }
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
QK_FN(qk_bf16_full, ATTN_DTYPE_BF16, ATTN_DEC_FULL, 0, 0)
QK_FN(qk_f16, ATTN_DTYPE_F16, 0, 0, 0)
QK_FN(qk_f32_nta, ATTN_DTYPE_F32, 0, 1, 0)
QK_FN(qk_bf16_nta, ATTN_DTYPE_BF16, 0, 1, 0)
QK_FN(qk_bf16_full_nta, ATTN_DTYPE_BF16, ATTN_DEC_FULL, 1, 0)
QK_FN(qk_f16_nta, ATTN_DTYPE_F16, 0, 1, 0)
QK_FN(qk_fp8e4m3, ATTN_DTYPE_FP8_E4M3, 0, 0, 0)
QK_FN(qk_fp8e4m3_full, ATTN_DTYPE_FP8_E4M3, 1, 0, 0)
QK_FN(qk_fp8e5m2, ATTN_DTYPE_FP8_E5M2, 0, 0, 0)
QK_FN(qk_fp8e5m2_full, ATTN_DTYPE_FP8_E5M2, 1, 0, 0)
QK_FN(qk_fp8e4m3_nta, ATTN_DTYPE_FP8_E4M3, 0, 1, 0)
QK_FN(qk_fp8e4m3_full_nta, ATTN_DTYPE_FP8_E4M3, 1, 1, 0)
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
 * (ml all ones: plain loads, as in qk_block); R <= PR rows.  vpf (or
 * NULL): the next chunk's rows of the same keys. */
INLINE void pv_pairs_rows(int R, int NS, int FULL, int NTA, float *accp, size_t qs, size_t nc, size_t sl0,
                          uint32_t ml, const float *alpha, const float *p,
                          const void *const *vrow, const void *const *vpf, int32_t ilo,
                          int32_t ihi) {
    /* the next chunk's rows in address order, 2 slices (128 bytes) per key
     * and pass (pv_pf, avx512_inl.h) */
    pv_pf pc = pv_pf_start((int32_t)(sl0 / 2), (int32_t)((nc + 1) / 2), ilo, ihi);
    __m512 c[PR][4];
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
        pv_pairs_rows(R_, N_, ATTN_DEC_FULL, NTA_, accp, qs, nc, sl0, ml, alpha, p, vrow, vpf, \
                      ilo, ihi);                                                          \
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

/* Copy rows x D accumulators between the natural layout and the slice
 * layout of pv_pairs (to_slices: natural -> slices, padding dims zeroed). */
static void acc_layout(float *acc, size_t D, float *accp, size_t qs, int32_t rows,
                       int to_slices) {
    for (int32_t r = 0; r < rows; r++)
        for (size_t d = to_slices ? D : qs; d < qs; d++) accp[(size_t)r * qs + pair_pos(d)] = 0.0f;
    for (int32_t r = 0; r < rows; r++)
        for (size_t d = 0; d < D; d++) {
            const size_t pos = pair_pos(d);
            if (to_slices)
                accp[(size_t)r * qs + pos] = acc[(size_t)r * D + d];
            else
                acc[(size_t)r * D + d] = accp[(size_t)r * qs + pos];
        }
}

/* ------------------------------------------------------------- driver */

/* One batch of heads whose stack copies fit (decode_heads):
 * a[0 .. nh) share the token, the key range and everything but the KV
 * head and the per-head state.  Walk: chunk by chunk, every head of the
 * batch in turn, so one chunk's K (then V) pieces of all the batch's heads
 * are read one after another — adjacent pieces of the same blocks — and
 * the prefetch runs one (head, chunk) step ahead: the next head's rows of
 * this chunk, after the last head the first head's next chunk, after the
 * last chunk the item after a[nh - 1]. */
static void decode_batch(const attn_tile_args *a, int32_t nh, attn_dtype kdt,
                         const dec_profile *pr) {
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
     * slice-major within each block of DR rows (see qk_block).  Head h's
     * rows start at h * rows * qs. */
    const int pairs = kdt == ATTN_DTYPE_BF16;
    const size_t sw = pairs ? 32 : 16, nc = (D + sw - 1) / sw, qs = nc * sw;
    const size_t tail = D - (nc - 1) * sw;
    const uint32_t tm = tail >= 32 ? 0xffffffffu : (1u << tail) - 1u;
    const size_t head_floats = (size_t)rows * qs;
    ATTN_ASSERT((size_t)nh * head_floats <= DEC_STACK_FLOATS);
    float qp[DEC_STACK_FLOATS] __attribute__((aligned(64)));
    /* bf16: the accumulators live in the slice layout for the call */
    float accp[DEC_STACK_FLOATS] __attribute__((aligned(64)));
    for (int32_t h = 0; h < nh; h++) {
        ATTN_ASSERT(a[h].pos0 == a->pos0 && a[h].k0 == a->k0 && a[h].k1 == a->k1 &&
                    a[h].g == rows && a[h].head_dim == a->head_dim);
        for (int32_t r = 0; r < rows; r++) {
            const int32_t r0 = r / DR * DR, R = rows - r0 < DR ? rows - r0 : DR;
            const float *q = a[h].q + (size_t)r * D;
            float *blk = qp + (size_t)h * head_floats + (size_t)r0 * qs + (size_t)(r - r0) * sw;
            /* shifts, not a division by sw per element: that division cost
             * ~10 % of a 256-key, L2-resident decode of 8 heads (/tmp driver) */
            const unsigned sw_log2 = pairs ? 5 : 4;
            for (size_t d = 0; d < qs; d++) {
                const size_t pos = pairs ? pair_pos(d) : d;
                blk[(pos >> sw_log2) * (size_t)R * sw + (pos & (sw - 1))] = d < D ? q[d] : 0.0f;
            }
        }
        if (pairs) acc_layout(a[h].acc, D, accp + (size_t)h * head_floats, qs, rows, 1);
    }
    void (*qk)(int32_t, const float *, size_t, uint32_t, const void *const *,
               const void *const *, int32_t, float *) = qk_f32;
    void (*pv)(int32_t, float *, size_t, const float *, const float *, size_t,
               const void *const *, const void *const *, int32_t, int32_t) = pv_block_f32;
    if (kdt == ATTN_DTYPE_BF16) qk = tm == 0xffffffffu ? qk_bf16_full : qk_bf16;
    if (kdt == ATTN_DTYPE_F16) qk = qk_f16, pv = pv_block_f16;
    /* fp8: whole 16-dim slices load plainly (FULL), as bf16's */
    const int whole = tm == 0xffffu;
    if (kdt == ATTN_DTYPE_FP8_E4M3)
        qk = whole ? qk_fp8e4m3_full : qk_fp8e4m3, pv = pv_block_fp8e4m3;
    if (kdt == ATTN_DTYPE_FP8_E5M2)
        qk = whole ? qk_fp8e5m2_full : qk_fp8e5m2, pv = pv_block_fp8e5m2;
    void (*pvp)(int32_t, float *, size_t, size_t, uint32_t, const float *, const float *,
                const void *const *, const void *const *, int32_t, int32_t) = pv_pairs;
    if (pr->nta) {
        qk = kdt == ATTN_DTYPE_BF16 ? (tm == 0xffffffffu ? qk_bf16_full_nta : qk_bf16_nta)
             : kdt == ATTN_DTYPE_F16 ? qk_f16_nta
             : kdt == ATTN_DTYPE_FP8_E4M3 ? (whole ? qk_fp8e4m3_full_nta : qk_fp8e4m3_nta)
             : kdt == ATTN_DTYPE_FP8_E5M2 ? (whole ? qk_fp8e5m2_full_nta : qk_fp8e5m2_nta)
                                          : qk_f32_nta;
        pvp = pv_pairs_nta;
        pv = kdt == ATTN_DTYPE_F16 ? pv_block_f16_nta
             : kdt == ATTN_DTYPE_FP8_E4M3 ? pv_block_fp8e4m3_nta
             : kdt == ATTN_DTYPE_FP8_E5M2 ? pv_block_fp8e5m2_nta
                                          : pv_block_f32_nta;
    }

    const void *krow[DT], *vrow[DT], *kpf[DT], *vpf[DT];
    const char *smlines[DEC_SM_MAX * (DEC_MAX_D * 4 / 64)];
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
    float sc[DEC_MAX_ROWS * DT] __attribute__((aligned(64))); /* scores, then weights */
    const size_t row_bytes = D * es;

    /* chunks are aligned to k0 as in the general tile, starting at the
     * first chunk that holds a visible key */
    const int32_t dt = kdt == ATTN_DTYPE_F32 ? pr->dt_f32 : pr->dt_16; /* keys per chunk */
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
            const int64_t pf0 = (int64_t)c0 + DEC_PF_DIST * dt;
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
            int32_t rlo[DEC_MAX_ROWS], rhi[DEC_MAX_ROWS], jh[DEC_MAX_ROWS];
            int64_t kp0[DEC_MAX_ROWS];
            for (int32_t r = 0; r < rows; r++) /* every head of the token sees the same keys */
                rlo[r] = ilo, rhi[r] = ihi, jh[r] = r, kp0[r] = (int64_t)c0 - x->pos0;
            const float *qh = qp + (size_t)h * head_floats;
            for (int32_t r0 = 0; r0 < rows; r0 += DR) {
                const int32_t R = rows - r0 < DR ? rows - r0 : DR;
                qk(R, qh + (size_t)r0 * qs, nc, tm, krow,
                   r0 == 0 && ATTN_AVX512_DEC_PF ? pf_qk : NULL, n, sc + (size_t)r0 * DT);
            }
            float alpha[DEC_MAX_ROWS];
            softmax_rows_pf(x, rows, dt / 16, rlo, rhi, jh, kp0, sc, DT, x->m, x->l, alpha,
                            ATTN_AVX512_DEC_PF && nsm ? &smc : NULL);
            float *acch = accp + (size_t)h * head_floats;
            for (int32_t r0 = 0; r0 < rows; r0 += PR) {
                const int32_t R = rows - r0 < PR ? rows - r0 : PR;
                const void *const *pfv = r0 == 0 && ATTN_AVX512_DEC_PF ? pf_pv : NULL;
                if (pairs)
                    pvp(R, acch + (size_t)r0 * qs, qs, nc, tm, alpha + r0, sc + (size_t)r0 * DT,
                             vrow, pfv, ilo, ihi);
                else
                    pv(R, x->acc + (size_t)r0 * D, D, alpha + r0, sc + (size_t)r0 * DT, DT, vrow,
                       pfv, ilo, ihi);
            }
        }
    }
    if (pairs)
        for (int32_t h = 0; h < nh; h++)
            acc_layout(a[h].acc, D, accp + (size_t)h * head_floats, qs, rows, 0);
}

static void decode_heads(const attn_tile_args *a, int32_t n, attn_dtype kdt) {
    ATTN_ASSERT(n >= 1);
    for (int32_t h = 0; h < n; h++) ATTN_ASSERT(attn_decode_fits__avx512(&a[h]));
    ATTN_ASSERT(a->g >= 1 && a->head_dim >= 1);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    /* as many heads per batch as the stack copies hold (8 at g 4, D 128) */
    const size_t sw = kdt == ATTN_DTYPE_BF16 ? 32 : 16;
    const size_t qs = ((size_t)a->head_dim + sw - 1) / sw * sw;
    const int32_t per = (int32_t)(DEC_STACK_FLOATS / ((size_t)a->g * qs));
    const dec_profile *pr = &dec_profiles[a->tune == ATTN__TUNE_AMD ? ATTN__TUNE_AMD : ATTN__TUNE_INTEL];
    for (int32_t h0 = 0; h0 < n; h0 += per)
        decode_batch(a + h0, n - h0 < per ? n - h0 : per, kdt, pr);
}

void attn_decode_f32__avx512(const attn_tile_args *a, int32_t n) {
    decode_heads(a, n, ATTN_DTYPE_F32);
}
void attn_decode_bf16__avx512(const attn_tile_args *a, int32_t n) {
    decode_heads(a, n, ATTN_DTYPE_BF16);
}
void attn_decode_f16__avx512(const attn_tile_args *a, int32_t n) {
    decode_heads(a, n, ATTN_DTYPE_F16);
}
void attn_decode_fp8e4m3__avx512(const attn_tile_args *a, int32_t n) {
    decode_heads(a, n, ATTN_DTYPE_FP8_E4M3);
}
void attn_decode_fp8e5m2__avx512(const attn_tile_args *a, int32_t n) {
    decode_heads(a, n, ATTN_DTYPE_FP8_E5M2);
}
