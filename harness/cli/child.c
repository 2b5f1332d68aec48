/*
 * child.c — running a fuzz target's libFuzzer binary for repro and
 * minimize (see child.h): where the binary is, its limits from its .options
 * file, a child process started with posix_spawn and an argv array (no
 * shell, so no quoting of paths), stdin from /dev/null and stdout+stderr
 * into a log that is parsed afterwards, and the private work folder that
 * holds the logs.  A crash in the child cannot take the CLI down with it.
 */
#include "child.h"

#include "input.h"

#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* The engine the target runs on, as ATTNGUARD_ENGINE[_OPTIONS] entries of
 * its environment ("" until repro_child_engine sets them). */
static char g_engine_var[PATH_MAX + 32], g_options_var[320];

void repro_child_engine(const char *engine, const char *options) {
    snprintf(g_engine_var, sizeof g_engine_var, "ATTNGUARD_ENGINE=%s", engine);
    if (options) snprintf(g_options_var, sizeof g_options_var, "ATTNGUARD_ENGINE_OPTIONS=%s", options);
    else g_options_var[0] = '\0';
}

/* A copy of the environment with ASAN_OPTIONS (a full malloc context, the
 * caller's, then ours: later options win) and UBSAN_OPTIONS set, and the
 * engine repro chose (repro_child_engine) in place of the caller's
 * ATTNGUARD_ENGINE and ATTNGUARD_ENGINE_OPTIONS.  Free with env_free. */
static char **env_with(const char *asan_extra) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc(n + 5, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    const char *old_asan = getenv("ASAN_OPTIONS");
    const char *old_ubsan = getenv("UBSAN_OPTIONS");
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "ASAN_OPTIONS=", 13) == 0) continue;
        if (strncmp(environ[i], "UBSAN_OPTIONS=", 14) == 0) continue;
        if (g_engine_var[0] && (strncmp(environ[i], "ATTNGUARD_ENGINE=", 17) == 0 ||
                                strncmp(environ[i], "ATTNGUARD_ENGINE_OPTIONS=", 25) == 0))
            continue;
        env[k++] = environ[i];
    }
    if (g_engine_var[0]) env[k++] = g_engine_var;
    if (g_engine_var[0] && g_options_var[0]) env[k++] = g_options_var;
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

/* The libFuzzer binary: --fuzz-dir, else build/fuzz[-inject-X] under the
 * current directory, else next to (or one level above) the CLI itself,
 * else where `make install` puts the targets beside an installed CLI
 * (<prefix>/bin/attnguard: <prefix>/libexec/attnguard/fuzz, mk/install.mk). */
int repro_find_binary(const char *fuzz_dir, const char *target, const char *inject, char *out,
                       size_t cap) {
    char sub[160], rel[PATH_MAX];
    snprintf(sub, sizeof sub, "fuzz%s%.64s/%.64s", inject[0] ? "-inject-" : "", inject, target);
    if (fuzz_dir) {
        if (cli_path_join(out, cap, fuzz_dir, target) != 0) return -1;
        return cli_file_executable(out) ? 0 : -1;
    }
    if (cli_path_join(rel, sizeof rel, "build", sub) != 0) return -1;
    cli_str_copy(out, cap, rel);
    if (cli_file_executable(out)) return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    for (int up = 0; n > 0 && up < 2; up++) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = '\0';
        n = slash - exe;
        if (cli_path_join(out, cap, exe, sub) == 0 && cli_file_executable(out)) return 0;
        char lib[PATH_MAX];
        if (up == 0 && cli_path_join(lib, sizeof lib, exe, "../libexec/attnguard") == 0 &&
            cli_path_join(out, cap, lib, sub) == 0 && cli_file_executable(out))
            return 0;
    }
    cli_str_copy(out, cap, rel);
    return -1;
}


int repro_make_workdir(char *dir, size_t cap) {
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
void repro_remove_workdir(const char *dir) {
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "attnguard repro: cannot remove %s: %s\n", dir, strerror(errno));
}

/* The target's libFuzzer flags (timeout, rss_limit_mb...): <bin>.options,
 * which `make fuzz-build` copies from fuzz/<target>.options. */
int repro_bin_flags(const char *bin, repro_flags *fl, char *err, size_t errlen) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s.options", bin) >= (int)sizeof path) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    return repro_read_options(path, fl, err, errlen);
}

/* argv = bin, the options' flags, extra[0..nextra), input, NULL. */
int repro_run_with_flags(const char *bin, const repro_flags *fl, char *const *extra,
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
int repro_run_verdict(const char *bin, const repro_flags *fl, const char *input, const char *log,
                       repro_verdict *v, char *err, size_t errlen) {
    int st = repro_run_with_flags(bin, fl, NULL, 0, input, "dedup_token_length=3:print_summary=1", log,
                            err, errlen);
    if (st < 0) return -1;
    size_t n;
    char *text = cli_read_all(log, &n, err, errlen);
    if (!text) return -1;
    repro_parse_log(text, st, v);
    free(text);
    return 0;
}
