/*
 * repro.h — the `show` and `repro` subcommands of the attnguard CLI: turn
 * any corpus or crash file into a readable case, rerun it under
 * AddressSanitizer through the fuzz target's own binary, name the oracle
 * that fired, and minimise it on request.
 *
 * Owns: reading a file as text case or fuzz bytes, locating the libFuzzer
 * binary (build/fuzz[-inject-<bug>]/<target>), running it in a child process
 * (posix_spawn, never a shell) and reading the verdict from its report.
 * Does not own the case formats (case.c, case_bytes.c), the oracles or the
 * fuzz targets; it builds nothing.
 */
#ifndef ATTN_REPRO_H
#define ATTN_REPRO_H

#include "../case/case.h"

#include <stddef.h>

/* `attnguard show [--target T] FILE...`: print each file as a canonical
 * case.  A file named *.case must parse as text; any other file is shown as
 * text when it parses as such, else decoded as fuzz bytes (case_decode,
 * never fails).  Under a fuzz_api directory, or with --target fuzz_api, the
 * 4-byte fuzz_api prefix is read first and shown as a comment.  argv holds
 * the arguments after the subcommand.  Returns the exit status: 0 ok, 1 a
 * file could not be read or parsed, 2 usage. */
int cli_show(int argc, char **argv);

/* `attnguard repro FILE [--target T] [--inject BUG] [--minimize]
 * [--out F.case] [--runs N] [--time S] [--fuzz-dir DIR] [--api-prefix HEX]
 * [-v]`: print the case, rerun it under ASan with the target's libFuzzer
 * binary, print `repro: ORACLE <name>` (or the sanitizer/libFuzzer kind) or
 * `repro: no finding (the input passes)`.  --minimize shrinks a crashing
 * input with libFuzzer -minimize_crash=1, keeps it only if the same oracle
 * still fires, and writes it as a .case (default FILE.min.case).
 * Target: --target, else a `fuzz_*` directory in FILE's path, else
 * fuzz_attention.  Mutant: --inject, else $ATTN_INJECT, else an
 * `*-inject-<bug>` directory in FILE's path.  Returns 0 no finding,
 * 1 a finding, 2 usage or setup error. */
int cli_repro(int argc, char **argv);

/* fuzz_api inputs start with four bytes [op arg n_lo n_hi] before the case
 * bytes (fuzz/fuzz_api.c); text cases get this prefix when rerun there. */
#define REPRO_API_PREFIX_LEN 4
#define REPRO_API_PREFIX_DEFAULT {0x00, 0x00, 0x05, 0x00}  /* as corpus/fuzz_api */

typedef struct repro_input {
    int was_text;        /* 1: parsed as .case text; 0: decoded as fuzz bytes */
    size_t nbytes;       /* the file's size */
    int api;             /* read as a fuzz_api input: api_prefix is meaningful */
    unsigned char api_prefix[REPRO_API_PREFIX_LEN];
} repro_input;

/* Read FILE as a case the way `show` does.  `target` (NULL: guessed from a
 * `fuzz_*` directory in the path) decides the byte layout: for fuzz_api the
 * first REPRO_API_PREFIX_LEN bytes are the prefix.  Returns 0 with *out and
 * *info written, or -1 with a message in errbuf. */
int repro_load_any(const char *path, const char *target, case_spec *out, repro_input *info,
                   char *errbuf, size_t errlen);
#endif /* ATTN_REPRO_H */
