/*
 * runcase.c — one case, end to end: problem -> builder -> plan -> scratch ->
 * attn_run per layer -> reference -> comparison, and the verdict.
 *
 * Owns: the order of those steps and what counts as PASS (see runcase.h).
 * Does not own the tolerances (compare.c), the inputs (problem.c) or the
 * scratchpad guard (hooks supplied by the caller).
 */
#include "runcase.h"
#include "problem.h"
#include "ref.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int decide(runcase_result *res, const char *stage, const char *fmt, ...) {
    res->stage = stage;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof(res->message), fmt, ap);
    va_end(ap);
    return res->pass;
}

const char *runcase_status_short(attn_status st, char *buf, size_t cap) {
    if (!buf || cap == 0) return "";
    if (st == ATTN_OK) {
        snprintf(buf, cap, "ok");
        return buf;
    }
    const char *n = attn_status_name(st);
    if (!n) n = "?";
    if (strncmp(n, "ATTN_E_", 7) == 0) n += 7;
    size_t i = 0;
    for (; n[i] && i + 1 < cap; i++) buf[i] = (char)tolower((unsigned char)n[i]);
    buf[i] = '\0';
    return buf;
}

static attn_plan_opts plan_opts_for(const attn_case *c, size_t redzone) {
    attn_plan_opts o;
    memset(&o, 0, sizeof(o));
    o.split = c->split;
    o.split_count = c->split_count;
    o.redzone = redzone;
    return o;
}

static void *default_scratch_alloc(size_t bytes) {
    /* aligned_alloc wants a multiple of the alignment; never zero bytes. */
    size_t n = bytes ? bytes : ATTN_ALIGN;
    if (n % ATTN_ALIGN) {
        if (__builtin_add_overflow(n, (size_t)ATTN_ALIGN - n % ATTN_ALIGN, &n)) return NULL;
    }
    return aligned_alloc(ATTN_ALIGN, n);
}

/* One layer: run, reference, compare.  Returns 1 on pass. */
static int run_layer(const problem *p, const attn_plan *plan, int32_t l, int rounded,
                     void *scratch, size_t scratch_bytes, const runcase_opts *o,
                     runcase_layer *lr, char *msg, size_t msgcap) {
    const attn_case *c = &p->c;
    size_t n = problem_out_elems(p, l);
    size_t osz = attn_dtype_size(c->out_dtype), obytes, rbytes;
    lr->out_elems = n;
    lr->tol = cmp_tolerance((ag_dtype)c->out_dtype);
    lr->scratch_ok = 1;
    if (n == 0 || osz == 0 || __builtin_mul_overflow(n, osz, &obytes) ||
        __builtin_mul_overflow(n, sizeof(double), &rbytes)) {
        snprintf(msg, msgcap, "layers.%d: output size overflows", (int)l);
        return 0;
    }
    void *out = malloc(obytes);
    double *ref = malloc(rbytes), *lo = malloc(rbytes), *hi = malloc(rbytes);
    if (!out || !ref || !lo || !hi) {
        free(out);
        free(ref);
        free(lo);
        free(hi);
        snprintf(msg, msgcap, "layers.%d: out of memory for outputs", (int)l);
        return 0;
    }
    /* All-ones bytes are NaN in f32, bf16 and f16: an element the engine
     * forgets to write cannot pass the comparison. */
    memset(out, 0xff, obytes);

    attn_tensors t = problem_tensors(p, l, out);
    attn_error err;
    memset(&err, 0, sizeof(err));
    lr->status = attn_run(plan, &p->layers[l], &t, scratch, scratch_bytes, &err);
    int pass = 0;
    if (lr->status != ATTN_OK) {
        snprintf(msg, msgcap, "layers.%d: attn_run: %s: %s", (int)l,
                 attn_status_name(lr->status), err.message);
        goto done;
    }
    if (o->scratch_check && o->scratch_check(o->ctx, plan, scratch, msg, msgcap) != 0) {
        lr->scratch_ok = 0;
        /* keep the checker's message; still compare so the report is complete */
    }

    /* a builder that rounds to bf16 is judged under that model */
    if ((rounded ? problem_reference_bf16dot(p, l, ref, lo, hi)
                 : problem_reference(p, l, ref, lo, hi)) != 0) {
        snprintf(msg, msgcap, "layers.%d: the reference refused the input", (int)l);
        goto done;
    }
    lr->ran_ref = 1;
    int ok = cmp_compare(ref, lo, hi, out, (ag_dtype)c->out_dtype, n, lr->tol, &lr->cmp);
    if (!ok && lr->scratch_ok) {
        size_t w = lr->cmp.worst, D = (size_t)c->head_dim, H = (size_t)c->layers[l].num_heads;
        char range[96] = "";
        if (lo[w] < hi[w])
            snprintf(range, sizeof range, " (%srounding allows [%.9g, %.9g])",
                     rounded ? "bf16 " : "", lo[w], hi[w]);
        snprintf(msg, msgcap,
                 "layers.%d: %zu of %zu elements outside atol=%g rtol=%g; worst at "
                 "token %zu head %zu dim %zu: got %.9g want %.9g%s", (int)l, lr->cmp.bad, n,
                 lr->tol.atol, lr->tol.rtol, w / (H * D), (w / D) % H, w % D,
                 cmp_elem_get(out, w, (ag_dtype)c->out_dtype), ref[w], range);
    }
    pass = ok && lr->scratch_ok;
done:
    free(ref);
    free(lo);
    free(hi);
    if (o->keep_outputs) lr->out = out;
    else free(out);
    lr->pass = pass;
    return pass;
}

int runcase_run(const attn_case *c, const runcase_opts *opts, runcase_result *res) {
    runcase_opts o;
    memset(&o, 0, sizeof(o));
    if (opts) o = *opts;
    if (o.max_bytes == 0) o.max_bytes = RUNCASE_DEFAULT_MAX_BYTES;
    if (!res) return 0;
    memset(res, 0, sizeof(*res));
    res->stage = "";
    if (!c) return decide(res, "problem", "NULL case");
    res->refusal = c->expect != ATTN_OK;

    problem p;
    char msg[sizeof(res->message)];
    attn_builder *b = NULL;
    attn_plan *plan = NULL;
    void *scratch = NULL;
    attn_error err;
    memset(&err, 0, sizeof(err));
    char sbuf[48];

    if (problem_init(&p, c, o.max_bytes, msg, sizeof(msg)) != 0) {
        decide(res, "problem", "%s", msg);
        return 0;
    }
    if (!res->refusal && !p.materialized) {
        decide(res, "problem", "case not runnable (%s) but expects ok",
               p.unmaterialized_reason ? p.unmaterialized_reason : "?");
        goto out_problem;
    }

    res->status = attn_builder_create(&p.group, &b, &err);
    if (res->status != ATTN_OK) {
        res->pass = res->refusal && res->status == c->expect;
        decide(res, "create", "%s: %s", attn_status_name(res->status), err.message);
        goto out_problem;
    }
    attn_builder_info bi;
    memset(&bi, 0, sizeof bi);
    attn_builder_get_info(b, &bi, NULL);
    attn_plan_opts po = plan_opts_for(c, o.redzone);
    res->status = attn_builder_build(b, &p.batch, &po, &plan, &err);
    if (res->status != ATTN_OK) {
        res->pass = res->refusal && res->status == c->expect;
        decide(res, "build", "%s: %s", attn_status_name(res->status), err.message);
        goto out_builder;
    }
    if (res->refusal) {
        res->pass = 0;
        decide(res, "build", "engine accepted a case that expects %s",
               runcase_status_short(c->expect, sbuf, sizeof(sbuf)));
        goto out_plan;
    }

    size_t bytes = 0;
    res->status = attn_plan_scratch_size(plan, &bytes, &err);
    if (res->status != ATTN_OK) {
        decide(res, "scratch", "%s: %s", attn_status_name(res->status), err.message);
        goto out_plan;
    }
    res->scratch_bytes = bytes;
    scratch = o.scratch_alloc ? o.scratch_alloc(o.ctx, plan, bytes) : default_scratch_alloc(bytes);
    if (!scratch) {
        decide(res, "scratch", "cannot allocate %zu bytes of scratchpad", bytes);
        goto out_plan;
    }

    res->num_layers = p.c.num_layers;
    res->pass = 1;
    msg[0] = '\0';
    for (int32_t l = 0; l < p.c.num_layers; l++) {
        char lmsg[sizeof(res->message)];
        lmsg[0] = '\0';
        if (!run_layer(&p, plan, l, bi.bf16_rounding, scratch, bytes, &o, &res->layers[l], lmsg,
                       sizeof(lmsg))) {
            if (res->pass) {   /* report the first failing layer */
                if (res->layers[l].status != ATTN_OK) res->status = res->layers[l].status;
                snprintf(msg, sizeof(msg), "%s", lmsg);
            }
            res->pass = 0;
        }
    }
    if (res->pass) decide(res, "", "%s", "");
    else decide(res, "run", "%s", msg);

    if (o.scratch_free) o.scratch_free(o.ctx, scratch);
    else if (!o.scratch_alloc) free(scratch);
out_plan:
    attn_plan_destroy(plan);
out_builder:
    attn_builder_destroy(b);
out_problem:
    problem_free(&p);
    return res->pass;
}

void runcase_result_free(runcase_result *res) {
    if (!res) return;
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        free(res->layers[l].out);
        res->layers[l].out = NULL;
    }
}
