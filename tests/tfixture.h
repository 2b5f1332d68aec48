/*
 * tfixture.h — what the engine's suites add to engines/attnguard/fixture.h
 * (afx_init) so that a problem reaches the engine whole: each request's
 * own causality (attn_batch.req_causal) and each layer's window as the
 * (left, right) pair the problem carries (attn_layer_desc.window_pair),
 * where afx_init passes one causal flag and a single window, and the fp8
 * caches' k_scale / v_scale.  Header-only.
 */
#ifndef ATTN_TFIXTURE_H
#define ATTN_TFIXTURE_H

#include "../engines/attnguard/fixture.h"

/* Call after afx_init(fx, p) succeeded; fx points into p afterwards. */
static inline void tfx_complete(afx_engine *fx, const problem *p) {
    for (int32_t l = 0; l < p->c.num_layers; l++) {
        const ag_layer *L = &p->layers[l];
        attn_layer_desc *d = &fx->layers[l];
        const int none = L->window_left == -1 && L->window_right == -1;
        d->window = -1;
        d->window_pair = !none;
        d->window_left = none ? 0 : L->window_left;
        d->window_right = none ? 0 : L->window_right;
        d->k_scale = L->k_scale;
        d->v_scale = L->v_scale;
    }
    fx->batch.req_causal = p->causal;
}

#endif /* ATTN_TFIXTURE_H */
