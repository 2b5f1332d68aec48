/*
 * repro.c — `attnguard show` and `attnguard repro` (see repro.h).
 *
 * The rerun happens in a child process running the fuzz target's libFuzzer
 * binary on the single file: that binary is built with AddressSanitizer and
 * the exact oracles the fuzzer used, so the verdict is the fuzzer's own, and
 * a crash cannot take the CLI down with it.  Children are started with
 * posix_spawn and an argv array (no shell, so no quoting of paths), with
 * stdin from /dev/null and stdout+stderr into a log file that is parsed
 * afterwards.  The logs and encoded inputs live in a private work folder
 * that is removed on the way out, unless --keep asks for it.
 */
#include "repro.h"

#include "../case/case_bytes.h"
#include "repro_options.h"
#include "repro_verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define REPRO_MAX_FILE   (1u << 20)   /* corpus files and case texts are tiny */
#define REPRO_DEFAULT_TARGET "fuzz_attention"

/* ------------------------------------------------------------------ files */

/* Read a whole file (at most REPRO_MAX_FILE bytes) into a NUL-terminated
 * buffer.  Returns the buffer (free it) or NULL with a message. */
static char *read_all(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(REPRO_MAX_FILE + 1);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    size_t n = fread(buf, 1, REPRO_MAX_FILE + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > REPRO_MAX_FILE) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "file too large");
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int write_all(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    int bad = (w != len) | ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        snprintf(err, errlen, "%s: write error", path);
        return -1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Truncating copy (never overruns, always terminates). */
static void str_copy(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* out = a "/" b (b may be NULL: out = a); -1 if it does not fit. */
static int path_join(char *out, size_t cap, const char *a, const char *b) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    if (la + 1 + lb + 1 > cap) return -1;
    memcpy(out, a, la);
    if (b) {
        out[la] = '/';
        memcpy(out + la + 1, b, lb);
        out[la + 1 + lb] = '\0';
    } else {
        out[la] = '\0';
    }
    return 0;
}

static int file_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int valid_word(const char *s) {
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* From FILE's directories: the innermost `fuzz_*` one names the target, an
 * `*-inject-<bug>` one (build/fuzz-session-inject-<bug>/artifacts/...) the
 * mutant. */
static void guess_from_path(const char *path, char *target, size_t tcap, char *inject,
                            size_t icap) {
    const char *slash = strrchr(path, '/');
    if (!slash) return;
    size_t dlen = (size_t)(slash - path);
    const char *s = path;
    while (s < path + dlen) {
        const char *e = memchr(s, '/', (size_t)(path + dlen - s));
        if (!e) e = path + dlen;
        char comp[256];
        size_t n = (size_t)(e - s);
        if (n > 0 && n < sizeof comp) {
            memcpy(comp, s, n);
            comp[n] = '\0';
            if (strncmp(comp, "fuzz_", 5) == 0 && valid_word(comp))
                str_copy(target, tcap, comp);   /* innermost wins */
            const char *inj = strstr(comp, "-inject-");
            if (inj && valid_word(inj + 8)) str_copy(inject, icap, inj + 8);
        }
        s = e + 1;
    }
}

static int is_api_target(const char *target) { return target && strcmp(target, "fuzz_api") == 0; }

/* force_bytes: the file is known to be fuzz bytes (libFuzzer's output). */
static int load_impl(const char *path, const char *target, int force_bytes, case_spec *out,
                     repro_input *info, char *errbuf, size_t errlen) {
    char err[512];
    size_t len = 0;
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!path || !out || !info) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "NULL argument");
        return -1;
    }
    char g_target[64] = "", g_inject[64] = "";
    if (!target) {
        guess_from_path(path, g_target, sizeof g_target, g_inject, sizeof g_inject);
        target = g_target;
    }
    char *buf = read_all(path, &len, err, sizeof err);
    if (!buf) {
        if (errbuf && errlen) str_copy(errbuf, errlen, err);
        return -1;
    }
    memset(info, 0, sizeof *info);
    info->nbytes = len;
    /* Text only when it really is a case text: a byte string that happens
     * to be printable is a fuzz input.  An empty file is an empty text (an
     * error: "no keys") unless it is known to be fuzz bytes (--target, or a
     * fuzz_* directory in its path): the empty fuzz input is a valid case. */
    int empty_text = !force_bytes && len == 0 && !(target && target[0]);
    int named_case = !force_bytes && (ends_with(path, ".case") || empty_text);
    int text_ok = !force_bytes && (len > 0 || empty_text) && memchr(buf, '\0', len) == NULL;
    case_spec c;
    char msg[256] = "";
    if (named_case || text_ok) {
        int rc = text_ok ? case_parse(buf, &c, msg, sizeof msg) : -1;
        if (rc == 0) {
            free(buf);
            *out = c;
            info->was_text = 1;
            return 0;
        }
        if (named_case) {
            free(buf);
            if (errbuf && errlen)
                snprintf(errbuf, errlen, "%.300s: %.200s", path, msg[0] ? msg : "not a text case");
            return -1;
        }
    }
    const uint8_t *data = (const uint8_t *)buf;
    if (is_api_target(target)) {
        /* missing prefix bytes read as 0, as in the target */
        info->api = 1;
        for (size_t i = 0; i < REPRO_API_PREFIX_LEN && i < len; i++) info->api_prefix[i] = data[i];
        size_t skip = len < REPRO_API_PREFIX_LEN ? len : REPRO_API_PREFIX_LEN;
        data += skip;
        len -= skip;
    }
    case_decode(len ? data : NULL, len, &c);
    free(buf);
    *out = c;
    return 0;
}

int repro_load_any(const char *path, const char *target, case_spec *out, repro_input *info,
                   char *errbuf, size_t errlen) {
    return load_impl(path, target, 0, out, info, errbuf, errlen);
}

/* The comment line that says where a case came from ('#' lines are
 * comments in the text form, so the output still parses). */
static void print_origin(FILE *f, const char *path, const repro_input *in) {
    if (in->was_text) {
        fprintf(f, "# %s: case text\n", path);
        return;
    }
    fprintf(f, "# %s: %zu bytes, decoded as fuzz input\n", path, in->nbytes);
    if (in->api)
        fprintf(f, "# fuzz_api prefix %02x%02x%02x%02x: op %u, arg %u, n %u\n", in->api_prefix[0],
                in->api_prefix[1], in->api_prefix[2], in->api_prefix[3], in->api_prefix[0],
                in->api_prefix[1], in->api_prefix[2] | (unsigned)in->api_prefix[3] << 8);
}

/* ------------------------------------------------------------------- show */

static void show_usage(FILE *f) {
    fputs("usage: attnguard show [--target T] FILE...\n"
          "  print corpus, crash or .case files as canonical case text (fuzz bytes are\n"
          "  decoded; T = fuzz_api, or a fuzz_api directory in the path, reads the\n"
          "  4-byte fuzz_api prefix first)\n",
          f);
}

int cli_show(int argc, char **argv) {
    const char *target = NULL;
    int nfiles = 0, rc = 0, shown = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            show_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--target") == 0) {
            if (i + 1 >= argc || !valid_word(argv[i + 1])) {
                show_usage(stderr);
                return 2;
            }
            target = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "attnguard show: unknown option '%s'\n", argv[i]);
            show_usage(stderr);
            return 2;
        } else {
            nfiles++;
        }
    }
    if (nfiles == 0) {
        show_usage(stderr);
        return 2;
    }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0) {
            i++;
            continue;
        }
        case_spec c;
        repro_input in;
        char err[512];
        if (repro_load_any(argv[i], target, &c, &in, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard: %s\n", err);
            rc = 1;
            continue;
        }
        if (shown++) putchar('\n');
        if (!in.was_text || nfiles > 1) print_origin(stdout, argv[i], &in);
        case_print(stdout, &c);
    }
    fflush(stdout);
    return rc;
}

/* ------------------------------------------------------------ child runs */

/* A copy of the environment with ASAN_OPTIONS (a full malloc context, the
 * caller's, then ours: later options win) and UBSAN_OPTIONS set.  Free
 * with env_free. */
static char **env_with(const char *asan_extra) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    const char *old_asan = getenv("ASAN_OPTIONS");
    const char *old_ubsan = getenv("UBSAN_OPTIONS");
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "ASAN_OPTIONS=", 13) == 0) continue;
        if (strncmp(environ[i], "UBSAN_OPTIONS=", 14) == 0) continue;
        env[k++] = environ[i];
    }
    size_t need = strlen(asan_extra) + (old_asan ? strlen(old_asan) : 0) + 64;
    char *a = malloc(need);
    char *u = malloc(128 + (old_ubsan ? strlen(old_ubsan) : 0));
    if (!a || !u) {
        free(a);
        free(u);
        free(env);
        return NULL;
    }
    /* full allocation stacks in a report read by a person (the targets
     * record only 2 frames per malloc while fuzzing, for speed) */
    snprintf(a, need, "ASAN_OPTIONS=malloc_context_size=30:%s%s%s",
             old_asan && *old_asan ? old_asan : "", old_asan && *old_asan ? ":" : "", asan_extra);
    size_t ucap = 128 + (old_ubsan ? strlen(old_ubsan) : 0);
    snprintf(u, ucap, "UBSAN_OPTIONS=%s",
             old_ubsan && *old_ubsan ? old_ubsan : "print_stacktrace=1:report_error_type=1");
    env[k++] = a;
    env[k++] = u;
    env[k] = NULL;
    return env;
}

static void env_free(char **env) {
    if (!env) return;
    size_t k = 0;
    while (env[k]) k++;
    /* the two strings we allocated are the last two */
    if (k >= 2) {
        free(env[k - 1]);
        free(env[k - 2]);
    }
    free(env);
}

/* Run argv[0] with argv, stdin from /dev/null, stdout+stderr into log.
 * Returns the exit status (128 + signal if killed), or -1 with a message. */
static int run_child(char *const argv[], const char *asan_extra, const char *log, char *err,
                     size_t errlen) {
    char **env = env_with(asan_extra);
    if (!env) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    env_free(env);
    if (e != 0) {
        snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(e));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

/* --------------------------------------------------------------- locating */

/* The libFuzzer binary: --fuzz-dir, else build/fuzz[-inject-X] under the
 * current directory, else next to (or one level above) the CLI itself. */
static int find_binary(const char *fuzz_dir, const char *target, const char *inject, char *out,
                       size_t cap) {
    char sub[160], rel[PATH_MAX];
    snprintf(sub, sizeof sub, "fuzz%s%.64s/%.64s", inject[0] ? "-inject-" : "", inject, target);
    if (fuzz_dir) {
        if (path_join(out, cap, fuzz_dir, target) != 0) return -1;
        return file_executable(out) ? 0 : -1;
    }
    if (path_join(rel, sizeof rel, "build", sub) != 0) return -1;
    str_copy(out, cap, rel);
    if (file_executable(out)) return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    for (int up = 0; n > 0 && up < 2; up++) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = '\0';
        n = slash - exe;
        if (path_join(out, cap, exe, sub) == 0 && file_executable(out)) return 0;
    }
    str_copy(out, cap, rel);
    return -1;
}

/* ------------------------------------------------------------------ repro */

typedef struct repro_opts {
    const char *file;
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
    fputs("usage: attnguard repro FILE [--target T] [--inject BUG] [--minimize [--out F.case]\n"
          "                       [--runs N] [--time S]] [--fuzz-dir DIR] [--api-prefix HEX]\n"
          "                       [--keep] [-v]\n"
          "  prints FILE as a case, reruns it under AddressSanitizer with the target's\n"
          "  libFuzzer binary (build/fuzz[-inject-BUG]/T) and names the oracle that fired;\n"
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
                 strcmp(a, "--out") == 0 || strcmp(a, "--fuzz-dir") == 0 ||
                 strcmp(a, "--api-prefix") == 0 ||
                 strcmp(a, "--runs") == 0 || strcmp(a, "--time") == 0) {
            if (!val) {
                fprintf(stderr, "attnguard repro: %s needs a value\n", a);
                return -1;
            }
            i++;
            if (strcmp(a, "--target") == 0) o->target = val;
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
    if (o->target && !valid_word(o->target)) {
        fprintf(stderr, "attnguard repro: bad target name '%s'\n", o->target);
        return -1;
    }
    if (o->inject && *o->inject && !valid_word(o->inject)) {
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
 * logs.  It is removed when repro ends (remove_workdir) unless --keep. */
static int make_workdir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/attnguard-repro-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "attnguard repro: cannot remove %s: %s\n", path, strerror(errno));
    return 0;   /* go on: remove whatever else can be */
}

/* Depth first, without following links: the folder is repro's alone. */
static void remove_workdir(const char *dir) {
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "attnguard repro: cannot remove %s: %s\n", dir, strerror(errno));
}

/* The target's libFuzzer flags (timeout, rss_limit_mb...): <bin>.options,
 * which `make fuzz-build` copies from fuzz/<target>.options. */
static int bin_flags(const char *bin, repro_flags *fl, char *err, size_t errlen) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s.options", bin) >= (int)sizeof path) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    return repro_read_options(path, fl, err, errlen);
}

/* argv = bin, the options' flags, extra[0..nextra), input, NULL. */
static int run_with_flags(const char *bin, const repro_flags *fl, char *const *extra,
                          int nextra, const char *input, const char *asan, const char *log,
                          char *err, size_t errlen) {
    char *argv[1 + REPRO_FLAGS_MAX + 8 + 2];
    int k = 0;
    argv[k++] = (char *)bin;
    for (int i = 0; i < fl->n; i++) argv[k++] = (char *)fl->flag[i];
    for (int i = 0; i < nextra && i < 8; i++) argv[k++] = extra[i];
    argv[k++] = (char *)input;
    argv[k] = NULL;
    return run_child(argv, asan, log, err, errlen);
}

/* Run the target on one input file and read the verdict. */
static int run_verdict(const char *bin, const repro_flags *fl, const char *input, const char *log,
                       repro_verdict *v, char *err, size_t errlen) {
    int st = run_with_flags(bin, fl, NULL, 0, input, "dedup_token_length=3:print_summary=1", log,
                            err, errlen);
    if (st < 0) return -1;
    size_t n;
    char *text = read_all(log, &n, err, errlen);
    if (!text) return -1;
    repro_parse_log(text, st, v);
    free(text);
    return 0;
}

static void print_tail(const char *path, int lines) {
    size_t n;
    char err[256];
    char *text = read_all(path, &n, err, sizeof err);
    if (!text) return;
    const char *p = text + n;
    int seen = 0;
    while (p > text && seen <= lines) {
        p--;
        if (*p == '\n') seen++;
    }
    if (*p == '\n') p++;
    fputs(p, stderr);
    free(text);
}

static void print_file(const char *path) {
    size_t n;
    char err[256];
    char *text = read_all(path, &n, err, sizeof err);
    if (!text) return;
    fwrite(text, 1, n, stdout);
    free(text);
}

/* libFuzzer -minimize_crash=1 on `input`; the result lands in `min_path`.
 * `asan` is the ASAN_OPTIONS addition that decides what "the same crash" is
 * (DEDUP_TOKEN frames).  Returns 0 when min_path was written. */
static int minimize_once(const char *bin, const repro_flags *fl, const repro_opts *o,
                         const char *input, const char *min_path, const char *log,
                         const char *asan, char *err, size_t errlen) {
    char a_runs[48], a_time[48], a_out[PATH_MAX + 32];
    snprintf(a_runs, sizeof a_runs, "-runs=%ld", o->runs);
    snprintf(a_time, sizeof a_time, "-max_total_time=%ld", o->max_time);
    snprintf(a_out, sizeof a_out, "-exact_artifact_path=%s", min_path);
    char *const extra[] = {(char *)"-minimize_crash=1", a_runs, a_time, a_out};
    unlink(min_path);
    if (run_with_flags(bin, fl, extra, 4, input, asan, log, err, errlen) < 0) return -1;
    if (access(min_path, R_OK) != 0) {
        snprintf(err, errlen, "libFuzzer wrote no minimized input; the end of its log:");
        return -1;
    }
    return 0;
}

static int do_minimize(const char *bin, const repro_flags *fl, const repro_opts *o,
                       const char *target,
                       const char *input, size_t in_bytes, const char *workdir,
                       const repro_verdict *orig) {
    char min_path[PATH_MAX], log[PATH_MAX], vlog[PATH_MAX], err[512];
    if (path_join(min_path, sizeof min_path, workdir, "minimized") != 0 ||
        path_join(log, sizeof log, workdir, "minimize.log") != 0 ||
        path_join(vlog, sizeof vlog, workdir, "minimized.log") != 0) {
        fprintf(stderr, "attnguard repro: temporary path too long\n");
        return 2;
    }
    /* (docs/fuzzing.md, "Minimising") dedup_token_length=3 keeps libFuzzer on the same crash for
     * sanitizer reports.  An oracle's abort has the same top frames whatever
     * the oracle, so if the oracle changed on the way, retry with ASan
     * handling the abort and a token deep enough to hold the oracle's own
     * frame. */
    static const char *const attempts[] = {
        "dedup_token_length=3:print_summary=1",
        "handle_abort=1:dedup_token_length=8:print_summary=1",
    };
    repro_verdict v;
    int kept = 0;
    for (size_t k = 0; k < sizeof attempts / sizeof attempts[0] && !kept; k++) {
        printf("repro: minimizing with libFuzzer -minimize_crash=1 -runs=%ld (ASAN_OPTIONS=%s)\n",
               o->runs, attempts[k]);
        fflush(stdout);
        if (minimize_once(bin, fl, o, input, min_path, log, attempts[k], err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            print_tail(log, 8);
            return 2;
        }
        if (run_verdict(bin, fl, min_path, vlog, &v, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            return 2;
        }
        kept = strcmp(v.kind, orig->kind) == 0;
        if (!kept)
            printf("repro: the minimized input fires %s instead of %s: %s\n",
                   v.kind[0] ? v.kind : "nothing", orig->kind,
                   k + 1 < sizeof attempts / sizeof attempts[0] ? "retrying" : "giving up");
    }
    if (!kept) return 1;

    case_spec c;
    repro_input mi;
    if (load_impl(min_path, target, 1, &c, &mi, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }

    char out[PATH_MAX];
    if (o->out) {
        str_copy(out, sizeof out, o->out);
    } else {
        size_t L = strlen(o->file);
        if (ends_with(o->file, ".case")) L -= 5;
        if (L + sizeof ".min.case" > sizeof out) {
            fprintf(stderr, "attnguard repro: path too long\n");
            return 2;
        }
        memcpy(out, o->file, L);
        memcpy(out + L, ".min.case", sizeof ".min.case");
    }
    /* The fuzz_api prefix is not part of a case: keep it as a comment with
     * the command that reruns the case the same way. */
    char text[16384];
    size_t hl = 0;
    if (mi.api)
        hl = (size_t)snprintf(text, sizeof text,
                              "# fuzz_api prefix %02x%02x%02x%02x: rerun with attnguard repro "
                              "FILE --target fuzz_api --api-prefix %02x%02x%02x%02x\n",
                              mi.api_prefix[0], mi.api_prefix[1], mi.api_prefix[2],
                              mi.api_prefix[3], mi.api_prefix[0], mi.api_prefix[1],
                              mi.api_prefix[2], mi.api_prefix[3]);
    size_t tl = hl < sizeof text ? hl + case_format(text + hl, sizeof text - hl, &c) : hl;
    if (tl >= sizeof text || write_all(out, text, tl, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", tl >= sizeof text ? "case text too long" : err);
        return 2;
    }
    printf("repro: minimized %zu -> %zu bytes, still %s; wrote %s:\n", in_bytes, mi.nbytes,
           v.kind, out);
    fputs(text, stdout);
    repro_print_verdict(&v);
    return 1;
}

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
    str_copy(input, sizeof input, o->file);
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
        if (path_join(input, sizeof input, workdir, "input.bin") != 0 ||
            write_all(input, enc, off + n, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            return 2;
        }
        nbytes = off + n;
    }

    char log[PATH_MAX];
    if (path_join(log, sizeof log, workdir, "repro.log") != 0) {
        fprintf(stderr, "attnguard repro: temporary path too long\n");
        return 2;
    }
    printf("repro: running %s on it under AddressSanitizer\n", bin);
    fflush(stdout);
    repro_verdict v;
    if (run_verdict(bin, fl, input, log, &v, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }
    if (o->verbose) print_file(log);
    repro_print_verdict(&v);
    if (o->keep) printf("repro: full report: %s\n", log);
    else if (v.kind[0] && !o->verbose)
        printf("repro: -v prints the full report, --keep keeps it in a work folder\n");
    if (!v.kind[0]) {
        if (o->minimize) printf("repro: nothing to minimize\n");
        return 0;
    }
    if (!o->minimize) return 1;
    return do_minimize(bin, fl, o, target, input, nbytes, workdir, &v);
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
    guess_from_path(o.file, g_target, sizeof g_target, g_inject, sizeof g_inject);
    if (o.target) str_copy(target, sizeof target, o.target);
    else if (g_target[0]) str_copy(target, sizeof target, g_target);
    const char *env_inject = getenv("ATTN_INJECT");
    if (o.inject) str_copy(inject, sizeof inject, o.inject);
    else if (env_inject && *env_inject) str_copy(inject, sizeof inject, env_inject);
    else str_copy(inject, sizeof inject, g_inject);
    if (inject[0] && !valid_word(inject)) {
        fprintf(stderr, "attnguard repro: bad bug name '%s'\n", inject);
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
        if (!is_api_target(target) || parse_hex_prefix(o.api_prefix, prefix) != 0) {
            fprintf(stderr, "attnguard repro: --api-prefix takes 8 hex digits and goes with "
                            "the fuzz_api target\n");
            return 2;
        }
        in.api = 1;
        memcpy(in.api_prefix, prefix, sizeof prefix);
    } else if (in.was_text && is_api_target(target)) {
        in.api = 1;
        memcpy(in.api_prefix, prefix, sizeof prefix);
    }
    print_origin(stdout, o.file, &in);
    if (in.was_text && in.api)
        printf("# rerun with fuzz_api prefix %02x%02x%02x%02x (--api-prefix to change)\n",
               prefix[0], prefix[1], prefix[2], prefix[3]);
    case_print(stdout, &c);

    char bin[PATH_MAX];
    if (find_binary(o.fuzz_dir, target, inject, bin, sizeof bin) != 0) {
        fprintf(stderr, "attnguard repro: no fuzz binary %s; build it with: make fuzz-build%s%s\n",
                bin, inject[0] ? " INJECT=" : "", inject);
        return 2;
    }

    static repro_flags fl;   /* 32 KiB: not on the stack */
    if (bin_flags(bin, &fl, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s (the fuzz target's limits; rebuild with: "
                        "make fuzz-build%s%s)\n", err, inject[0] ? " INJECT=" : "", inject);
        return 2;
    }

    char workdir[PATH_MAX];
    if (make_workdir(workdir, sizeof workdir) != 0) {
        fprintf(stderr, "attnguard repro: cannot create a temporary directory: %s\n",
                strerror(errno));
        return 2;
    }
    int rc = repro_in(&o, &c, &in, prefix, target, bin, &fl, workdir);
    if (o.keep) {
        printf("repro: work folder kept: %s\n", workdir);
    } else {
        fflush(stdout);
        remove_workdir(workdir);
    }
    return rc;
}
