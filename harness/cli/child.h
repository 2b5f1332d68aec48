/*
 * child.h — running a fuzz target's libFuzzer binary on one input for
 * repro and minimize: locating it, its limits, the child process, the
 * verdict read from its log, and the private work folder.
 */
#ifndef ATTN_CLI_CHILD_H
#define ATTN_CLI_CHILD_H

#include "repro_options.h"
#include "repro_verdict.h"

#include <stddef.h>

/* The binary: fuzz_dir/target when fuzz_dir is given, else
 * build/fuzz[-inject-<inject>]/<target> under the current directory, else
 * the same next to (or one level above) the CLI itself.  0 with the path in
 * out, or -1 with the first path tried in out. */
int repro_find_binary(const char *fuzz_dir, const char *target, const char *inject, char *out,
                      size_t cap);
/* The target's libFuzzer flags from <bin>.options (make fuzz-build copies
 * fuzz/<target>.options there).  0, or -1 with a message. */
int repro_bin_flags(const char *bin, repro_flags *fl, char *err, size_t errlen);
/* Run bin with its flags, extra[0..nextra) (at most 8) and the input, with
 * `asan` added to ASAN_OPTIONS; stdout and stderr into log.  Returns the
 * exit status (128 + signal when killed), or -1 with a message. */
int repro_run_with_flags(const char *bin, const repro_flags *fl, char *const *extra, int nextra,
                         const char *input, const char *asan, const char *log, char *err,
                         size_t errlen);
/* Run bin on one input and read its verdict from the log.  0, or -1 with a
 * message. */
int repro_run_verdict(const char *bin, const repro_flags *fl, const char *input, const char *log,
                      repro_verdict *v, char *err, size_t errlen);
/* The engine every later run of a target gets (ATTNGUARD_ENGINE, and
 * ATTNGUARD_ENGINE_OPTIONS = options, or none when options is NULL), in
 * place of this process's own variables. */
void repro_child_engine(const char *engine, const char *options);
/* A private folder $TMPDIR/attnguard-repro-XXXXXX (0, or -1 with errno);
 * removed, contents and all, by repro_remove_workdir. */
int repro_make_workdir(char *dir, size_t cap);
void repro_remove_workdir(const char *dir);
#endif /* ATTN_CLI_CHILD_H */
