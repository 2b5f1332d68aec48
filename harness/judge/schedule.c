/*
 * schedule.c — see schedule.h.
 */
#include "schedule.h"

#include "../case/rng.h"

#include <pthread.h>
#include <unistd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ perturb */

void sched_perturb_hook(void *ctx, int32_t site) {
    sched_perturb *p = ctx;
    uint64_t s = p->seed ^ __atomic_fetch_add(&p->counter, 1, __ATOMIC_RELAXED) ^
                 ((uint64_t)(uint32_t)site << 40);
    const uint64_t r = rng_next(&s);
    if (r % 4 == 0) {
        sched_yield();
    } else if (r % 16 == 1) {
        struct timespec ts = {0, (long)(20000 + (r >> 8) % 180000)};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------ watchdog */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static int g_started, g_armed;
static struct timespec g_deadline;
static char g_what[256];
static double g_seconds;

static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        if (!g_armed) {
            pthread_cond_wait(&g_cv, &g_mu);
            continue;
        }
        const int rc = pthread_cond_timedwait(&g_cv, &g_mu, &g_deadline);
        if (rc != 0 && g_armed) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > g_deadline.tv_sec ||
                (now.tv_sec == g_deadline.tv_sec && now.tv_nsec >= g_deadline.tv_nsec)) {
                fprintf(stderr, "attnguard: ORACLE hang: %s did not finish within %.1f s (the "
                        "bound for its size)\n", g_what, g_seconds);
                fflush(stderr);
                abort();
            }
        }
    }
    return NULL;
}

void sched_watch_arm(double seconds, const char *what) {
    pthread_mutex_lock(&g_mu);
    if (!g_started) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g_cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_t t;
        if (pthread_create(&t, NULL, watch, NULL) == 0) {
            pthread_detach(t);
            g_started = 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &g_deadline);
    const long ns = (long)((seconds - (double)(long)seconds) * 1e9);
    g_deadline.tv_sec += (time_t)seconds + (g_deadline.tv_nsec + ns) / 1000000000L;
    g_deadline.tv_nsec = (g_deadline.tv_nsec + ns) % 1000000000L;
    snprintf(g_what, sizeof g_what, "%s", what ? what : "a run");
    g_seconds = seconds;
    g_armed = 1;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

void sched_watch_disarm(void) {
    pthread_mutex_lock(&g_mu);
    g_armed = 0;
    pthread_mutex_unlock(&g_mu);
}

double sched_bound_declared(double macs, int32_t threads, int spin) {
    double s = 2.0 + (macs > 0 ? macs : 0) * 5e-9;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (spin && cores > 0 && threads > cores) s *= (double)threads / (double)cores;
    return s;
}

double sched_bound_seconds(uint64_t macs, int32_t threads) {
    /* 2 s, and 1 us per multiply-add beyond (a sanitized portable table
     * on a loaded core runs some hundred times faster than that), at most
     * 20 s; times the threads per online core when there are more threads
     * than cores (engines that spin at their barriers, as ggml's pool
     * does, wait for every thread to be scheduled at each one) */
    double s = 2.0 + (double)macs * 1e-6;
    if (s > 20.0) s = 20.0;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && threads > cores) s *= (double)threads / (double)cores;
    return s;
}
