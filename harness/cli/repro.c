/*
 * repro.c — `attnguard repro` (see repro.h): read the input, print it as a
 * case, encode a text case into the target's bytes, rerun it in the target's
 * libFuzzer binary under AddressSanitizer (child.c), name the oracle that
 * fired (repro_verdict.c) and minimise it on request (minimize.c).  The
 * encoded input and the logs live in a private work folder removed on the
 * way out, unless --keep asks for it.
 */
#include "repro.h"

#include "../case/case_bytes.h"
#include "child.h"
#include "engine_pick.h"
#include "input.h"
#include "known.h"
#include "minimize.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPRO_DEFAULT_TARGET "fuzz_attention"

typedef struct repro_opts {
    const char *file;
    const char *engine;
    const char *target;
    const char *inject;
    const char *out;
    const char *fuzz_dir;
    const char *api_prefix;
    int minimize;
    int verbose;
    int keep;
    long runs;
    long max_time;
} repro_opts;

static void repro_usage(FILE *f) {
    fputs("usage: attnguard repro FILE [--engine E] [--target T] [--inject BUG]\n"
          "                       [--minimize [--out F.case] [--runs N] [--time S]]\n"
          "                       [--fuzz-dir DIR] [--api-prefix HEX] [--keep] [-v]\n"
          "  prints FILE as a case, reruns it under AddressSanitizer with the target's\n"
          "  libFuzzer binary (build/fuzz[-inject-BUG]/T) and names the oracle that fired;\n"
          "  E is the engine it runs on: --engine, else the one recorded for FILE's fuzz\n"
          "  session (attnguard-engine.txt in its folder or above), else $ATTNGUARD_ENGINE,\n"
          "  else attnguard; repro says which, and says so when they disagree.\n"
          "  --minimize shrinks a crashing input, keeping the same oracle, into F.case\n"
          "  (default FILE.min.case).  T defaults to the fuzz_* directory FILE is in, else\n"
          "  fuzz_attention; BUG to $ATTN_INJECT, else an *-inject-BUG directory in the path.\n"
          "  fuzz_api inputs carry a 4-byte prefix (op arg n_lo n_hi): --api-prefix sets it\n"
          "  for a .case (default 00000500).  -v prints the whole sanitizer report.\n"
          "  The logs and the encoded input go to a work folder in $TMPDIR (else /tmp),\n"
          "  removed at the end; --keep keeps it and prints its path.\n"
          "  exit status: 0 the input passes, 1 a finding, 2 usage or setup error\n",
          f);
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_repro_args(int argc, char **argv, repro_opts *o) {
    memset(o, 0, sizeof *o);
    o->runs = 20000;
    o->max_time = 60;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return 1;
        if (strcmp(a, "--minimize") == 0) o->minimize = 1;
        else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) o->verbose = 1;
        else if (strcmp(a, "--keep") == 0) o->keep = 1;
        else if (strcmp(a, "--target") == 0 || strcmp(a, "--inject") == 0 ||
                 strcmp(a, "--engine") == 0 ||
                 strcmp(a, "--out") == 0 || strcmp(a, "--fuzz-dir") == 0 ||
                 strcmp(a, "--api-prefix") == 0 ||
                 strcmp(a, "--runs") == 0 || strcmp(a, "--time") == 0) {
            if (!val) {
                fprintf(stderr, "attnguard repro: %s needs a value\n", a);
                return -1;
            }
            i++;
            if (strcmp(a, "--target") == 0) o->target = val;
            else if (strcmp(a, "--engine") == 0) o->engine = val;
            else if (strcmp(a, "--inject") == 0) o->inject = val;
            else if (strcmp(a, "--out") == 0) o->out = val;
            else if (strcmp(a, "--fuzz-dir") == 0) o->fuzz_dir = val;
            else if (strcmp(a, "--api-prefix") == 0) o->api_prefix = val;
            else if (strcmp(a, "--runs") == 0) {
                if (parse_long(val, 1, 100000000L, &o->runs) != 0) {
                    fprintf(stderr, "attnguard repro: bad --runs '%s'\n", val);
                    return -1;
                }
            } else if (parse_long(val, 1, 86400L, &o->max_time) != 0) {
                fprintf(stderr, "attnguard repro: bad --time '%s'\n", val);
                return -1;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "attnguard repro: unknown option '%s'\n", a);
            return -1;
        } else if (o->file) {
            fprintf(stderr, "attnguard repro: one FILE at a time ('%s', '%s')\n", o->file, a);
            return -1;
        } else {
            o->file = a;
        }
    }
    if (!o->file) return -1;
    if (o->engine && !o->engine[0]) {
        fprintf(stderr, "attnguard repro: --engine needs a value (a built-in engine's name or "
                        "a path to an adapter .so)\n");
        return -1;
    }
    if (o->target && !cli_valid_word(o->target)) {
        fprintf(stderr, "attnguard repro: bad target name '%s'\n", o->target);
        return -1;
    }
    if (o->inject && *o->inject && !cli_valid_word(o->inject)) {
        fprintf(stderr, "attnguard repro: bad bug name '%s'\n", o->inject);
        return -1;
    }
    if (o->out && !o->minimize) {
        fprintf(stderr, "attnguard repro: --out goes with --minimize\n");
        return -1;
    }
    return 0;
}

/* A private work folder for the encoded input, the minimised bytes and the
 * logs.  It is removed when repro ends (repro_remove_workdir) unless --keep. */

/* FILE's api prefix from --api-prefix ("01110000"), else the file's own,
 * else the corpus default. */
static int parse_hex_prefix(const char *hex, unsigned char out[REPRO_API_PREFIX_LEN]) {
    if (strlen(hex) != 2 * REPRO_API_PREFIX_LEN) return -1;
    for (size_t i = 0; i < REPRO_API_PREFIX_LEN; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = hex[2 * i + (size_t)k];
            unsigned d;
            if (ch >= '0' && ch <= '9') d = (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f') d = (unsigned)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F') d = (unsigned)(ch - 'A' + 10);
            else return -1;
            v = v * 16 + d;
        }
        out[i] = (unsigned char)v;
    }
    return 0;
}

/* What repro does in its work folder: encode a text input, run it, minimise
 * on request.  Returns the exit status. */
static int repro_in(const repro_opts *o, const case_spec *c, const repro_input *in,
                    const unsigned char prefix[REPRO_API_PREFIX_LEN], const char *target,
                    const char *bin, const repro_flags *fl, const char *workdir) {
    char err[512];
    /* The binary takes bytes: a text case is encoded (canonically) first,
     * behind the fuzz_api prefix for that target; --api-prefix rewrites a
     * byte file's prefix. */
    char input[PATH_MAX];
    cli_str_copy(input, sizeof input, o->file);
    size_t nbytes = in->nbytes;
    if (in->was_text || o->api_prefix) {
        uint8_t enc[REPRO_API_PREFIX_LEN + CASE_BYTES_MAX];
        size_t off = in->api ? REPRO_API_PREFIX_LEN : 0;
        char why[256] = "";
        size_t n = case_encode(c, enc + off, CASE_BYTES_MAX, why, sizeof why);
        if (n == 0) {
            fprintf(stderr,
                    "attnguard repro: this case has no fuzz-input form (%s); "
                    "run it with `attnguard check` instead\n", why[0] ? why : "not encodable");
            return 2;
        }
        memcpy(enc, prefix, off);
        if (cli_path_join(input, sizeof input, workdir, "input.bin") != 0 ||
            cli_write_all(input, enc, off + n, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            return 2;
        }
        nbytes = off + n;
    }

    char log[PATH_MAX];
    if (cli_path_join(log, sizeof log, workdir, "repro.log") != 0) {
        fprintf(stderr, "attnguard repro: temporary path too long\n");
        return 2;
    }
    printf("repro: running %s on it under AddressSanitizer\n", bin);
    fflush(stdout);
    repro_verdict v;
    if (repro_run_verdict(bin, fl, input, log, &v, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }
    if (o->verbose) cli_print_file(log);
    repro_print_verdict(&v);
    if (o->keep) printf("repro: full report: %s\n", log);
    else if (v.kind[0] && !o->verbose)
        printf("repro: -v prints the full report, --keep keeps it in a work folder\n");
    if (!v.kind[0]) {
        if (o->minimize) printf("repro: nothing to minimize\n");
        return 0;
    }
    if (!o->minimize) return 1;
    const repro_min_opts m = {o->file, o->out, o->runs, o->max_time};
    return repro_minimize(bin, fl, &m, target, input, nbytes, workdir, &v);
}

int cli_repro(int argc, char **argv) {
    repro_opts o;
    int pr = parse_repro_args(argc, argv, &o);
    if (pr != 0) {
        repro_usage(pr > 0 ? stdout : stderr);
        return pr > 0 ? 0 : 2;
    }

    char target[64] = REPRO_DEFAULT_TARGET, inject[64] = "";
    char g_target[64] = "", g_inject[64] = "";
    repro_guess_from_path(o.file, g_target, sizeof g_target, g_inject, sizeof g_inject);
    if (o.target) cli_str_copy(target, sizeof target, o.target);
    else if (g_target[0]) cli_str_copy(target, sizeof target, g_target);
    const char *env_inject = getenv("ATTN_INJECT");
    if (o.inject) cli_str_copy(inject, sizeof inject, o.inject);
    else if (env_inject && *env_inject) cli_str_copy(inject, sizeof inject, env_inject);
    else cli_str_copy(inject, sizeof inject, g_inject);
    if (inject[0] && !cli_valid_word(inject)) {
        fprintf(stderr, "attnguard repro: bad bug name '%s'\n", inject);
        return 2;
    }
    /* a name this tree does not have: say so, not "build it" */
    char why[1024];
    if (!cli_known_target(target, why, sizeof why) ||
        (inject[0] && !cli_known_bug(inject, why, sizeof why))) {
        fprintf(stderr, "attnguard repro: %s\n", why);
        return 2;
    }

    case_spec c;
    repro_input in;
    char err[512];
    if (repro_load_any(o.file, target, &c, &in, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }
    unsigned char prefix[REPRO_API_PREFIX_LEN] = REPRO_API_PREFIX_DEFAULT;
    if (in.api) memcpy(prefix, in.api_prefix, sizeof prefix);
    if (o.api_prefix) {
        if (!repro_is_api_target(target) || parse_hex_prefix(o.api_prefix, prefix) != 0) {
            fprintf(stderr, "attnguard repro: --api-prefix takes 8 hex digits and goes with "
                            "the fuzz_api target\n");
            return 2;
        }
        in.api = 1;
        memcpy(in.api_prefix, prefix, sizeof prefix);
    } else if (in.was_text && repro_is_api_target(target)) {
        in.api = 1;
        memcpy(in.api_prefix, prefix, sizeof prefix);
    }
    repro_print_origin(stdout, o.file, &in);
    if (in.was_text && in.api)
        printf("# rerun with fuzz_api prefix %02x%02x%02x%02x (--api-prefix to change)\n",
               prefix[0], prefix[1], prefix[2], prefix[3]);
    case_print(stdout, &c);

    char bin[PATH_MAX];
    if (repro_find_binary(o.fuzz_dir, target, inject, bin, sizeof bin) != 0) {
        /* a contract target is built with its engine (make fetches it) */
        char engine[64] = "";
        const size_t tl = strlen(target);
        if (tl > 14 && strncmp(target, "fuzz_", 5) == 0 &&
            strcmp(target + tl - 9, "_contract") == 0 && tl - 14 < sizeof engine)
            snprintf(engine, sizeof engine, " ENGINE=%.*s", (int)(tl - 14), target + 5);
        fprintf(stderr,
                "attnguard repro: no fuzz binary %s; build it with: make fuzz-build%s%s%s\n", bin,
                engine, inject[0] ? " INJECT=" : "", inject);
        return 2;
    }

    static repro_flags fl;   /* 32 KiB: not on the stack */
    if (repro_bin_flags(bin, &fl, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s (the fuzz target's limits; rebuild with: "
                        "make fuzz-build%s%s)\n", err, inject[0] ? " INJECT=" : "", inject);
        return 2;
    }

    /* The engine it reruns on: the one its session recorded, unless told
     * otherwise (engine_pick.h), handed to the target as its
     * ATTNGUARD_ENGINE.  A target that calls one engine's own API (fuzz_api:
     * attnguard's; a contract target: its engine's) runs on that one. */
    engine_pick pick;
    char *files[1] = {(char *)o.file};
    if (engine_pick_for(o.engine, files, 1, stdout, "repro: ", &pick, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }
    char said[PATH_MAX + 400];
    engine_pick_describe(&pick, said, sizeof said);
    if (fl.drives[0])
        printf("repro: %s calls %s's own API (the engine choice, %s, does not apply to it)\n",
               target, fl.drives, said);
    else
        printf("repro: engine %s\n", said);
    repro_child_engine(pick.engine, pick.have_options ? pick.options : NULL);

    char workdir[PATH_MAX];
    if (repro_make_workdir(workdir, sizeof workdir) != 0) {
        fprintf(stderr, "attnguard repro: cannot create a temporary directory: %s\n",
                strerror(errno));
        return 2;
    }
    int rc = repro_in(&o, &c, &in, prefix, target, bin, &fl, workdir);
    if (o.keep) {
        printf("repro: work folder kept: %s\n", workdir);
    } else {
        fflush(stdout);
        repro_remove_workdir(workdir);
    }
    return rc;
}

