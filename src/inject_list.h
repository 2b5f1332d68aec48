/*
 * inject_list.h — every historical bug the engine can carry, for measuring
 * the harness (DESIGN §7).  `make INJECT=<name>` compiles one in
 * (-DATTN_INJECT_<name>=1); each lives behind `#if(def) ATTN_INJECT_<name>`
 * where that mistake would really be made, and also switches off any
 * engine check that would turn it into a refusal.  Normal builds carry none.
 *
 * The list, one bug per line, in the form the mutant campaign reads:
 *     X(<name>, "<where>", "<what it models>")
 */
#ifndef ATTN_INJECT_LIST_H
#define ATTN_INJECT_LIST_H

#define ATTN_INJECT_LIST(X)                                                                \
    X(model_wide_heads, "builder.c", "scratchpad sized from the model-wide query-head count") \
    X(out_dtype_sizing, "layout.c", "fp32 partials sized with the output element size") \
    X(group_window, "builder.c", "group window taken from one layer: global layers windowed") \
    X(window_off_by_one, "kernels/mask.h", "a window of W keeps W keys back instead of W-1") \
    X(padding_keys, "kernels/mask.h", "keys past seq_len visible to non-causal rows") \
    X(stale_split, "executor.c", "an all-masked split piece leaves its partial unwritten") \
    X(gqa_map, "executor.c", "query head h reads KV head h % Hkv instead of h / g") \
    X(merge_scale, "kernels/ref.c", "log-sum-exp merge forgets to rescale one piece") \
    X(causal_offset, "executor.c", "query position i instead of seq_len - q_len + i") \
    X(split_flags_overlap, "layout.c", "completion flags and partials of a slot overlap") \
    X(fp8_tile_sizing, "layout.c", "KV work tiles sized with the cache's element size, not fp32") \
    X(scale_twice_tail, "kernels/avx512.c", "the scale applied twice in load_q's masked tail") \
    X(bf16_truncate, "kernels/avx512.c", "fp32 -> bf16 output truncated instead of rounded") \
    X(read_past_block, "kernels/avx512_inl.h", "a block's key run one key too long") \
    X(region_row_short, "layout.c", "the accumulator region sized one row short") \
    X(no_merge_barrier, "executor.c", "no barrier between the pieces and their merge") \
    X(large_q_exponent, "executor.c", "huge-q rows rescaled with an exponent one too small")

#endif /* ATTN_INJECT_LIST_H */
