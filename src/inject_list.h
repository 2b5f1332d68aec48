/*
 * inject_list.h — every historical bug the engine and the adapters can carry,
 * for measuring the harness (docs/design.md §7).  `make INJECT=<name>` compiles one in
 * (-DATTN_INJECT_<name>=1); each lives behind `#if(def) ATTN_INJECT_<name>`
 * where that mistake would really be made, and also switches off any
 * engine check that would turn it into a refusal.  Normal builds carry none.
 *
 * The list, one bug per line; the mutant campaign (scripts/mutants.py) and
 * tests/test_inject.c read it:
 *     X(<name>, <engine it is fuzzed through>, "<file from the repository
 *       root>", "<what it models>")
 * An adapter bug is fuzzed through its own engine (make fuzz ENGINE=...).
 */
#ifndef ATTN_INJECT_LIST_H
#define ATTN_INJECT_LIST_H

#define ATTN_INJECT_LIST(X)                                                                \
    X(model_wide_heads, attnguard, "src/builder.c", "scratchpad sized from the model-wide query-head count") \
    X(out_dtype_sizing, attnguard, "src/layout.c", "fp32 partials sized with the output element size") \
    X(group_window, attnguard, "src/builder.c", "group window taken from one layer: global layers windowed") \
    X(window_off_by_one, attnguard, "src/kernels/mask.h", "the visible interval starts left + 1 keys back, not left") \
    X(padding_keys, attnguard, "src/kernels/mask.h", "keys past seq_len visible to non-causal rows") \
    X(stale_split, attnguard, "src/executor.c", "an all-masked split piece leaves its partial unwritten") \
    X(gqa_map, attnguard, "src/executor.c", "query head h reads KV head h % Hkv instead of h / g") \
    X(merge_scale, attnguard, "src/kernels/ref.c", "log-sum-exp merge forgets to rescale one piece") \
    X(causal_offset, attnguard, "src/executor.c", "query position i instead of seq_len - q_len + i") \
    X(split_flags_overlap, attnguard, "src/layout.c", "completion flags and partials of a slot overlap") \
    X(fp8_tile_sizing, attnguard, "src/layout.c", "KV work tiles sized with the cache's element size, not fp32") \
    X(scale_twice_tail, attnguard, "src/kernels/avx512.c", "the scale applied twice in load_q's masked tail") \
    X(bf16_truncate, attnguard, "src/kernels/avx512.c", "fp32 -> bf16 output truncated instead of rounded") \
    X(q_tail_lane, attnguard, "src/kernels/avx512.c", "load_q's masked tail loads one lane past the row group") \
    X(read_past_block, attnguard, "src/kernels/avx512_inl.h", "a block's key run one key too long") \
    X(bf16_lanes_unchecked, attnguard, "src/kernels/table_avx512.c", "many-row bf16 items sent to the widening lanes tile without its fit check") \
    X(bf16_lanes_as_f16, attnguard, "src/kernels/table_avx512.c", "the bf16 lanes route (both AVX-512 tables) widens bf16 K/V as f16") \
    X(amx_kgroup_direct, attnguard, "src/kernels/amx.c", "the AMX tile reads 16 keys straight from the cache without checking they lie in one block") \
    X(amx_pv_first_span, attnguard, "src/kernels/amx.c", "the AMX P.V of two row vectors covers only the first one's keys") \
    X(f16_decode_full_tail, attnguard, "src/kernels/avx512_decode.c", "the AVX-512 decode tile loads f16 K slices unmasked where head_dim leaves a partial last slice") \
    X(avx2_decode_run, attnguard, "src/kernels/avx2_decode.c", "the AVX2 decode tile's block run one key too long") \
    X(avx2_pv_rescale, attnguard, "src/kernels/avx2_decode.c", "the AVX2 decode P.V leaves half its dims unrescaled") \
    X(region_row_short, attnguard, "src/layout.c", "the accumulator region sized one row short") \
    X(no_merge_barrier, attnguard, "src/executor.c", "no barrier between the pieces and their merge") \
    X(large_q_exponent, attnguard, "src/executor.c", "huge-q rows rescaled with an exponent one too small") \
    X(wide_sink_dropped, attnguard, "src/wide.c", "the fp64 path leaves the sink out of the denominator") \
    X(wide_alibi_sign, attnguard, "src/wide.c", "the fp64 path's ALiBi distance taken the other way round") \
    X(wide_softcap_units, attnguard, "src/wide.c", "the fp64 path caps the raw dot product, scales after") \
    X(wide_acc_missed, attnguard, "src/executor.c", "rows whose P.V sums left fp32 not sent to the fp64 path") \
    X(first_request_only, attnguard, "src/plan.c", "seq_lens checked for the first request only") \
    X(adapter_scratch_short, attnguard, "engines/attnguard/adapter.c", "the adapter reports its scratch one alignment unit short") \
    X(ggml_work_short, ggml, "engines/ggml/ggml_adapter.c", "ggml's work buffer without graph_plan's per-thread cache line") \
    X(ort_kv_region_short, ort, "engines/ort/ort_plan.c", "the gathered K/V region one key row short per request")

#endif /* ATTN_INJECT_LIST_H */
