/*
 * isolate.h — one piece of engine work in a child process of its own, so
 * that nothing the engine does to a process (a fault on a guard page, an
 * abort, the hang watchdog's abort, a sanitizer's report and exit) ends
 * the caller's: `attnguard check` runs each case this way, the report
 * grid each (cell, engine, variant) run, and each goes on to the next.
 *
 * The child is a fork() of the caller without exec: it has the engines the
 * caller opened and every other piece of its state, and hands results back
 * in memory shared with the caller (isolate_shared).  Its stdout is the
 * caller's, line-buffered so that what a piece of work printed before it
 * died is not lost in a buffer; its stderr goes through a pipe that the
 * caller copies to its own stderr as it comes and keeps (the oracle line a
 * fault handler prints, a sanitizer's report), for the caller to name what
 * ended the child (harness/cli/repro_verdict.h reads it).  When the work
 * returns, the child runs LeakSanitizer's check and writes its coverage
 * profile (in the builds that have them) and ends with _exit: 0, or 23
 * for leaks.  Never exit(): the exit handlers (an engine's destructors)
 * belong to the parent's process and may wait on its threads.
 *
 * Threads: a fork copies only the calling thread.  A caller that has run
 * an OpenMP parallel region must not fork (GNU libgomp's children then
 * wait at their first parallel region for workers that are not there:
 * seen here, gcc 12); nor one with an engine's worker pool alive.  The
 * callers open engines (no engine here starts threads in open()) but run
 * every case, plan and kernel in the children only.
 *
 * Cost: a fork of a small process and a pipe, about a millisecond per
 * piece of work (docs/perf-notes.md, "check: a process per case").
 */
#ifndef AG_ISOLATE_H
#define AG_ISOLATE_H

#include <stddef.h>

/* How a child ended. */
typedef struct isolate_end {
    int returned;   /* the work returned (what it wrote in shared memory is whole) */
    int status;     /* the child's exit status, or 128 + the signal that ended it */
    int signal;     /* that signal, else 0 */
    char *log;      /* its stderr, NUL-terminated (the first ISOLATE_LOG_MAX bytes; NUL
                       bytes read as blanks); free with isolate_end_free.  Never NULL
                       after isolate_run returned 0. */
} isolate_end;

#define ISOLATE_LOG_MAX ((size_t)4 << 20)

/* Runs work(arg) in a child process and waits for it; echo = 1 copies the
 * child's stderr to this process's stderr as it comes.  Returns 0 with
 * *end filled (whatever became of the child), or -1 with a message when
 * no child could be started (err). */
int isolate_run(void (*work)(void *arg), void *arg, int echo, isolate_end *end, char *err,
                size_t errlen);
void isolate_end_free(isolate_end *end);

/* Zeroed memory of `bytes` shared with the children isolate_run starts
 * later (anonymous shared mapping); NULL when it cannot be mapped.  Free
 * with isolate_shared_free(p, bytes). */
void *isolate_shared(size_t bytes);
void isolate_shared_free(void *p, size_t bytes);

#endif /* AG_ISOLATE_H */
