/*
 * repro.h — the `show` and `repro` subcommands of the attnguard CLI: turn
 * any corpus or crash file into a readable case, rerun it under
 * AddressSanitizer through the fuzz target's own binary, name the oracle
 * that fired, and minimise it on request.
 *
 * The rooms: show.c and repro.c (the subcommands), input.c (a file as a
 * case), child.c (running the libFuzzer binary), minimize.c, and
 * repro_verdict.c / repro_options.c (reading its report and its limits).
 * Not owned here: the case formats (harness/case/), the oracles or the fuzz
 * targets; nothing here builds anything.
 */
#ifndef ATTN_REPRO_H
#define ATTN_REPRO_H

#include "input.h"

/* `attnguard show [--engine E] [--target T] FILE...`: print each file as a
 * canonical case, with a `# engine:` comment naming the engine it runs on
 * (engine_pick.h) when that was recorded or given, or with the origin
 * lines of fuzz bytes.  A file named *.case must parse as text; any other file is shown as
 * text when it parses as such, else decoded as fuzz bytes (case_decode,
 * never fails).  Under a fuzz_api directory, or with --target fuzz_api, the
 * 4-byte fuzz_api prefix is read first and shown as a comment.  argv holds
 * the arguments after the subcommand.  Returns the exit status: 0 ok, 1 a
 * file could not be read or parsed, 2 usage. */
int cli_show(int argc, char **argv);

/* `attnguard repro FILE [--engine E] [--target T] [--inject BUG] [--minimize]
 * [--out F.case] [--runs N] [--time S] [--fuzz-dir DIR] [--api-prefix HEX]
 * [-v]`: print the case, rerun it under ASan with the target's libFuzzer
 * binary on engine E (--engine, else the one FILE's fuzz session recorded,
 * else $ATTNGUARD_ENGINE, else attnguard: engine_pick.h; printed as
 * `repro: engine ...`), print `repro: ORACLE <name>` (or the sanitizer/libFuzzer kind) or
 * `repro: no finding (the input passes)`.  --minimize shrinks a crashing
 * input with libFuzzer -minimize_crash=1, keeps it only if the same oracle
 * still fires, and writes it as a .case (default FILE.min.case).
 * Target: --target, else a `fuzz_*` directory in FILE's path, else
 * fuzz_attention.  Mutant: --inject, else $ATTN_INJECT, else an
 * `*-inject-<bug>` directory in FILE's path.  Returns 0 no finding,
 * 1 a finding, 2 usage or setup error. */
int cli_repro(int argc, char **argv);

#endif /* ATTN_REPRO_H */
