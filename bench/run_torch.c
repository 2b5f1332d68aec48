/*
 * bench/run_torch.c — see run_torch.h: the child process and the lines
 * exchanged with it (tab-separated words, one request and one reply each).
 */
#include "run_torch.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct torch_peer {
    pid_t pid;
    FILE *to, *from;
    char line[4096];
};

torch_peer *torch_peer_start(const char *cmd, char *info, size_t cap) {
    int in[2], out[2];
    if (pipe(in) != 0) return snprintf(info, cap, "pipe failed"), NULL;
    if (pipe(out) != 0) {
        close(in[0]), close(in[1]);
        return snprintf(info, cap, "pipe failed"), NULL;
    }
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN);   /* a child that died is an error reply, not our death */
    const pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        return snprintf(info, cap, "fork failed"), NULL;
    }
    if (pid == 0) {   /* the child: stdin from in[0], stdout to out[1] */
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    torch_peer *t = calloc(1, sizeof *t);
    if (t) t->to = fdopen(in[1], "w"), t->from = fdopen(out[0], "r");
    if (!t || !t->to || !t->from) {
        snprintf(info, cap, "out of memory");
        if (t) torch_peer_stop(t);
        return NULL;
    }
    t->pid = pid;
    if (!fgets(t->line, sizeof t->line, t->from) || strncmp(t->line, "hello\t", 6) != 0) {
        snprintf(info, cap, "`%s` did not start (see above)", cmd);
        torch_peer_stop(t);
        return NULL;
    }
    t->line[strcspn(t->line, "\n")] = '\0';
    char *fn = strchr(t->line + 6, '\t');
    if (fn) *fn++ = '\0';
    snprintf(info, cap, "torch %s, %s", t->line + 6, fn ? fn : "?");
    return t;
}

void torch_peer_stop(torch_peer *t) {
    if (!t) return;
    if (t->to) {
        fputs("quit\n", t->to);
        fclose(t->to);
    }
    if (t->from) fclose(t->from);
    if (t->pid > 0) waitpid(t->pid, NULL, 0);
    free(t);
}

/* Send one request, read its reply into t->line (no newline); the reply's
 * first word must be `want`.  0, or -1 (the child is gone, or answered
 * "error": the line says why). */
static int ask(torch_peer *t, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ask(torch_peer *t, const char *want, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(t->to, fmt, ap);
    va_end(ap);
    if (fflush(t->to) != 0 || !fgets(t->line, sizeof t->line, t->from)) {
        snprintf(t->line, sizeof t->line, "error\tthe PyTorch peer process is gone");
        return -1;
    }
    t->line[strcspn(t->line, "\n")] = '\0';
    const size_t n = strlen(want);
    return strncmp(t->line, want, n) == 0 && (t->line[n] == '\t' || !t->line[n]) ? 0 : -1;
}

/* The tab-separated words after the reply's first, as numbers. */
static int numbers(const char *line, double *x, int n) {
    const char *p = strchr(line, '\t');
    int k = 0;
    for (; p && k < n; p = strchr(p + 1, '\t')) x[k++] = strtod(p + 1, NULL);
    return k;
}

int torch_peer_row(torch_peer *t, const row_spec *r, int threads, char form[][TORCH_FORM_LEN],
                   char *why, size_t cap) {
    static const char *const kinds[] = {"decode", "prefill", "laguna"};
    if (ask(t, "ready", "row\t%s\t%d\t%d\t%s\t%d\t%d\n", kinds[r->kind], r->batch, r->hkv,
            ag_dtype_name(r->kv), r->cold, threads) != 0) {
        const int gone = strncmp(t->line, "skip\t", 5) != 0;
        snprintf(why, cap, "%s", strchr(t->line, '\t') ? strchr(t->line, '\t') + 1 : t->line);
        return gone ? -1 : 0;
    }
    int n = 0;
    for (char *p = strchr(t->line, '\t'); p && n < TORCH_MAX_FORMS; n++) {
        char *e = strchr(p + 1, '\t');
        snprintf(form[n], TORCH_FORM_LEN, "%.*s", (int)(e ? e - p - 1 : (long)strlen(p + 1)), p + 1);
        p = e;
    }
    return n;
}

int torch_peer_round(torch_peer *t, int it, int lead, double *sec, int n) {
    for (int i = 0; i < n; i++) sec[i] = NAN;
    if (ask(t, "times", "round\t%d\t%d\n", it, lead != 0) != 0) return -1;
    return numbers(t->line, sec, n) == n ? 0 : -1;
}

int torch_peer_check(torch_peer *t, double *abs_err, double *rel_err, int n) {
    double x[2 * TORCH_MAX_FORMS];
    if (n > TORCH_MAX_FORMS || ask(t, "errors", "check\n") != 0 ||
        numbers(t->line, x, 2 * n) != 2 * n)
        return -1;
    for (int i = 0; i < n; i++) abs_err[i] = x[2 * i], rel_err[i] = x[2 * i + 1];
    return 0;
}

void torch_peer_done(torch_peer *t) { (void)ask(t, "ok", "done\n"); }
