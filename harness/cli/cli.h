/*
 * cli.h — the subcommands of the `attnguard` command line, one file each
 * (check.c, show.c, repro.c, repro_verdict.c for classify, repro_options.c
 * for fuzz-flags, main.c for the usage text, engines and the dispatch).
 * Each takes the arguments after its name and returns the exit status.
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include <stdio.h>

int cli_check(int argc, char **argv);       /* check.c */
int cli_show(int argc, char **argv);        /* show.c */
int cli_repro(int argc, char **argv);       /* repro.c */
int cli_classify(int argc, char **argv);    /* repro_verdict.c */
int cli_fuzz_flags(int argc, char **argv);  /* repro_options.c */

#endif /* AG_CLI_H */
