/*
 * known.h — the names this source tree gives its fuzz targets (every
 * fuzz/fuzz_*.c, mk/fuzz.mk's list) and its injected bugs
 * (src/inject_list.h), so that `show --target` and `repro --target /
 * --inject` can name a name that does not exist instead of decoding
 * anyway or asking for a build that cannot be made.  make hands both lists
 * to known.c alone (mk/fuzz.mk); a build that does not (the fuzzing
 * builds, which never run the CLI) knows neither.
 */
#ifndef ATTN_CLI_KNOWN_H
#define ATTN_CLI_KNOWN_H

#include <stddef.h>

/* 1 when `name` is one of this tree's fuzz targets (or the build did not
 * say which exist); 0 with a message naming it and listing them in `why`. */
int cli_known_target(const char *name, char *why, size_t cap);
/* The same for the name of an injected bug. */
int cli_known_bug(const char *name, char *why, size_t cap);

#endif /* ATTN_CLI_KNOWN_H */
