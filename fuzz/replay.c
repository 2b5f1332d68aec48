/*
 * replay.c — runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * directories without libFuzzer, so every corpus doubles as an ordinary
 * regression test (gcc or clang, with or without sanitizers).
 *
 *     replay [-timeout=N] [other libFuzzer flags, ignored] PATH...
 *
 * A directory is read one level deep (regular files only, sorted by name,
 * dot files skipped).  Each input's name is printed before it runs, so a
 * crash or an oracle's abort names it; an input that runs longer than N
 * seconds ends the replay with "replay: TIMEOUT <file>" (no limit without
 * -timeout: `make regress` passes the target's .options flags).
 * An oracle finding aborts the process (oracle_fire), which is the failure
 * signal; an unreadable file counts as failed.  Exit status: 0 when every
 * input passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define REPLAY_MAX_INPUT ((size_t)1 << 20)   /* libFuzzer's default max_len is far below */

static char g_current[4096];   /* the input running now, for the alarm handler */

static void on_alarm(int sig) {
    (void)sig;
    /* Only async-signal-safe calls here. */
    static const char pre[] = "replay: TIMEOUT ";
    ssize_t w = write(STDERR_FILENO, pre, sizeof pre - 1);
    w = write(STDERR_FILENO, g_current, strnlen(g_current, sizeof g_current));
    w = write(STDERR_FILENO, "\n", 1);
    (void)w;
    _exit(1);
}

typedef struct counts {
    unsigned inputs, passed, failed;
} counts;

static int run_file(const char *path, unsigned timeout, counts *k) {
    k->inputs++;
    snprintf(g_current, sizeof g_current, "%s", path);
    printf("replay: %s\n", path);
    fflush(stdout);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        k->failed++;
        return -1;
    }
    uint8_t *buf = malloc(REPLAY_MAX_INPUT + 1);
    if (!buf) {
        fclose(f);
        fprintf(stderr, "replay: out of memory\n");
        k->failed++;
        return -1;
    }
    size_t n = fread(buf, 1, REPLAY_MAX_INPUT + 1, f);
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err || n > REPLAY_MAX_INPUT) {
        fprintf(stderr, "replay: %s: %s\n", path, rd_err ? "read error" : "larger than 1 MiB");
        free(buf);
        k->failed++;
        return -1;
    }
    /* An exact-size copy, so a target that reads past the input trips ASan. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        k->failed++;
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    alarm(timeout);
    LLVMFuzzerTestOneInput(exact, n);
    alarm(0);
    free(exact);
    k->passed++;
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir, unsigned timeout, counts *k) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        k->inputs++;
        k->failed++;
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) break;
            names = nn;
            cap = nc;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) break;
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) run_file(names[i], timeout, k);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    /* Replay is the regression run: let fuzz_attention run the large shipped
     * shapes through its kernels (an explicit setting wins). */
    setenv("ATTN_FUZZ_MAX_MACS", "268435456", 0);
    setenv("ATTN_FUZZ_DEEP", "1", 0);   /* a replay runs every input through every tier */
    LLVMFuzzerInitialize(&argc, &argv);   /* same process setup as under libFuzzer */
    unsigned timeout = 0;   /* alarm(0): no limit */
    counts k = {0, 0, 0};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    int paths = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-timeout=", 9) == 0) {
            char *end = NULL;
            unsigned long t = strtoul(argv[i] + 9, &end, 10);
            if (!end || *end || t == 0 || t > 86400) {
                fprintf(stderr, "replay: bad %s\n", argv[i]);
                return 2;
            }
            timeout = (unsigned)t;
            continue;
        }
        if (argv[i][0] == '-') {
            /* libFuzzer-style flags are accepted and ignored, so the same
             * command line works with either driver. */
            continue;
        }
        paths++;
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            k.inputs++;
            k.failed++;
        } else if (S_ISDIR(st.st_mode)) {
            run_dir(argv[i], timeout, &k);
        } else {
            run_file(argv[i], timeout, &k);
        }
    }
    if (!paths) {
        fprintf(stderr, "usage: %s [-timeout=N] FILE|DIR...\n", argv[0]);
        return 2;
    }
    printf("replay: %u inputs, %u passed, %u failed\n", k.inputs, k.passed, k.failed);
    return k.failed ? 1 : 0;
}
