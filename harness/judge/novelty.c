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
        const uint8_t v = __start___sancov_cntrs[i];
        if (!v) continue;
        const uint8_t b = v == 1 ? 1 : v == 2 ? 2 : v == 3 ? 4 : v < 8 ? 8 : v < 16 ? 16
                          : v < 32 ? 32 : v < 128 ? 64 : 128;
        if (!(seen[i] & b)) {
            seen[i] |= b;
            fresh = 1;
        }
    }
    return fresh;
}
