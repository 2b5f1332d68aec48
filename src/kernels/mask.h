/*
 * mask.h — the visibility rule of docs/design.md §2 as inline functions, shared
 * by every kernel twin (portable and SIMD) and by the plan and executor
 * (which resolve each layer's window into a (left, right) pair here), so
 * that the rule lives in exactly one place and an injected masking bug
 * (harness measurement) reaches every ISA at once.
 */
#ifndef ATTN_MASK_H
#define ATTN_MASK_H

#include <stdint.h>

/* A layer's window as the (left, right) pair a request of the given
 * causality sees (docs/design.md §2, vLLM's sliding_window_left/right): key k is
 * visible to position p when k >= p - left (left -1: unbounded) and
 * k <= p + right (right -1: unbounded), and causal rows only k <= p.  The
 * single window W (pair = 0; -1: none) is shorthand for (W - 1, 0) on a
 * causal request and (W - 1, W - 1) on a non-causal one; pair = 1 takes
 * (left, right) as given.  The executor resolves every item's pair here
 * and the builder its group's, so the rule lives in this one place. */
static inline void attn__window_pair(int32_t window, int32_t pair, int32_t left, int32_t right,
                                     int32_t causal, int32_t *l, int32_t *r) {
    if (pair) {
        *l = left;
        *r = causal ? 0 : right;
        return;
    }
    if (window < 1) {
        *l = *r = -1;
        return;
    }
    *l = window - 1;
    *r = causal ? 0 : window - 1;
}

/* The visibility rule for position p as the half-open key interval
 * [*lo, *hi) (visible keys of one row are always contiguous):
 *   0 <= k < seq_len, causal: k <= p, and p - left <= k <= p + right
 *   for the bounds that are not -1.
 * The result is NOT clipped to the item's [k0, k1); callers do that.
 * This is the single place the rule lives of every kernel twin: the per-key
 * mask in the tile kernel tests every key against this interval.  int64
 * so p +- a window cannot overflow for any window the API accepts. */
static inline void attn__row_interval(int64_t p, int32_t seq_len, int32_t causal, int32_t left,
                                      int32_t right, int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = seq_len;
    if (causal && p + 1 < h) h = p + 1;
#ifndef ATTN_INJECT_window_off_by_one
    if (left >= 0 && p - left > l) l = p - left;
#else
    /* INJECTED BUG (window_off_by_one): the window's left edge one key too
     * far back, so a window of W (left W - 1) sees W + 1 keys. */
    if (left >= 0 && p - left - 1 > l) l = p - left - 1;
#endif
    if (right >= 0 && p + right + 1 < h) h = p + right + 1;
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
