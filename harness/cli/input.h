/*
 * input.h — a corpus, crash or .case file read as a case, what its path
 * says about the target and the mutant, and the file helpers the CLI's
 * show, repro and minimize share.  Owns no case format (harness/case/).
 */
#ifndef ATTN_CLI_INPUT_H
#define ATTN_CLI_INPUT_H

#include "../case/case.h"

#include <stddef.h>
#include <stdio.h>

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
/* As repro_load_any; force_bytes = 1 reads the file as fuzz bytes whatever
 * it looks like (libFuzzer's own output). */
int repro_load(const char *path, const char *target, int force_bytes, case_spec *out,
               repro_input *info, char *errbuf, size_t errlen);

/* From the path's directories: the innermost `fuzz_*` one names the target,
 * an `*-inject-<bug>` one the mutant; left untouched when absent. */
void repro_guess_from_path(const char *path, char *target, size_t tcap, char *inject,
                           size_t icap);
/* 1 when target is fuzz_api (its inputs carry the 4-byte prefix). */
int repro_is_api_target(const char *target);
/* The '#' comment lines saying where a case came from (the output still
 * parses as a case). */
void repro_print_origin(FILE *f, const char *path, const repro_input *in);

/* The whole file (at most 1 MiB), NUL-terminated; free it.  NULL with a
 * message naming the path otherwise. */
char *cli_read_all(const char *path, size_t *len, char *err, size_t errlen);
/* 0, or -1 with a message naming the path. */
int cli_write_all(const char *path, const void *data, size_t len, char *err, size_t errlen);
int cli_ends_with(const char *s, const char *suffix);
/* s without its leading blanks and tabs, its trailing ones and line ends
 * cut off in place (the `key = value` readers' trim). */
char *cli_trim(char *s);
/* Truncating copy: never overruns, always terminates. */
void cli_str_copy(char *dst, size_t cap, const char *src);
/* out = a "/" b (b may be NULL: out = a); -1 when it does not fit. */
int cli_path_join(char *out, size_t cap, const char *a, const char *b);
int cli_file_executable(const char *path);
/* 1 for a non-empty [A-Za-z0-9_]+ (target and bug names). */
int cli_valid_word(const char *s);
/* The last `lines` lines of a file to stderr; the whole file to stdout. */
void cli_print_tail(const char *path, int lines);
void cli_print_file(const char *path);
#endif /* ATTN_CLI_INPUT_H */
