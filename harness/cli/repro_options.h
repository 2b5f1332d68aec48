/*
 * repro_options.h — a fuzz target's libFuzzer flags, read from its .options
 * file (fuzz/<target>.options, copied beside each built binary as
 * <binary>.options, the layout OSS-Fuzz uses).  The one reader of those
 * files: `attnguard repro` uses it directly, and the scripts, `make regress`
 * and `make cfl-test` get the flags from `attnguard fuzz-flags`, so the
 * limits (timeout, rss_limit_mb, max_len...) are written only in the
 * .options files.
 *
 * Format (ClusterFuzz's): INI sections; `key = value` lines in the
 * [libfuzzer] section become `-key=value`; other sections ([asan], [env]...)
 * are skipped, but for the [attnguard] section's `drives` (which engine
 * the target exercises: mk/campaign.mk gives `make fuzz ENGINE=X` the
 * targets that exercise X by it); `#` and `;` start comment lines.
 */
#ifndef ATTN_REPRO_OPTIONS_H
#define ATTN_REPRO_OPTIONS_H

#include <stddef.h>

#define REPRO_FLAGS_MAX 32
#define REPRO_FLAG_LEN  1024

typedef struct repro_flags {
    int n;                                      /* flags in flag[] */
    char flag[REPRO_FLAGS_MAX][REPRO_FLAG_LEN]; /* "-timeout=N", "-dict=/x/t.dict" */
    char drives[64];                            /* [attnguard] drives: the engine whose own
                                                   API the target calls ("attnguard" for
                                                   fuzz_api, "ggml" for fuzz_ggml_contract);
                                                   "": the session's engine, through the ABI */
} repro_flags;

/* Read the [libfuzzer] section of `path` into *out as `-key=value` flags.  A
 * relative `dict` value is taken relative to the file's directory; when the
 * file names no dict and <stem>.dict sits beside it, `-dict=<that>` is
 * added (ClusterFuzz does the same).  Returns 0, or -1 with a message naming
 * the file and line in err (missing file, a line that is not `key = value`,
 * a key that is not [a-z_]+, an empty value, too many or too long flags). */
int repro_read_options(const char *path, repro_flags *out, char *err, size_t errlen);

/* The value of `-key=` in flags, or NULL. */
const char *repro_flag_value(const repro_flags *f, const char *key);

/* `attnguard fuzz-flags FILE.options...`: print each file's flags, one per
 * line.  Returns 0, 1 when a file could not be read, 2 on usage. */
int cli_fuzz_flags(int argc, char **argv);

#endif /* ATTN_REPRO_OPTIONS_H */
