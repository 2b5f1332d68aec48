/*
 * case_bytes.c — the compact binary form of a case (the bytes libFuzzer
 * mutates): a small data producer that decodes ANY byte string into a case,
 * and its canonical inverse.
 *
 * Owns: the byte grammar below and the shape distribution random bytes get.
 * Does not own what the engine accepts (src/), the text form (case.c) or the
 * oracles: deliberately invalid values are produced on purpose, in a
 * minority of decodes, and the engine must refuse them.
 *
 * Grammar.  Bytes are read front to back; a missing byte reads as 0, so the
 * empty input is a small valid case.  Most fields are one "escaped integer":
 *
 *     b < 0xFD          small form: a field-specific map of b, often relative
 *                       to fields decoded before (layer heads = kv_heads x g)
 *     0xFD lo hi        wide form: field minimum + u16, clamped to its maximum
 *                       (reaches kv_len 16384, 128 heads, D 256, ...)
 *     0xFE b0 b1 b2 b3  raw form: int32 LE clamped into the field's range
 *     0xFF k            invalid form: the field's k-th deliberately invalid
 *                       value (heads 0, window -3, q_len = kv_len + 1, ...);
 *                       k = 0xFE / 0xFF: INT32_MIN / INT32_MAX for every
 *                       count, length, window, head and thread field
 *
 * Floats (softcap, scale): b < 0xFE table, 0xFE + 4 raw bytes, 0xFF k invalid.
 * Field order:
 *     kv_heads  num_layers  { heads window attr [softcap] [scale] } x layers
 *     model_num_heads  head_dim  block_size  dtypes  causal  threads  split
 *     blocks  num_reqs  { kv_len q_len } x reqs  seed  options  expect  name
 * attr is one byte: bits 0-2 == 7 -> alibi, bits 3-5 == 7 -> sinks, bit 6 ->
 * a softcap follows, bit 7 -> a scale follows.  dtypes is one byte (0xFF +
 * three int8 for raw values, -128 and 127 standing for INT32_MIN and
 * INT32_MAX); split is an escaped code (0xFD: FIXED n, 0xFE: raw int8 mode
 * + int16 count, 0xFF 0xFC..0xFF: mode or count at int32's ends); seed is
 * b < 0xFD, or 0xFD/0xFE/0xFF + 2/4/8 bytes; options and name are empty
 * unless their length byte is >= 0xF0; expect is ok unless 0xFF k (k-th
 * refusal kind).
 *
 * Extension block (after name; absent bytes read as 0 = "as the base
 * says", so inputs older than the block keep their meaning): a budget byte,
 * a flags byte, then the blocks the flags name (per-request causal flags;
 * per layer (left, right), fp8 scales, explicit slope / sink lists; q/k/v
 * values; an fp8 or block kv dtype; a byte kept for old inputs).  X_* and XL_* spell the bits
 * out.  A budget other than 0 or >= 0xF8 caps kv lengths so that case_cost
 * fits 2^16..2^22 multiply-adds: random inputs stay cheap to run.
 *
 * Canonical encoding: each field takes the first small byte that decodes to
 * its value in the same context, else the invalid form, else wide, else raw;
 * the extension block is written only when a field differs from its base
 * value, and with budget 0.  The encoder runs the decoder's own maps, so the
 * two cannot drift apart.  docs/case-format.md describes both forms.
 */
#include "case_bytes.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { ESC_WIDE = 0xFD, ESC_RAW = 0xFE, ESC_BAD = 0xFF };

/* The generator's reach.  Lengths go just past 2^28 keys and the third
 * invalid value of a dimension just past 1024 (4096 for block sizes, 256
 * for threads): beyond the limits engines here declare, so that their
 * refusals are drawn too. */
#define SEQ_LIM ((int32_t)1 << 28)
#define SEQ_HI (SEQ_LIM + 1)
#define SPLITS_HI 65

/* ----------------------------------------------------------- reader/writer */

typedef struct reader {
    const uint8_t *p;
    size_t n, i;
} reader;

static unsigned rd_u8(reader *r) {
    if (r->i >= r->n) return 0;
    return r->p[r->i++];
}

static uint64_t rd_le(reader *r, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++) v |= (uint64_t)rd_u8(r) << (8 * k);
    return v;
}

typedef struct writer {
    uint8_t *p;
    size_t cap, n;
    int full;          /* cap exceeded */
    char *err;
    size_t errlen;
    int failed;        /* a value outside the domain */
} writer;

static void wr_u8(writer *w, unsigned b) {
    if (w->n >= w->cap) {
        w->full = 1;
        return;
    }
    w->p[w->n++] = (uint8_t)b;
}

static void wr_le(writer *w, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) wr_u8(w, (unsigned)(v >> (8 * k)) & 0xFFu);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void wr_fail(writer *w, const char *fmt, ...) {
    if (w->failed) return;     /* keep the first message */
    w->failed = 1;
    if (!w->err || !w->errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
}

/* --------------------------------------------------------- field context */

/* What a field's maps may look at: the case decoded so far, plus which
 * layer / request the field belongs to. */
typedef struct fctx {
    const case_spec *c;
    int32_t l, r;
} fctx;

typedef int32_t (*imap_fn)(unsigned b, const fctx *x);

typedef struct ispec {
    const char *name;
    imap_fn small;         /* b in 0..0xFC */
    imap_fn bad;           /* k in 0..255 */
    int32_t lo, hi;        /* the field's decodable range (wide and raw forms) */
    int extremes;          /* the invalid form's last two k are int32's ends (bad_of) */
} ispec;

/* A value the harness hands an engine raw reaches int32's two ends through
 * the invalid form: k = K_INT_MIN is INT32_MIN, K_INT_MAX is INT32_MAX
 * (the field's own map covers the rest), so the arithmetic where a raw
 * value meets an expression (the harness's, the engine's) is fuzzed at its
 * edges too.  Not for the fields that shape the case itself (layer and
 * request counts, the block policy, causal, expect). */
enum { K_INT_MIN = 0xFE, K_INT_MAX = 0xFF };

static int32_t bad_of(const ispec *s, unsigned k, const fctx *x) {
    if (s->extremes && k >= K_INT_MIN) return k == K_INT_MIN ? INT32_MIN : INT32_MAX;
    return s->bad(k, x);
}

static int32_t clamp64(int64_t v, int32_t lo, int32_t hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return (int32_t)v;
}

static int32_t rd_int(reader *r, const ispec *s, const fctx *x) {
    unsigned b = rd_u8(r);
    if (b < ESC_WIDE) return s->small(b, x);
    if (b == ESC_WIDE) return clamp64((int64_t)s->lo + (int64_t)rd_le(r, 2), s->lo, s->hi);
    if (b == ESC_RAW) return clamp64((int32_t)(uint32_t)rd_le(r, 4), s->lo, s->hi);
    return bad_of(s, rd_u8(r), x);
}

static void wr_int(writer *w, const ispec *s, const fctx *x, int32_t v) {
    for (unsigned b = 0; b < ESC_WIDE; b++)
        if (s->small(b, x) == v) {
            wr_u8(w, b);
            return;
        }
    for (unsigned k = 0; k < 256; k++)
        if (bad_of(s, k, x) == v) {
            wr_u8(w, ESC_BAD);
            wr_u8(w, k);
            return;
        }
    if (v >= s->lo && v <= s->hi && (int64_t)v - s->lo <= 0xFFFF) {
        wr_u8(w, ESC_WIDE);
        wr_le(w, (uint64_t)((int64_t)v - s->lo), 2);
        return;
    }
    if (v >= s->lo && v <= s->hi) {
        wr_u8(w, ESC_RAW);
        wr_le(w, (uint32_t)v, 4);
        return;
    }
    wr_fail(w, "%s = %d is outside the decodable range %d..%d", s->name, (int)v, (int)s->lo,
            (int)s->hi);
}

/* Floats: b < 0xFE table, 0xFE raw bits, 0xFF k invalid. */
typedef struct fspec {
    const char *name;
    const float *table;
    unsigned ntable;
    const float *bad;
    unsigned nbad;
} fspec;

/* Bit equality: the encoder keeps a NaN's sign and payload (the text form
 * prints "-nan" for a negative one). */
static int same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static float rd_float(reader *r, const fspec *s) {
    unsigned b = rd_u8(r);
    if (b < ESC_RAW) return s->table[b % s->ntable];
    if (b == ESC_RAW) {
        uint32_t bits = (uint32_t)rd_le(r, 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return s->bad[rd_u8(r) % s->nbad];
}

static void wr_float(writer *w, const fspec *s, float v) {
    for (unsigned i = 0; i < s->ntable; i++)
        if (same_float(s->table[i], v)) {
            wr_u8(w, i);
            return;
        }
    for (unsigned i = 0; i < s->nbad; i++)
        if (same_float(s->bad[i], v)) {
            wr_u8(w, ESC_BAD);
            wr_u8(w, i);
            return;
        }
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    wr_u8(w, ESC_RAW);
    wr_le(w, bits, 4);
}

/* ------------------------------------------------------------ the maps */

/* KV heads and group sizes: mostly small GQA shapes. */
static const int32_t kvh_tab[16] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 1, 3, 16, 5, 6, 32};
static const int32_t g_tab[16] = {1, 2, 4, 8, 6, 2, 1, 4, 3, 8, 5, 16, 2, 9, 7, 12};

static int32_t usable_kvh(const case_spec *c) {
    return (c->num_kv_heads >= 1 && c->num_kv_heads <= 128) ? c->num_kv_heads : 8;
}

/* Group size of layer 0 (1 when layer 0 is not a clean multiple). */
static int32_t base_g(const case_spec *c) {
    int32_t hkv = usable_kvh(c);
    if (c->num_layers < 1) return 2;
    int32_t h = c->layers[0].num_heads;
    if (h < hkv || h > 1024 || h % hkv) return 1;
    return h / hkv;
}

static int32_t m_kvh(unsigned b, const fctx *x) {
    (void)x;
    return kvh_tab[b % 16];
}
static int32_t b_kvh(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[4] = {0, -1, 1025, -7};
    return t[k % 4];
}

static int32_t m_layers(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t t[16] = {1, 1, 1, 1, 2, 2, 2, 3, 1, 2, 4, 8, 0, 1, 6, 2};
    return t[b % 16];
}
static int32_t b_layers(unsigned k, const fctx *x) {
    (void)x;
    return (int32_t)(k % 9);   /* no invalid count exists: 0..8 */
}

/* Layer 0: kv_heads x g.  Later layers: mostly layer 0's count; 1/16 a
 * Laguna-like larger count (48 -> 64), 1/16 another multiple. */
static int32_t m_heads(unsigned b, const fctx *x) {
    int32_t hkv = usable_kvh(x->c);
    if (x->l == 0) return hkv * g_tab[b % 16];
    int32_t g0 = base_g(x->c);
    switch (b % 16) {
    case 14: return hkv * (g0 + (g0 / 3 > 1 ? g0 / 3 : 1));
    case 15: return hkv * g_tab[(b >> 4) % 16];
    default: return x->c->layers[0].num_heads;
    }
}
static int32_t b_heads(unsigned k, const fctx *x) {
    int32_t hkv = usable_kvh(x->c);
    switch (k % 4) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1025;
    default: return hkv + 1;   /* Hq % Hkv != 0 (unless Hkv == 1) */
    }
}

/* Windows: half none, some shared with the previous layer, some shorter
 * than a block (1, 3, 8), a few long. */
static int32_t m_window(unsigned b, const fctx *x) {
    int32_t prev = x->l > 0 ? x->c->layers[x->l - 1].window : -1;
    static const int32_t t[16] = {-1, -1, -1, -1, -1, -1, 0, 0, 0, 1, 3, 8, 16, 33, 64, 512};
    int32_t v = t[b % 16];
    return v == 0 ? prev : v;
}
static int32_t b_window(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[4] = {0, -2, -3, SEQ_HI};
    return t[k % 4];
}

/* model_num_heads: often a different multiple of kv_heads than layer 0's
 * (64 -> 48), which is what the model-wide sizing bug needs. */
static int32_t m_model(unsigned b, const fctx *x) {
    const case_spec *c = x->c;
    int32_t hkv = usable_kvh(c);
    if (c->num_layers < 1) return hkv * g_tab[(b >> 3) % 16];
    int32_t g0 = base_g(c);
    switch (b % 8) {
    case 1: return hkv * (g0 * 3 / 4 > 1 ? g0 * 3 / 4 : 1);
    case 2: return hkv * (g0 / 2 > 1 ? g0 / 2 : 1);
    case 3: return hkv * (g0 + 1);
    case 5: return hkv * (g0 > 1 ? g0 - 1 : 1);
    case 7: return hkv * g_tab[(b >> 3) % 16];
    default: return c->layers[0].num_heads;
    }
}
static int32_t b_model(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[4] = {0, -1, 1025, 3};
    return t[k % 4];
}

/* Head dims: powers of two, odd sizes (80, 96, 112, 24, 48) and tiny ones. */
static int32_t m_dim(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t t[16] = {64, 32, 16, 8, 128, 64, 80, 96, 4, 1, 3, 256, 48, 2, 112, 24};
    return t[b % 16];
}
static int32_t b_dim(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[3] = {0, -1, 1025};
    return t[k % 3];
}

static int32_t m_bs(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t t[16] = {16, 16, 1, 2, 4, 8, 16, 32, 3, 5, 7, 64, 17, 128, 256, 16};
    return t[b % 16];
}
static int32_t b_bs(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[3] = {0, -1, 4097};
    return t[k % 3];
}

static int32_t m_causal(unsigned b, const fctx *x) {
    (void)x;
    return b % 8 == 7 ? 0 : 1;
}
static int32_t b_causal(unsigned k, const fctx *x) {
    (void)x;
    return (int32_t)(k & 1u);
}

static int32_t m_threads(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t t[8] = {1, 1, 2, 2, 3, 4, 1, 2};
    return t[b % 8];
}
static int32_t b_threads(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[3] = {0, -1, 257};
    return t[k % 3];
}

/* The three valid policies from small bytes; the block id past the cache
 * only as the invalid form. */
static int32_t m_blocks(unsigned b, const fctx *x) {
    (void)x;
    return (int32_t)(b % CASE_BLOCKS_OUTSIDE);
}
static int32_t b_blocks(unsigned k, const fctx *x) {
    (void)x;
    (void)k;
    return CASE_BLOCKS_OUTSIDE;
}

static int32_t m_reqs(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t t[16] = {1, 1, 1, 2, 2, 3, 4, 1, 2, 5, 8, 3, 16, 6, 32, 64};
    return t[b % 16];
}
static int32_t b_reqs(unsigned k, const fctx *x) {
    (void)x;
    (void)k;
    return 0;   /* an empty batch */
}

/* kv_len: 3/4 of bytes give 1..192 keys, the rest block edges and a few
 * long rows (up to 4097; the wide form reaches 16384 and beyond). */
static int32_t m_kv(unsigned b, const fctx *x) {
    (void)x;
    static const int32_t big[32] = {200,  255,  256,  257,  300,  383,  511,  512,
                                    513,  600,  700,  1000, 1023, 1024, 1025, 2047,
                                    2049, 4097, 193,  240,  250,  260,  320,  333,
                                    400,  448,  500,  640,  768,  800,  900,  1500};
    if (b < 0xC0) return (int32_t)b + 1;
    return big[(b - 0xC0) % 32];
}
static int32_t b_kv(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[3] = {0, -1, SEQ_HI};
    return t[k % 3];
}

/* q_len relative to kv_len: half decode, then prefill (q = kv), chunked
 * prefill (q < kv) of several sizes. */
static int32_t m_q(unsigned b, const fctx *x) {
    const int64_t kv = x->c->kv_len[x->r];   /* raw: INT32_MIN .. INT32_MAX */
    int64_t v;
    switch (b % 16) {
    case 8: v = kv; break;
    case 9: v = 2; break;
    case 10: v = 5; break;
    case 11: v = 16; break;
    case 12: v = kv / 2; break;
    case 13: v = 33; break;
    case 14: v = kv - 1; break;
    case 15: v = 8; break;
    default: v = 1; break;
    }
    if (v > kv) v = kv;
    if (v < 1) v = 1;
    return (int32_t)v;
}
static int32_t b_q(unsigned k, const fctx *x) {
    const int32_t kv = x->c->kv_len[x->r];
    switch (k % 4) {
    case 0: return kv < SEQ_HI ? kv + 1 : kv;   /* q_len > kv_len */
    case 1: return 0;
    case 2: return -1;
    default: return kv >= 0 && kv < SEQ_HI / 2 ? 2 * kv + 2 : kv;
    }
}

static int32_t m_expect(unsigned b, const fctx *x) {
    (void)x;
    (void)b;
    return AG_R_NONE;
}
static int32_t b_expect(unsigned k, const fctx *x) {
    (void)x;
    return (int32_t)(k % AG_R_COUNT);
}

static const ispec S_KVH = {"kv_heads", m_kvh, b_kvh, -2, 1 << 20, 1};
static const ispec S_LAYERS = {"num_layers", m_layers, b_layers, 0, CASE_MAX_LAYERS, 0};
static const ispec S_HEADS = {"heads", m_heads, b_heads, -2, 1 << 20, 1};
static const ispec S_WINDOW = {"window", m_window, b_window, -3, SEQ_HI, 1};
static const ispec S_MODEL = {"model_num_heads", m_model, b_model, -2, 1 << 20, 1};
static const ispec S_DIM = {"head_dim", m_dim, b_dim, -2, 1 << 20, 1};
static const ispec S_BS = {"block_size", m_bs, b_bs, -2, 1 << 20, 1};
static const ispec S_CAUSAL = {"causal", m_causal, b_causal, 0, 1, 0};
static const ispec S_THREADS = {"threads", m_threads, b_threads, -1, 1024, 1};
static const ispec S_BLOCKS = {"blocks", m_blocks, b_blocks, 0, CASE_BLOCKS_COUNT - 1, 0};
static const ispec S_REQS = {"num_reqs", m_reqs, b_reqs, 0, CASE_MAX_REQS, 0};
static const ispec S_KV = {"kv_len", m_kv, b_kv, -1, SEQ_HI, 1};
static const ispec S_Q = {"q_len", m_q, b_q, -1, SEQ_HI, 1};
static const ispec S_EXPECT = {"expect", m_expect, b_expect, 0, AG_R_COUNT - 1, 0};

static const float softcap_tab[8] = {30.0f, 50.0f, 5.0f, 1.0f, 0.5f, 20.0f, 10.0f, 2.0f};
static const float scale_tab[8] = {0.125f, 0.0883883476f, 1.0f, 0.5f,
                                   0.25f,  0.0625f,       2.0f, 0.1f};
static const float float_bad[5] = {-1.0f, NAN, INFINITY, -INFINITY, -0.5f};
static const fspec S_SOFTCAP = {"softcap", softcap_tab, 8, float_bad, 5};
static const fspec S_SCALE = {"scale", scale_tab, 8, float_bad, 5};

/* ------------------------------------------------------- composite fields */

/* dtypes: one byte; 0xFF + three int8 for anything else. */
static void dtypes_small(unsigned d, ag_dtype out[3]) {
    int32_t q, kv, o;
    switch (d & 3u) {
    case 2:
        q = (int32_t)((d >> 2) % 3);
        kv = (int32_t)((d >> 4) % 3);
        o = (int32_t)((d >> 6) % 3);
        break;
    case 3: q = kv = o = AG_F32; break;
    default: q = kv = o = (int32_t)((d >> 2) % 3); break;
    }
    out[0] = (ag_dtype)q;
    out[1] = (ag_dtype)kv;
    out[2] = (ag_dtype)o;
}

/* A raw dtype byte: int8, its two ends standing for int32's (bad_of). */
static int32_t dtype_raw(unsigned b) {
    const int8_t v = (int8_t)(uint8_t)b;
    return v == INT8_MIN ? INT32_MIN : v == INT8_MAX ? INT32_MAX : v;
}

static void rd_dtypes(reader *r, case_spec *c) {
    unsigned d = rd_u8(r);
    ag_dtype t[3];
    if (d != ESC_BAD) {
        dtypes_small(d, t);
    } else {
        for (int i = 0; i < 3; i++) t[i] = (ag_dtype)dtype_raw(rd_u8(r));
    }
    c->q_dtype = t[0];
    c->kv_dtype = t[1];
    c->out_dtype = t[2];
}

/* An fp8 cache next to q and out dtypes the small byte holds travels in the
 * extension block (the base byte then holds q and out only). */
static int kv_by_ext(const case_spec *c) {
    return (ag_dtype_is_fp8(c->kv_dtype) || ag_dtype_is_block(c->kv_dtype)) &&
           (unsigned)c->q_dtype <= AG_F16 && (unsigned)c->out_dtype <= AG_F16;
}

/* The extension's kv dtype byte b: b % 8 == 1 e4m3, 2 e5m2, 3 a block type
 * ((b >> 3) % 6: q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl); anything else
 * keeps the base dtype.  Returns the dtype, or -1 to keep. */
#define KV_BLOCK_TYPES 6
static int kv_ext_dtype(unsigned b) {
    switch (b % 8) {
    case 1: return AG_FP8_E4M3;
    case 2: return AG_FP8_E5M2;
    case 3: return AG_Q8_0 + (int)((b >> 3) % KV_BLOCK_TYPES);
    default: return -1;
    }
}

static unsigned kv_ext_byte(ag_dtype t) {
    if (t == AG_FP8_E4M3) return 1;
    if (t == AG_FP8_E5M2) return 2;
    return 3u | (unsigned)(t - AG_Q8_0) << 3;
}

static void wr_dtypes(writer *w, const case_spec *c) {
    const int any_kv = kv_by_ext(c);
    for (unsigned d = 0; d < ESC_BAD; d++) {
        ag_dtype t[3];
        dtypes_small(d, t);
        if (t[0] == c->q_dtype && (any_kv || t[1] == c->kv_dtype) && t[2] == c->out_dtype) {
            wr_u8(w, d);
            return;
        }
    }
    const int32_t v[3] = {(int32_t)c->q_dtype, (int32_t)c->kv_dtype, (int32_t)c->out_dtype};
    static const char *const names[3] = {"q_dtype", "kv_dtype", "out_dtype"};
    uint8_t raw[3];
    for (int i = 0; i < 3; i++) {
        unsigned b = 0;
        while (b < 256 && dtype_raw(b) != v[i]) b++;
        if (b == 256) {
            wr_fail(w, "%s = %d is outside the decodable range %d..%d and its two ends",
                    names[i], (int)v[i], INT8_MIN + 1, INT8_MAX - 1);
            return;
        }
        raw[i] = (uint8_t)b;
    }
    wr_u8(w, ESC_BAD);
    for (int i = 0; i < 3; i++) wr_u8(w, raw[i]);
}

/* split: small codes, 0xFD FIXED n (n in -1..SPLITS_HI), 0xFE raw
 * int8 mode + int16 count, 0xFF k invalid.  AUTO/OFF/ON carry count 0. */
typedef struct split_v {
    int32_t mode, count;
} split_v;

static split_v split_norm(int32_t mode, int32_t count) {
    split_v s = {mode, count};
    if (mode == AG_SPLIT_AUTO || mode == AG_SPLIT_OFF || mode == AG_SPLIT_ON) s.count = 0;
    return s;
}

static split_v split_small(unsigned b) {
    static const int8_t t[16][2] = {
        {AG_SPLIT_AUTO, 0},  {AG_SPLIT_AUTO, 0},  {AG_SPLIT_AUTO, 0},
        {AG_SPLIT_OFF, 0},   {AG_SPLIT_OFF, 0},   {AG_SPLIT_ON, 0},
        {AG_SPLIT_ON, 0},    {AG_SPLIT_ON, 0},    {AG_SPLIT_FIXED, 2},
        {AG_SPLIT_FIXED, 3}, {AG_SPLIT_FIXED, 4}, {AG_SPLIT_FIXED, 1},
        {AG_SPLIT_FIXED, 8}, {AG_SPLIT_AUTO, 0},  {AG_SPLIT_ON, 0},
        {AG_SPLIT_FIXED, 5},
    };
    return split_norm(t[b % 16][0], t[b % 16][1]);
}

static split_v split_bad(unsigned k) {
    static const int32_t t[5][2] = {
        {AG_SPLIT_FIXED, 0}, {AG_SPLIT_FIXED, SPLITS_HI}, {4, 0}, {-1, 0},
        {AG_SPLIT_FIXED, -1},
    };
    /* the last four: the mode and the count at int32's ends (bad_of) */
    static const int32_t ends[4][2] = {
        {INT32_MIN, 0}, {INT32_MAX, 0}, {AG_SPLIT_FIXED, INT32_MIN}, {AG_SPLIT_FIXED, INT32_MAX},
    };
    if (k >= 0xFC) return split_norm(ends[k - 0xFC][0], ends[k - 0xFC][1]);
    return split_norm(t[k % 5][0], t[k % 5][1]);
}

static void rd_split(reader *r, case_spec *c) {
    unsigned b = rd_u8(r);
    split_v s;
    if (b < ESC_WIDE) {
        s = split_small(b);
    } else if (b == ESC_WIDE) {
        s = split_norm(AG_SPLIT_FIXED,
                       clamp64((int16_t)(uint16_t)rd_le(r, 2), -1, SPLITS_HI));
    } else if (b == ESC_RAW) {
        int32_t mode = (int8_t)(uint8_t)rd_u8(r);
        int32_t count = (int16_t)(uint16_t)rd_le(r, 2);
        s = split_norm(mode, count);
    } else {
        s = split_bad(rd_u8(r));
    }
    c->split = s.mode;
    c->split_count = s.count;
}

static int split_eq(split_v a, split_v b) { return a.mode == b.mode && a.count == b.count; }

static void wr_split(writer *w, const case_spec *c) {
    split_v v = split_norm((int32_t)c->split, c->split_count);
    for (unsigned b = 0; b < ESC_WIDE; b++)
        if (split_eq(split_small(b), v)) {
            wr_u8(w, b);
            return;
        }
    for (unsigned k = 0; k < 256; k++)
        if (split_eq(split_bad(k), v)) {
            wr_u8(w, ESC_BAD);
            wr_u8(w, k);
            return;
        }
    if (v.mode == AG_SPLIT_FIXED && v.count >= -1 && v.count <= SPLITS_HI) {
        wr_u8(w, ESC_WIDE);
        wr_le(w, (uint16_t)(int16_t)v.count, 2);
        return;
    }
    if (v.mode >= INT8_MIN && v.mode <= INT8_MAX && v.count >= INT16_MIN &&
        v.count <= INT16_MAX) {
        wr_u8(w, ESC_RAW);
        wr_u8(w, (uint8_t)(int8_t)v.mode);
        wr_le(w, (uint16_t)(int16_t)v.count, 2);
        return;
    }
    wr_fail(w, "split = raw:%d:%d is outside the decodable range (int8 mode, int16 count)",
            (int)v.mode, (int)v.count);
}

/* seed: b < 0xFD, else 2/4/8 little-endian bytes. */
static uint64_t rd_seed(reader *r) {
    unsigned b = rd_u8(r);
    if (b < ESC_WIDE) return b;
    if (b == ESC_WIDE) return rd_le(r, 2);
    if (b == ESC_RAW) return rd_le(r, 4);
    return rd_le(r, 8);
}

static void wr_seed(writer *w, uint64_t s) {
    if (s < ESC_WIDE) {
        wr_u8(w, (unsigned)s);
    } else if (s <= 0xFFFFu) {
        wr_u8(w, ESC_WIDE);
        wr_le(w, s, 2);
    } else if (s <= 0xFFFFFFFFu) {
        wr_u8(w, ESC_RAW);
        wr_le(w, s, 4);
    } else {
        wr_u8(w, ESC_BAD);
        wr_le(w, s, 8);
    }
}

/* name: empty unless the length byte is >= 0xF0 (1..15 chars), 0xFF + n
 * (n % 64 chars).  Bytes that are not printable text become letters. */
static char name_char(unsigned ch) {
    if (ch >= 0x21 && ch <= 0x7E && ch != '#') return (char)ch;
    return (char)('a' + ch % 26);
}

/* Engine options: the same, and a blank may separate words (one, never
 * first or last: the form the text parser keeps). */
static char option_char(unsigned ch, size_t i, char prev) {
    if (ch == ' ' && i > 0 && prev != ' ') return ' ';
    return name_char(ch);
}

/* A text field of at most cap - 1 characters (name, options). */
static void rd_text(reader *r, char *dst, size_t cap, int words) {
    unsigned b = rd_u8(r);
    size_t len = 0;
    if (b == ESC_BAD) len = rd_u8(r) % cap;
    else if (b >= 0xF0) len = b - 0xEF;
    for (size_t i = 0; i < len; i++) {
        const unsigned ch = rd_u8(r);
        dst[i] = words ? option_char(ch, i, i ? dst[i - 1] : 0) : name_char(ch);
    }
    while (words && len && dst[len - 1] == ' ') len--;
    dst[len] = '\0';
}

static void rd_name(reader *r, case_spec *c) { rd_text(r, c->name, sizeof c->name, 0); }

static void wr_text(writer *w, const char *what, const char *name, size_t cap, int words) {
    size_t len = strnlen(name, cap);
    if (len >= cap) {
        wr_fail(w, "%s is not NUL-terminated within %zu bytes", what, cap);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned ch = (unsigned char)name[i];
        if ((words ? option_char(ch, i, i ? name[i - 1] : 0) : name_char(ch)) != name[i] ||
            (words && ch == ' ' && i + 1 == len)) {
            wr_fail(w, "%s: character 0x%02x at %zu is not printable text (or is '#', or a "
                    "blank out of place)", what, ch, i);
            return;
        }
    }
    if (len == 0) {
        wr_u8(w, 0);
    } else if (len <= 15) {
        wr_u8(w, (unsigned)(0xEF + len));
    } else {
        wr_u8(w, ESC_BAD);
        wr_u8(w, (unsigned)len);
    }
    for (size_t i = 0; i < len; i++) wr_u8(w, (unsigned char)name[i]);
}

static void wr_name(writer *w, const char *name) { wr_text(w, "name", name, CASE_NAME_LEN, 0); }

/* ------------------------------------------------------- extension block */

/* Everything after `name`.  A missing byte reads as 0 and every 0 means
 * "as the base fields say", so inputs made before the block existed decode
 * as they always did. */
enum {
    X_CAUSAL = 1u << 0,    /* per-request causal flags follow */
    X_LAYERS = 1u << 1,    /* one attribute byte per layer (+ its fields) follows */
    X_VALUES = 1u << 2,    /* q, k, v value distributions follow */
    X_KV_FP8 = 1u << 3,    /* a kv dtype byte follows */
    X_OLD = 1u << 4,       /* a byte follows that inputs made before options were text
                              used; read and dropped, never written */
    X_LAST_FULL = 1u << 5, /* last_block_full */
    X_PLACE_HEAD = 1u << 6 /* place = head; bit 7 is unused (written 0) */
};

/* Per-layer attribute byte: bits 0 and 6 both set, (left, right) follow
 * (one layer in eight of a random block); bit 1 k_scale and v_scale follow;
 * bits 2-3 ALiBi, bits 4-5 sinks: 1 standard/seeded, 2 an explicit list
 * follows, 0 and 3 the base attribute's choice; bit 7 unused (written 0). */
enum { XL_WINDOW = 1u << 0 | 1u << 6, XL_SCALES = 1u << 1 };
enum { XS_BASE = 0, XS_STANDARD = 1, XS_LIST = 2 };

/* The budget byte: 0 (what the encoder writes) and 0xF8.. leave the case as
 * drawn; anything else caps kv lengths until case_cost fits 2^16..2^22
 * multiply-adds, so random inputs stay cheap to run. */
static uint64_t budget_of(unsigned b) {
    if (b == 0 || b >= 0xF8) return UINT64_MAX;
    return (uint64_t)1 << (16 + b % 7);
}

/* (left, right) windows: mostly small and one-sided shapes, the previous
 * layer's value, CASE_WINDOW_UNSET (-2) for "not given". */
static int32_t prev_side(const fctx *x, int right) {
    if (x->l == 0) return -1;
    const case_layer *P = &x->c->layers[x->l - 1];
    return right ? P->window_right : P->window_left;
}
static int32_t m_left(unsigned b, const fctx *x) {
    static const int32_t t[16] = {-1, -1, 0, 1, 3, 7, 15, 16, 31, 63, 127, 511, 2, 8, -2, 0};
    return b % 16 == 15 ? prev_side(x, 0) : t[b % 16];
}
static int32_t m_right(unsigned b, const fctx *x) {
    static const int32_t t[16] = {0, 0, -1, -1, 1, 3, 7, 15, 16, 63, 2, 31, 8, -2, 127, 0};
    return b % 16 == 15 ? prev_side(x, 1) : t[b % 16];
}
static int32_t b_side(unsigned k, const fctx *x) {
    (void)x;
    static const int32_t t[3] = {-3, -100, SEQ_HI};
    return t[k % 3];
}
static const ispec S_LEFT = {"window_left", m_left, b_side, -3, SEQ_HI, 1};
static const ispec S_RIGHT = {"window_right", m_right, b_side, -3, SEQ_HI, 1};

/* fp8 k_scale / v_scale: powers of two and odd values; invalid ones too. */
static const float kvscale_tab[16] = {1.0f,   0.5f,  2.0f,    0.25f,   4.0f,    0.0625f,
                                      16.0f,  0x1p-8f, 0.75f, 3.0f,    1.5f,    0.1f,
                                      0.0217f, 0x1p-14f, 1024.0f, 7.0f};
static const float kvscale_bad[5] = {0.0f, -1.0f, NAN, INFINITY, -0.0f};
static const fspec S_KVSCALE = {"k_scale/v_scale", kvscale_tab, 16, kvscale_bad, 5};

/* Explicit slope / sink values: usual ones and outlandish ones (0, negative,
 * huge, subnormal); the defect model decides which an engine must refuse. */
static const float list_tab[16] = {0.5f, 0.25f, 0.125f, 0x1p-8f, 1.0f,    0.0f,
                                   -0.5f, 2.0f, -1.0f,  10.0f,   1e30f,   -1e30f,
                                   0x1p-149f, 1e-40f, 3.4028235e38f, -0.0f};
static const float list_bad[4] = {NAN, INFINITY, -INFINITY, -NAN};
static const fspec S_LIST = {"list value", list_tab, 16, list_bad, 4};

/* A list of n floats as runs: a count byte (< 0x80 one value, 0x80..0xFE
 * 2..128 values, 0xFF the rest), then the value. */
static void rd_list(reader *r, float *out, int32_t n) {
    for (int32_t i = 0; i < n;) {
        unsigned k = rd_u8(r);
        int32_t len = k < 0x80 ? 1 : (k == 0xFF ? n - i : (int32_t)k - 0x7E);
        if (len > n - i) len = n - i;
        float v = rd_float(r, &S_LIST);
        for (int32_t j = 0; j < len; j++) out[i + j] = v;
        i += len;
    }
}

static void wr_list(writer *w, const float *v, int32_t n) {
    for (int32_t i = 0; i < n;) {
        int32_t m = 1;
        while (i + m < n && same_float(v[i + m], v[i])) m++;
        if (m > 1 && i + m == n) {
            wr_u8(w, 0xFF);
        } else if (m == 1) {
            wr_u8(w, 0);
        } else {
            if (m > 128) m = 128;
            wr_u8(w, (unsigned)(0x7E + m));
        }
        wr_float(w, &S_LIST, v[i]);
        i += m;
    }
}

/* Value distributions: d < 0xFF is a distribution (low 3 bits) and an
 * amplitude from 2^-24 to FLT_MAX (high 5 bits); 0xFF + dist byte + raw amp. */
static const uint8_t dist_small[8] = {
    CASE_DIST_UNIFORM,  CASE_DIST_NORMAL,  CASE_DIST_HEAVY,    CASE_DIST_CONST_ROW,
    CASE_DIST_ONE_HOT,  CASE_DIST_DENORMAL, CASE_DIST_EXTREME, CASE_DIST_SPIKE,
};
static const float amp_tab[32] = {
    1.0f,     0x1p-24f, 0x1p-20f, 0x1p-14f, 0x1p-10f, 0x1p-6f,  0.0625f, 0.5f,
    2.0f,     4.0f,     16.0f,    100.0f,   448.0f,   1e4f,     57344.0f, 65504.0f,
    1.0f,     3.0f,     0.1f,     1.5f,     0x1p-16f, 0x1p-8f,  64.0f,    240.0f,
    1e6f,     0x1p64f,  1e30f,    3.3895314e38f, 3.4028235e38f, 0.3f, 10.0f, 1.0f,
};

static case_values values_small(unsigned d) {
    case_values v = {dist_small[d & 7u], amp_tab[d >> 3]};
    return v;
}

static void rd_values(reader *r, case_values *v) {
    unsigned d = rd_u8(r);
    if (d != ESC_BAD) {
        *v = values_small(d);
        return;
    }
    v->dist = (uint8_t)(rd_u8(r) % CASE_DIST_COUNT);
    uint32_t bits = (uint32_t)rd_le(r, 4) & 0x7FFFFFFFu;   /* amplitudes are > 0 */
    memcpy(&v->amp, &bits, sizeof v->amp);
    if (!isfinite(v->amp) || v->amp == 0.0f) v->amp = 1.0f;
}

static void wr_values(writer *w, const case_values *v, const char *name) {
    for (unsigned d = 0; d < ESC_BAD; d++) {
        case_values s = values_small(d);
        if (s.dist == v->dist && same_float(s.amp, v->amp)) {
            wr_u8(w, d);
            return;
        }
    }
    if (v->dist >= CASE_DIST_COUNT || !isfinite(v->amp) || !(v->amp > 0.0f)) {
        wr_fail(w, "%s = (dist %d, amp %g) is outside the decodable range", name, (int)v->dist,
                (double)v->amp);
        return;
    }
    uint32_t bits;
    memcpy(&bits, &v->amp, sizeof bits);
    wr_u8(w, ESC_BAD);
    wr_u8(w, v->dist);
    wr_le(w, bits, 4);
}


/* A request the cap may shorten: a valid one (invalid ones stay as drawn);
 * in the first round only rows of several query tokens. */
static int shrinkable(int32_t q, int32_t kv, int round) {
    return q >= 1 && kv >= q && kv <= SEQ_LIM && (round > 0 || q > 1);
}

static void apply_cap(case_spec *c, const int32_t *q0, const int32_t *k0, int32_t cap,
                      int round) {
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (!shrinkable(q0[r], k0[r], round)) continue;
        c->kv_len[r] = k0[r] < cap ? k0[r] : cap;
        c->q_len[r] = q0[r] < c->kv_len[r] ? q0[r] : c->kv_len[r];
    }
}

/* Caps valid requests' kv_len (q_len follows: never above kv_len) at the
 * largest value that fits case_cost into budget (1 if none does): prefill
 * rows first, where the cost is quadratic; decode rows only if that is not
 * enough, so long decode rows (split-KV) survive where they can. */
static void shrink_to_budget(case_spec *c, uint64_t budget) {
    int32_t q0[CASE_MAX_REQS], k0[CASE_MAX_REQS];
    for (int32_t r = 0; r < c->num_reqs; r++) {
        q0[r] = c->q_len[r];
        k0[r] = c->kv_len[r];
    }
    for (int round = 0; round < 2 && case_cost(c) > budget; round++) {
        int32_t lo = 1, hi = 1;
        for (int32_t r = 0; r < c->num_reqs; r++)
            if (shrinkable(q0[r], k0[r], round) && k0[r] > hi) hi = k0[r];
        while (lo < hi) {   /* cost grows with the cap: bisect for the largest that fits */
            int32_t mid = lo + (hi - lo + 1) / 2;
            apply_cap(c, q0, k0, mid, round);
            if (case_cost(c) <= budget) lo = mid;
            else hi = mid - 1;
        }
        apply_cap(c, q0, k0, lo, round);
    }
}

/* The base causal field: request 0's flag when it is 0 or 1. */
static int32_t base_causal(const case_spec *c) {
    return c->num_reqs > 0 && c->causal[0] <= 1 ? c->causal[0] : 1;
}

/* m < 0x80: one bit per request follows; 0xFF: one raw byte per request;
 * else the base flag stands (half of the random blocks change nothing: a
 * mixed batch in about one valid case in eight, not one in four). */
static void rd_causal(reader *r, case_spec *c) {
    unsigned m = rd_u8(r), bits = 0;
    if (m >= 0x80 && m != ESC_BAD) return;
    for (int32_t q = 0; q < c->num_reqs; q++) {
        if (m == ESC_BAD) {
            c->causal[q] = (uint8_t)rd_u8(r);   /* raw: 2..255 are invalid */
            continue;
        }
        if (q % 8 == 0) bits = rd_u8(r);
        c->causal[q] = (uint8_t)((bits >> (q % 8)) & 1u);
    }
}

/* ALiBi (alibi = 1) or sinks (alibi = 0) of a layer from its 2-bit kind. */
static void rd_source(reader *r, case_spec *c, case_layer *L, unsigned kind, int alibi) {
    uint8_t *src = alibi ? &L->alibi : &L->sinks;
    uint16_t *off = alibi ? &L->alibi_off : &L->sinks_off;
    const int32_t n = L->num_heads;
    if (kind == XS_STANDARD) {
        *src = CASE_SRC_STANDARD;
    } else if (kind == XS_LIST && n >= 1 && n <= CASE_MAX_HEADS &&
               c->list_len + n <= CASE_MAX_LIST) {
        /* no room (or no valid head count): the base attribute stands */
        *off = (uint16_t)c->list_len;
        rd_list(r, c->list + c->list_len, n);
        c->list_len += n;
        *src = CASE_SRC_LIST;
    }
}

static void rd_ext(reader *r, case_spec *c, fctx *x) {
    const uint64_t budget = budget_of(rd_u8(r));
    const unsigned f = rd_u8(r);
    c->last_block_full = (f & X_LAST_FULL) ? 1 : 0;
    c->place = (f & X_PLACE_HEAD) ? CASE_PLACE_HEAD : CASE_PLACE_TAIL;
    if (f & X_CAUSAL) rd_causal(r, c);
    for (int32_t l = 0; (f & X_LAYERS) && l < c->num_layers; l++) {
        case_layer *L = &c->layers[l];
        x->l = l;
        unsigned a = rd_u8(r);
        if ((a & XL_WINDOW) == XL_WINDOW) {
            L->window_left = rd_int(r, &S_LEFT, x);
            L->window_right = rd_int(r, &S_RIGHT, x);
            L->window = -1;   /* the pair overrides it: keep the struct canonical */
        }
        if (a & XL_SCALES) {
            L->k_scale = rd_float(r, &S_KVSCALE);
            L->v_scale = rd_float(r, &S_KVSCALE);
        }
        rd_source(r, c, L, (a >> 2) & 3u, 1);
        rd_source(r, c, L, (a >> 4) & 3u, 0);
    }
    x->l = 0;
    for (int t = 0; (f & X_VALUES) && t < CASE_T_COUNT; t++) rd_values(r, &c->values[t]);
    if (f & X_KV_FP8) {
        const int t = kv_ext_dtype(rd_u8(r));
        if (t >= 0) c->kv_dtype = (ag_dtype)t;
    }
    if (f & X_OLD) (void)rd_u8(r);
    shrink_to_budget(c, budget);
}

/* -------------------------------------------------------------- decode */

void case_decode(const uint8_t *data, size_t size, case_spec *out) {
    case_spec c;
    memset(&c, 0, sizeof c);
    reader r = {data, data ? size : 0, 0};
    fctx x = {&c, 0, 0};

    c.num_kv_heads = rd_int(&r, &S_KVH, &x);
    c.num_layers = rd_int(&r, &S_LAYERS, &x);
    for (int32_t l = 0; l < c.num_layers; l++) {
        case_layer *L = &c.layers[l];
        x.l = l;
        L->num_heads = rd_int(&r, &S_HEADS, &x);
        L->window = rd_int(&r, &S_WINDOW, &x);
        unsigned a = rd_u8(&r);
        L->alibi = (a & 7u) == 7u ? CASE_SRC_STANDARD : CASE_SRC_NONE;
        L->sinks = ((a >> 3) & 7u) == 7u ? CASE_SRC_STANDARD : CASE_SRC_NONE;
        L->window_left = L->window_right = CASE_WINDOW_UNSET;
        L->k_scale = L->v_scale = 1.0f;
        if (a & 0x40u) L->softcap = rd_float(&r, &S_SOFTCAP);
        if (a & 0x80u) L->scale = rd_float(&r, &S_SCALE);
    }
    x.l = 0;
    c.model_num_heads = rd_int(&r, &S_MODEL, &x);
    c.head_dim = rd_int(&r, &S_DIM, &x);
    c.block_size = rd_int(&r, &S_BS, &x);
    rd_dtypes(&r, &c);
    const int32_t causal = rd_int(&r, &S_CAUSAL, &x);
    c.threads = rd_int(&r, &S_THREADS, &x);
    rd_split(&r, &c);
    c.blocks = (case_blocks)rd_int(&r, &S_BLOCKS, &x);
    c.num_reqs = rd_int(&r, &S_REQS, &x);
    for (int32_t q = 0; q < c.num_reqs; q++) {
        x.r = q;
        c.kv_len[q] = rd_int(&r, &S_KV, &x);
        c.q_len[q] = rd_int(&r, &S_Q, &x);
        c.causal[q] = (uint8_t)causal;
    }
    for (int t = 0; t < CASE_T_COUNT; t++) c.values[t].amp = 1.0f;
    c.seed = rd_seed(&r);
    rd_text(&r, c.options, sizeof c.options, 1);
    c.expect = rd_int(&r, &S_EXPECT, &x);
    rd_name(&r, &c);
    rd_ext(&r, &c, &x);
    *out = c;
}

/* -------------------------------------------------------------- encode */

static int is_one(float f) { return same_float(f, 1.0f); }

static unsigned layer_ext(const case_layer *L) {
    unsigned a = 0;
    if (L->window_left != CASE_WINDOW_UNSET || L->window_right != CASE_WINDOW_UNSET)
        a |= XL_WINDOW;
    if (!is_one(L->k_scale) || !is_one(L->v_scale)) a |= XL_SCALES;
    if (L->alibi == CASE_SRC_LIST) a |= XS_LIST << 2;
    if (L->sinks == CASE_SRC_LIST) a |= XS_LIST << 4;
    return a;
}

static void wr_source_list(writer *w, const case_spec *c, int32_t l, int alibi) {
    const case_layer *L = &c->layers[l];
    const int32_t n = L->num_heads, off = alibi ? L->alibi_off : L->sinks_off;
    if (n < 1 || n > CASE_MAX_HEADS || off + n > c->list_len || c->list_len > CASE_MAX_LIST) {
        wr_fail(w, "layer.%d: %s list (heads %d at offset %d of %d) is not decodable", (int)l,
                alibi ? "alibi" : "sinks", (int)n, (int)off, (int)c->list_len);
        return;
    }
    wr_list(w, c->list + off, n);
}

/* The extension block, or nothing when every field has its base value.
 * ctx: the decoder's view so far (the window maps read the previous layer). */
static void wr_ext(writer *w, const case_spec *c, case_spec *ctx) {
    const int32_t bc = base_causal(c);
    unsigned f = 0, raw_causal = 0;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (c->causal[r] != bc) f |= X_CAUSAL;
        if (c->causal[r] > 1) raw_causal = 1;
    }
    for (int32_t l = 0; l < c->num_layers; l++)
        if (layer_ext(&c->layers[l])) f |= X_LAYERS;
    for (int t = 0; t < CASE_T_COUNT; t++)
        if (c->values[t].dist != CASE_DIST_UNIFORM || !is_one(c->values[t].amp)) f |= X_VALUES;
    if (kv_by_ext(c)) f |= X_KV_FP8;
    if (c->last_block_full > 1 || c->place >= CASE_PLACE_COUNT) {
        wr_fail(w, "last_block_full = %d / place = %d is not decodable", (int)c->last_block_full,
                (int)c->place);
        return;
    }
    if (c->last_block_full) f |= X_LAST_FULL;
    if (c->place == CASE_PLACE_HEAD) f |= X_PLACE_HEAD;
    if (!f) return;
    wr_u8(w, 0);   /* budget: none, the case is what it is */
    wr_u8(w, f);
    if (f & X_CAUSAL) {
        wr_u8(w, raw_causal ? ESC_BAD : 0);
        unsigned bits = 0;
        for (int32_t r = 0; r < c->num_reqs; r++) {
            if (raw_causal) {
                wr_u8(w, c->causal[r]);
                continue;
            }
            bits |= (unsigned)c->causal[r] << (r % 8);
            if (r % 8 == 7 || r == c->num_reqs - 1) {
                wr_u8(w, bits);
                bits = 0;
            }
        }
    }
    fctx x = {ctx, 0, 0};
    for (int32_t l = 0; (f & X_LAYERS) && l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        const unsigned a = layer_ext(L);
        x.l = l;
        wr_u8(w, a);
        if ((a & XL_WINDOW) == XL_WINDOW) {
            wr_int(w, &S_LEFT, &x, L->window_left);
            wr_int(w, &S_RIGHT, &x, L->window_right);
        }
        ctx->layers[l].window_left = L->window_left;
        ctx->layers[l].window_right = L->window_right;
        if (a & XL_SCALES) {
            wr_float(w, &S_KVSCALE, L->k_scale);
            wr_float(w, &S_KVSCALE, L->v_scale);
        }
        if (L->alibi == CASE_SRC_LIST) wr_source_list(w, c, l, 1);
        if (L->sinks == CASE_SRC_LIST) wr_source_list(w, c, l, 0);
    }
    for (int t = 0; (f & X_VALUES) && t < CASE_T_COUNT; t++) {
        static const char *const names[CASE_T_COUNT] = {"q_values", "k_values", "v_values"};
        wr_values(w, &c->values[t], names[t]);
    }
    if (f & X_KV_FP8) wr_u8(w, kv_ext_byte(c->kv_dtype));
}


/* Floats of a layer must be written with the attr bit: +0.0 is "absent". */
static int float_present(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits != 0;
}

size_t case_encode(const case_spec *c, uint8_t *buf, size_t cap, char *errbuf, size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!c || (!buf && cap)) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "NULL argument");
        return 0;
    }
    writer w = {buf, cap, 0, 0, errbuf, errlen, 0};
    /* The maps read the case being encoded, fields before the current one
     * only: exactly what the decoder had seen at the same point. */
    case_spec ctx;
    memset(&ctx, 0, sizeof ctx);
    fctx x = {&ctx, 0, 0};

    if (c->num_layers < 0 || c->num_layers > CASE_MAX_LAYERS) {
        wr_fail(&w, "num_layers = %d is outside 0..%d", (int)c->num_layers, CASE_MAX_LAYERS);
        goto out;
    }
    if (c->num_reqs < 0 || c->num_reqs > CASE_MAX_REQS) {
        wr_fail(&w, "num_reqs = %d is outside 0..%d", (int)c->num_reqs, CASE_MAX_REQS);
        goto out;
    }
    wr_int(&w, &S_KVH, &x, c->num_kv_heads);
    ctx.num_kv_heads = c->num_kv_heads;
    wr_int(&w, &S_LAYERS, &x, c->num_layers);
    ctx.num_layers = c->num_layers;
    for (int32_t l = 0; l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        x.l = l;
        wr_int(&w, &S_HEADS, &x, L->num_heads);
        ctx.layers[l].num_heads = L->num_heads;
        wr_int(&w, &S_WINDOW, &x, L->window);
        ctx.layers[l].window = L->window;
        if (L->alibi >= CASE_SRC_COUNT || L->sinks >= CASE_SRC_COUNT)
            wr_fail(&w, "layer.%d: alibi/sinks source %d/%d is not decodable", (int)l,
                    (int)L->alibi, (int)L->sinks);
        /* explicit lists travel in the extension block */
        unsigned a = (L->alibi == CASE_SRC_STANDARD ? 7u : 0u) |
                     (L->sinks == CASE_SRC_STANDARD ? 7u << 3 : 0u) |
                     (float_present(L->softcap) ? 0x40u : 0u) |
                     (float_present(L->scale) ? 0x80u : 0u);
        wr_u8(&w, a);
        if (a & 0x40u) wr_float(&w, &S_SOFTCAP, L->softcap);
        if (a & 0x80u) wr_float(&w, &S_SCALE, L->scale);
    }
    x.l = 0;
    wr_int(&w, &S_MODEL, &x, c->model_num_heads);
    wr_int(&w, &S_DIM, &x, c->head_dim);
    wr_int(&w, &S_BS, &x, c->block_size);
    wr_dtypes(&w, c);
    wr_int(&w, &S_CAUSAL, &x, base_causal(c));
    wr_int(&w, &S_THREADS, &x, c->threads);
    wr_split(&w, c);
    wr_int(&w, &S_BLOCKS, &x, (int32_t)c->blocks);
    wr_int(&w, &S_REQS, &x, c->num_reqs);
    for (int32_t q = 0; q < c->num_reqs; q++) {
        x.r = q;
        wr_int(&w, &S_KV, &x, c->kv_len[q]);
        ctx.kv_len[q] = c->kv_len[q];
        wr_int(&w, &S_Q, &x, c->q_len[q]);
    }
    wr_seed(&w, c->seed);
    wr_text(&w, "options", c->options, CASE_OPTIONS_LEN, 1);
    wr_int(&w, &S_EXPECT, &x, c->expect);
    wr_name(&w, c->name);
    wr_ext(&w, c, &ctx);

out:
    if (w.failed) return 0;
    if (w.full) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "encoding needs more than %zu bytes", cap);
        return 0;
    }
    return w.n;
}
