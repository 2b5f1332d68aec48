/*
 * kernels_decl.h — the prototypes of every kernel table's kernels, tables
 * and CPU checks, and the list of the SIMD tables this build compiled.
 * The one place a kernel is declared: kernel files, table files,
 * dispatch.c and the tests include it; no .c file declares another file's
 * kernel by hand.
 *
 * A SIMD table T (docs/adding-an-isa.md) is compiled when mk/isa.mk lists
 * it, which defines ATTN_HAVE_<T>; its block below then declares its
 * kernels and adds it to ATTN__SIMD_TABLES, the list dispatch.c builds its
 * table of tables from (worst first: the best usable one is the default).
 * mk/isa.mk also passes the count (ATTN_HAVE_TABLES), and dispatch.c
 * refuses to compile when a compiled table is missing from the list.
 *
 * Names: <op>_<dtype>__<isa>.  The table entries (tile, tile_heads,
 * load_q, store, merge) have portable twins of the same signature in
 * ref.c; the SIMD tables' tile entries are routers (table_<isa>.c) that
 * pick one of the table's tiles per item: flash (the general tile), decode
 * (single-token items), lanes (many-row prefill), pairs (bf16 pairs on
 * VDPBF16PS), each with a `fits` predicate where it takes only some items.
 */
#ifndef ATTN_KERNELS_DECL_H
#define ATTN_KERNELS_DECL_H

#include "kernels.h"

/* A table file compiled for an emulated table (mk/isa.mk: ATTN_EMU, then
 * every avx512 or amx symbol renamed with the suffix _emu) names itself "<T>@emu"
 * and says which native table it emulates. */
#ifdef ATTN_EMU
#define ATTN__TABLE_NAME(t) t "@emu"
#define ATTN__TABLE_EMULATES(t) t
#else
#define ATTN__TABLE_NAME(t) t
#define ATTN__TABLE_EMULATES(t) NULL
#endif

/* The signatures of the table entries, for the prototypes below. */
#define ATTN__DECL_LOAD_Q(name)                                                          \
    uint32_t name(const void *src, size_t token_stride, int32_t n_tok, int32_t g,            \
              int32_t head_dim, float scale, float *dst)
#define ATTN__DECL_STORE(name)                                                           \
    void name(const float *acc, const float *m, const float *l, int32_t n_tok, int32_t g, \
              int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,             \
              size_t token_stride)
/* load_q and store for f32, bf16, f16 of one ISA */
#define ATTN__DECL_IO(isa)                                                               \
    ATTN__DECL_LOAD_Q(attn_load_q_f32__##isa);                                           \
    ATTN__DECL_LOAD_Q(attn_load_q_bf16__##isa);                                          \
    ATTN__DECL_LOAD_Q(attn_load_q_f16__##isa);                                           \
    ATTN__DECL_STORE(attn_store_f32__##isa);                                             \
    ATTN__DECL_STORE(attn_store_bf16__##isa);                                            \
    ATTN__DECL_STORE(attn_store_f16__##isa)

/* ---- ref: portable, always compiled (ref.c, table_ref.c) ---- */
void attn_tile_f32__ref(const attn_tile_args *a);
void attn_tile_bf16__ref(const attn_tile_args *a);
void attn_tile_f16__ref(const attn_tile_args *a);
void attn_tile_fp8e4m3__ref(const attn_tile_args *a);
void attn_tile_fp8e5m2__ref(const attn_tile_args *a);
ATTN__DECL_IO(ref);
void attn_merge_f32__ref(const float *partial, const float *pm, const float *pl,
                         int32_t pieces, int32_t rows, int32_t head_dim, int32_t m_exp,
                         float *acc, float *m, float *l);
const attn_kernels *attn__kernels_ref(void);
/* the conversion paths of each table's kernels (kernels.h, a test hook) */
const attn__cvt_path *attn__cvt_ref(int *count);

/* ---- avx2 (avx2.c, avx2_decode.c, table_avx2.c) ---- */
#ifdef ATTN_HAVE_AVX2
#define ATTN__AVX2_KV_TILE 32 /* keys per chunk: the table's kv_tile */
void attn_flash_f32__avx2(const attn_tile_args *a);
void attn_flash_bf16__avx2(const attn_tile_args *a);
void attn_flash_f16__avx2(const attn_tile_args *a);
void attn_flash_fp8e4m3__avx2(const attn_tile_args *a);
void attn_flash_fp8e5m2__avx2(const attn_tile_args *a);
/* n single-token items that differ only in their KV head (attn_tile_heads_fn;
 * avx2_decode.c) */
int attn_decode_fits__avx2(const attn_tile_args *a);
void attn_decode_f32__avx2(const attn_tile_args *a, int32_t n);
void attn_decode_bf16__avx2(const attn_tile_args *a, int32_t n);
void attn_decode_f16__avx2(const attn_tile_args *a, int32_t n);
void attn_decode_fp8e4m3__avx2(const attn_tile_args *a, int32_t n);
void attn_decode_fp8e5m2__avx2(const attn_tile_args *a, int32_t n);
/* the routers (table_avx2.c) */
void attn_tile_f32__avx2(const attn_tile_args *a);
void attn_tile_bf16__avx2(const attn_tile_args *a);
void attn_tile_f16__avx2(const attn_tile_args *a);
void attn_tile_fp8e4m3__avx2(const attn_tile_args *a);
void attn_tile_fp8e5m2__avx2(const attn_tile_args *a);
void attn_tile_heads_f32__avx2(const attn_tile_args *a, int32_t n);
void attn_tile_heads_bf16__avx2(const attn_tile_args *a, int32_t n);
void attn_tile_heads_f16__avx2(const attn_tile_args *a, int32_t n);
void attn_tile_heads_fp8e4m3__avx2(const attn_tile_args *a, int32_t n);
void attn_tile_heads_fp8e5m2__avx2(const attn_tile_args *a, int32_t n);
ATTN__DECL_IO(avx2);
const attn_kernels *attn__kernels_avx2(void);
const attn__cvt_path *attn__cvt_avx2(int *count);
int attn__cpu_avx2(void);
#define ATTN__TABLE_AVX2(X) X(avx2)
#else
#define ATTN__TABLE_AVX2(X)
#endif

/* ---- avx512 (avx512.c, avx512_decode.c, avx512_lanes.c, table_avx512.c) ----
 * Declared for the native table, and for the avx512 files' own compile as
 * an emulated table (ATTN_EMU), which a build without the native one does
 * too; only the native table is listed in ATTN__TABLE_AVX512. */
#if defined(ATTN_HAVE_AVX512) || defined(ATTN_EMU)
#define ATTN__AVX512_KV_TILE 64 /* keys per chunk: the avx512 tables' kv_tile */
#define ATTN__AVX512_ROWS_TARGET 128 /* their rows_target: why in table_avx512.c */
#define ATTN__AVX512_ROWS_MULTIPLE 16 /* their rows_multiple: the lanes tiles put 16 rows
                                         in each vector (attn_lanes_fits__avx512*) */
void attn_flash_f32__avx512(const attn_tile_args *a);
void attn_flash_bf16__avx512(const attn_tile_args *a);
void attn_flash_f16__avx512(const attn_tile_args *a);
void attn_flash_fp8e4m3__avx512(const attn_tile_args *a);
void attn_flash_fp8e5m2__avx512(const attn_tile_args *a);
/* n single-token items that differ only in their KV head (attn_tile_heads_fn) */
int attn_decode_fits__avx512(const attn_tile_args *a);
void attn_decode_f32__avx512(const attn_tile_args *a, int32_t n);
void attn_decode_bf16__avx512(const attn_tile_args *a, int32_t n);
void attn_decode_f16__avx512(const attn_tile_args *a, int32_t n);
void attn_decode_fp8e4m3__avx512(const attn_tile_args *a, int32_t n);
void attn_decode_fp8e5m2__avx512(const attn_tile_args *a, int32_t n);
#define ATTN__AVX512_DEC_KEYS 64 /* the decode tile's bound on keys per chunk */
/* The decode tile's dot-product path: avx512_decode.c walks the items
 * (chunks, prefetches, the softmax with its weights rounded to bf16), a
 * table with bf16 dot products supplies the slice layouts and the
 * micro-kernels (avx512bf16_dec8.c).  q (bf16 words) and the accumulators
 * (floats) are kept per 64-dim slice, dim e of a slice at q_pos(e) and
 * acc_pos(e).  qk: the raw dots of R <= 4 rows, row r's q slice sl at
 * qb + (sl R + r) 64, with keys [0, n) of the chunk (krow; kpf: the next
 * rows to prefetch, or NULL entries) into s (row stride
 * ATTN__AVX512_DEC_KEYS).  pv: acc = acc alpha + p V for R <= 4 rows
 * (row stride qs) over keys [ilo, ihi), p the weights (bf16 values), vpf
 * as kpf.  tm: the codes of a row's last slice that are inside D.
 * q_whole / acc_whole: the same layouts for ns whole slices of one row at
 * once (vector code; the positions above say what they must do): q
 * rounded to bf16 into slices R x 64 words apart, the accumulators
 * between natural order and slices (to_slices, else back). */
typedef struct attn__dec_dot {
    size_t (*q_pos)(size_t e);
    size_t (*acc_pos)(size_t e);
    void (*q_whole)(const float *q, size_t ns, size_t R, uint16_t *blk);
    void (*acc_whole)(float *acc, size_t ns, float *accp, int to_slices);
    void (*qk)(int32_t R, const uint16_t *qb, size_t nc, uint64_t tm, const void *const *krow,
               const void *const *kpf, int32_t n, float *s);
    void (*pv)(int32_t R, float *accp, size_t qs, size_t nc, uint64_t tm, const float *alpha,
               const float *p, const void *const *vrow, const void *const *vpf, int32_t ilo,
               int32_t ihi);
} attn__dec_dot;
void attn_decode_dot__avx512(const attn_tile_args *a, int32_t n, attn_dtype kdt,
                             const attn__dec_dot *dot);
int attn_lanes_fits__avx512(const attn_tile_args *a);
void attn_lanes_f32__avx512(const attn_tile_args *a);
int attn_lanes_widen_fits__avx512(const attn_tile_args *a);
void attn_lanes_widen__avx512(const attn_tile_args *a, attn_dtype kdt); /* f16, bf16, fp8 K/V */
/* the routers (table_avx512.c), shared with the avx512bf16 table */
void attn_tile_f32__avx512(const attn_tile_args *a);
void attn_tile_bf16__avx512(const attn_tile_args *a);
void attn_tile_f16__avx512(const attn_tile_args *a);
void attn_tile_fp8e4m3__avx512(const attn_tile_args *a);
void attn_tile_fp8e5m2__avx512(const attn_tile_args *a);
void attn_tile_heads_f32__avx512(const attn_tile_args *a, int32_t n);
void attn_tile_heads_bf16__avx512(const attn_tile_args *a, int32_t n);
void attn_tile_heads_f16__avx512(const attn_tile_args *a, int32_t n);
void attn_tile_heads_fp8e4m3__avx512(const attn_tile_args *a, int32_t n);
void attn_tile_heads_fp8e5m2__avx512(const attn_tile_args *a, int32_t n);
ATTN__DECL_IO(avx512);
const attn_kernels *attn__kernels_avx512(void);
const attn__cvt_path *attn__cvt_avx512(int *count);
/* one VSCALEFPS over 16 lanes (avx512.c; tests/test_emulation.c) */
void attn__scalef__avx512(float *dst, const float *a, const float *b);
int attn__cpu_avx512(void);
#endif
#ifdef ATTN_HAVE_AVX512
#define ATTN__TABLE_AVX512(X) X(avx512)
#else
#define ATTN__TABLE_AVX512(X)
#endif

/* ---- avx512bf16: the avx512 table plus bf16 tiles on VDPBF16PS
 *      (avx512bf16.c, avx512bf16_lanes.c, table_avx512bf16.c; needs avx512) ---- */
#if defined(ATTN_HAVE_AVX512BF16) || defined(ATTN_EMU)
void attn_pairs_bf16__avx512bf16(const attn_tile_args *a);
int attn_lanes_fits__avx512bf16(const attn_tile_args *a);
void attn_lanes_bf16__avx512bf16(const attn_tile_args *a);
void attn_tile_bf16__avx512bf16(const attn_tile_args *a);
void attn_tile_heads_bf16__avx512bf16(const attn_tile_args *a, int32_t n);
void attn_decode_fp8e4m3__avx512bf16(const attn_tile_args *a, int32_t n); /* avx512bf16_dec8.c */
void attn_decode_fp8e5m2__avx512bf16(const attn_tile_args *a, int32_t n);
void attn__cvt_dec8_e4m3__avx512bf16(const void *s, void *d, size_t n); /* test hooks: */
void attn__cvt_dec8_e5m2__avx512bf16(const void *s, void *d, size_t n); /* attn__cvt_avx512bf16 */
void attn_tile_fp8e4m3__avx512bf16(const attn_tile_args *a);
void attn_tile_fp8e5m2__avx512bf16(const attn_tile_args *a);
void attn_tile_heads_fp8e4m3__avx512bf16(const attn_tile_args *a, int32_t n);
void attn_tile_heads_fp8e5m2__avx512bf16(const attn_tile_args *a, int32_t n);
const attn_kernels *attn__kernels_avx512bf16(void);
const attn__cvt_path *attn__cvt_avx512bf16(int *count);
/* one VDPBF16PS over 16 lanes (avx512bf16_lanes.c; tests/test_emulation.c) */
void attn__dpbf16__avx512bf16(float *acc, const uint16_t *a, const uint16_t *b);
int attn__cpu_avx512bf16(void);
#endif
#ifdef ATTN_HAVE_AVX512BF16
#define ATTN__TABLE_AVX512BF16(X) X(avx512bf16)
#else
#define ATTN__TABLE_AVX512BF16(X)
#endif

/* ---- amx: the avx512bf16 table plus bf16 prefill on AMX tiles
 *      (amx.c, table_amx.c; needs avx512bf16) ---- */
#if defined(ATTN_HAVE_AVX512BF16) || defined(ATTN_EMU)
/* The avx512bf16 lanes tile's packing, which the AMX tile shares
 * (avx512bf16_lanes.c): q rows rounded to bf16 as Qt2 panels of dim-pair
 * words, and one S^T panel's rounded weights as key pairs in place. */
void attn__q_pairs__avx512bf16(const float *q, int32_t *qt2, int32_t rows, size_t D);
void attn__p_pairs__avx512bf16(float *st, int32_t n);
#endif
#if defined(ATTN_HAVE_AMX) || defined(ATTN_EMU)
void attn_lanes_bf16__amx(const attn_tile_args *a); /* takes what attn_lanes_fits__avx512bf16 takes */
void attn_tile_bf16__amx(const attn_tile_args *a);
void attn_tile_heads_bf16__amx(const attn_tile_args *a, int32_t n);
const attn_kernels *attn__kernels_amx(void);
const attn__cvt_path *attn__cvt_amx(int *count);
/* one TDPBF16PS of 16 x 16 (amx.c; tests/test_emulation.c) */
void attn__tdpbf16__amx(float *c, const uint16_t *a, const uint16_t *b);
int attn__cpu_amx(void);
#endif
#ifdef ATTN_HAVE_AMX
#define ATTN__TABLE_AMX(X) X(amx)
#else
#define ATTN__TABLE_AMX(X)
#endif

/* The compiled SIMD tables, worst first. */
/* ---- the emulated tables (mk/isa.mk, EMU_TABLES): the avx512 files'
 * objects with _emu appended to every avx512 symbol ---- */
#ifdef ATTN_HAVE_AVX512_EMU
const attn_kernels *attn__kernels_avx512_emu(void);
const attn__cvt_path *attn__cvt_avx512_emu(int *count);
void attn__scalef__avx512_emu(float *dst, const float *a, const float *b);
int attn__cpu_avx512_emu(void);
#define ATTN__TABLE_AVX512_EMU(X) X(avx512_emu)
#else
#define ATTN__TABLE_AVX512_EMU(X)
#endif
#ifdef ATTN_HAVE_AVX512BF16_EMU
const attn_kernels *attn__kernels_avx512bf16_emu(void);
const attn__cvt_path *attn__cvt_avx512bf16_emu(int *count);
void attn__dpbf16__avx512bf16_emu(float *acc, const uint16_t *a, const uint16_t *b);
int attn__cpu_avx512bf16_emu(void);
#define ATTN__TABLE_AVX512BF16_EMU(X) X(avx512bf16_emu)
#else
#define ATTN__TABLE_AVX512BF16_EMU(X)
#endif
#ifdef ATTN_HAVE_AMX_EMU
const attn_kernels *attn__kernels_amx_emu(void);
const attn__cvt_path *attn__cvt_amx_emu(int *count);
void attn__tdpbf16__amx_emu(float *c, const uint16_t *a, const uint16_t *b);
int attn__cpu_amx_emu(void);
#define ATTN__TABLE_AMX_EMU(X) X(amx_emu)
#else
#define ATTN__TABLE_AMX_EMU(X)
#endif

/* Native tables worst first, then the emulated ones. */
#define ATTN__SIMD_TABLES(X) ATTN__TABLE_AVX2(X) ATTN__TABLE_AVX512(X) ATTN__TABLE_AVX512BF16(X) \
    ATTN__TABLE_AMX(X) ATTN__TABLE_AVX512_EMU(X) ATTN__TABLE_AVX512BF16_EMU(X) ATTN__TABLE_AMX_EMU(X)

#endif /* ATTN_KERNELS_DECL_H */
