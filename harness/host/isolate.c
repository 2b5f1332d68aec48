/*
 * isolate.c — see isolate.h.
 */
#include "isolate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

void *isolate_shared(size_t bytes) {
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void isolate_shared_free(void *p, size_t bytes) {
    if (p) munmap(p, bytes ? bytes : 1);
}

void isolate_end_free(isolate_end *end) {
    if (!end) return;
    free(end->log);
    end->log = NULL;
}

/* What a sanitized or coverage build does at exit, called by name: the
 * child leaves with _exit (see child()).  Weak: NULL in a build without. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
extern int __llvm_profile_write_file(void) __attribute__((weak));

/* LeakSanitizer's exit status for leaks (its exitcode flag's default). */
#define ISOLATE_LEAK_STATUS 23

/* The child: stderr into the pipe, stdout line-buffered, the work, then
 * _exit.  Not exit(): the exit handlers are the parent's process's, and an
 * engine's own (ONNX Runtime's static destructors) wait on condition
 * variables whose waiters are threads of the parent: the child hung there
 * for good.  What the harness wants from a process's end is done here by
 * name instead: LeakSanitizer's check, the coverage profile. */
static void child(int wfd, volatile int *returned, void (*work)(void *), void *arg) {
    if (dup2(wfd, 2) < 0) _exit(125);
    close(wfd);
    setvbuf(stdout, NULL, _IOLBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    work(arg);
    fflush(stdout);
    *returned = 1;
    int status = 0;
    if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check())
        status = ISOLATE_LEAK_STATUS;
    if (__llvm_profile_write_file) __llvm_profile_write_file();
    fflush(stdout);
    fflush(stderr);
    _exit(status);
}

/* Appends [p, p + n) to the log (up to ISOLATE_LOG_MAX bytes). */
static void keep(isolate_end *end, size_t *len, const char *p, size_t n) {
    if (!end->log || *len >= ISOLATE_LOG_MAX) return;
    if (n > ISOLATE_LOG_MAX - *len) n = ISOLATE_LOG_MAX - *len;
    for (size_t i = 0; i < n; i++) end->log[*len + i] = p[i] ? p[i] : ' ';
    *len += n;
    end->log[*len] = '\0';
}

int isolate_run(void (*work)(void *arg), void *arg, int echo, isolate_end *end, char *err,
                size_t errlen) {
    memset(end, 0, sizeof *end);
    end->log = malloc(ISOLATE_LOG_MAX + 1);
    volatile int *returned = isolate_shared(sizeof *returned);
    int fds[2] = {-1, -1};
    if (!end->log || !returned || pipe(fds) != 0) {
        snprintf(err, errlen, "cannot start a child process: %s",
                 !end->log || !returned ? "out of memory" : strerror(errno));
        isolate_shared_free((void *)returned, sizeof *returned);
        isolate_end_free(end);
        return -1;
    }
    end->log[0] = '\0';
    /* what this process has buffered must not be written twice */
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start a child process: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        isolate_shared_free((void *)returned, sizeof *returned);
        isolate_end_free(end);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], returned, work, arg);
    }
    close(fds[1]);
    /* Read to the end: the pipe closes when the child (and every thread of
     * it) is gone.  The child never waits on us, so no deadlock. */
    size_t len = 0;
    char buf[4096];
    for (;;) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (echo) {
            for (ssize_t off = 0; off < n;) {
                const ssize_t w = write(2, buf + off, (size_t)(n - off));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) break;
                off += w;
            }
        }
        keep(end, &len, buf, (size_t)n);
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            isolate_shared_free((void *)returned, sizeof *returned);
            isolate_end_free(end);
            return -1;
        }
    }
    end->returned = *returned;
    if (WIFEXITED(st)) {
        end->status = WEXITSTATUS(st);
    } else if (WIFSIGNALED(st)) {
        end->signal = WTERMSIG(st);
        end->status = 128 + end->signal;
    }
    isolate_shared_free((void *)returned, sizeof *returned);
    return 0;
}
