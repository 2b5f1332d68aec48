/*
 * novelty.c — see novelty.h.
 */
#include "novelty.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

extern uint8_t __start___sancov_cntrs[] __attribute__((weak));
extern uint8_t __stop___sancov_cntrs[] __attribute__((weak));

__attribute__((no_sanitize("address", "undefined"))) int novelty_new_coverage(void) {
    static uint8_t *seen;
    static size_t n;
    if (!__start___sancov_cntrs || !__stop___sancov_cntrs) return 0;
    if (!seen) {
        n = (size_t)(__stop___sancov_cntrs - __start___sancov_cntrs);
        seen = calloc(n ? n : 1, 1);
        if (!seen) return 0;
    }
    int fresh = 0;
    for (size_t i = 0; i < n; i++) {
        if (!__start___sancov_cntrs[i] || seen[i]) continue;
        seen[i] = 1;
        fresh = 1;
    }
    return fresh;
}
