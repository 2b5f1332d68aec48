/*
 * mask.h — the visibility rule of DESIGN §2 as one inline function, shared
 * by every kernel twin (portable and SIMD) so that the rule lives in exactly
 * one place and an injected masking bug (harness measurement) reaches every
 * ISA at once.
 */
#ifndef ATTN_MASK_H
#define ATTN_MASK_H

#include <stdint.h>

/* The visibility rule of DESIGN §2 for position p, as the half-open key
 * interval [*lo, *hi) (visible keys of one row are always contiguous):
 *   causal:     k <= p,        window: k >= p - (W - 1)
 *   non-causal: k < seq_len,   window: p - (W - 1) <= k <= p + (W - 1)
 * The result is NOT clipped to the item's [k0, k1); callers do that.
 * This is the single place the rule lives of every kernel twin: the per-key
 * mask in the tile kernel tests every key against this interval. int64
 * so p +- W cannot overflow for any window the API accepts. */
static inline void attn__row_interval(int64_t p, int32_t seq_len, int32_t causal, int32_t window,
                                int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = seq_len;
    if (causal) {
        if (p + 1 < h) h = p + 1;
    }
    if (window > 0) {
#ifndef ATTN_INJECT_window_off_by_one
        int64_t wl = p - ((int64_t)window - 1);
#else
        /* INJECTED BUG (window_off_by_one): W keys back instead of W - 1,
         * so a window of W sees W + 1 keys. */
        int64_t wl = p - (int64_t)window;
#endif
        if (wl > l) l = wl;
        if (!causal) {
            int64_t wh = p + (int64_t)window; /* k <= p + W - 1 */
            if (wh < h) h = wh;
        }
    }
    *lo = l;
    *hi = h;
}

/* The last key (exclusive) a tile kernel walks for an item ending at k1, and
 * the key limit non-causal rows are masked at.  Both are the plan's values
 * (k1, seq_len); they exist as functions so that the padding bug below
 * reaches every kernel twin at once. */
static inline int64_t attn__pad_to_block(int64_t n, int32_t block_size) {
    return (n + block_size - 1) / block_size * block_size;
}

static inline int32_t attn__tile_end(int32_t k1, int32_t seq_len, int32_t causal,
                                     int32_t block_size) {
#ifdef ATTN_INJECT_padding_keys
    /* INJECTED BUG (padding_keys): the tile runs to the end of the last
     * block and non-causal rows are not masked at seq_len, so padding slots
     * (stale or never written) leak into encoder rows. */
    if (!causal && k1 == seq_len) return (int32_t)attn__pad_to_block(k1, block_size);
#else
    (void)seq_len;
    (void)causal;
    (void)block_size;
#endif
    return k1;
}

static inline int32_t attn__key_limit(int32_t seq_len, int32_t causal, int32_t block_size) {
#ifdef ATTN_INJECT_padding_keys
    if (!causal) return (int32_t)attn__pad_to_block(seq_len, block_size);
#else
    (void)causal;
    (void)block_size;
#endif
    return seq_len;
}

#endif /* ATTN_MASK_H */
