/*
 * bench/util_host.c — see util_host.h.
 */
#include "util_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* 2 MiB aligned and advised as transparent huge pages, as serving engines
 * allocate KV caches: on 4 KiB pages every cache block of a head is a new
 * page and a TLB miss on the decode path, and a prefill item reading its
 * rows of q (512 bytes each, 16 KiB apart at 32 heads) touches one page
 * per row (measured costs: docs/perf-notes.md, "Huge pages"). */
void *bench_big_alloc(size_t bytes, size_t align) {
    (void)align;   /* every alignment session.h asks for divides 2 MiB */
    const size_t huge = (size_t)2 << 20;
    const size_t n = (bytes + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, n ? n : huge);
    if (p) (void)madvise(p, n ? n : huge, MADV_HUGEPAGE);
    return p;
}

void bench_big_free(void *p, size_t bytes) {
    (void)bytes;
    free(p);
}

void bench_thp_status(char *mode, size_t cap, long *anon_huge_mib) {
    snprintf(mode, cap, "?");
    *anon_huge_mib = -1;
    char line[256];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (fgets(line, sizeof line, f)) {
            const char *a = strchr(line, '['), *z = a ? strchr(a, ']') : NULL;
            if (a && z && (size_t)(z - a) < cap) snprintf(mode, cap, "%.*s", (int)(z - a - 1), a + 1);
        }
        fclose(f);
    }
    f = fopen("/proc/self/smaps_rollup", "r");
    if (f) {
        long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) *anon_huge_mib = kb / 1024;
        fclose(f);
    }
}

void bench_cpu_desc(char *out, size_t cap) {
    char model[128] = "unknown CPU", line[4096];
    int family = -1, cpus = 0;
    static const struct { const char *flag, *name; } ext[] = {
        {"avx512f", "F"}, {"avx512bw", "BW"}, {"avx512vl", "VL"}, {"avx512_bf16", "BF16"},
        {"avx512_vnni", "VNNI"}, {"avx512_fp16", "FP16"}};
    int has[sizeof ext / sizeof *ext] = {0}, avx2 = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *v = strchr(line, ':');
        if (!v) continue;
        v += 1 + (v[1] == ' ');
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "processor", 9)) cpus++;
        else if (!strncmp(line, "model name", 10) && cpus == 1) snprintf(model, sizeof model, "%s", v);
        else if (!strncmp(line, "cpu family", 10) && cpus == 1) family = atoi(v);
        else if (!strncmp(line, "flags", 5) && cpus == 1) {
            for (char *w = strtok(v, " "); w; w = strtok(NULL, " ")) {
                avx2 |= !strcmp(w, "avx2");
                for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) has[i] |= !strcmp(w, ext[i].flag);
            }
        }
    }
    if (f) fclose(f);
    size_t n = (size_t)snprintf(out, cap, "%s, family %d, %d CPUs, ", model, family, cpus);
    if (n >= cap) return;
    if (!has[0]) {
        snprintf(out + n, cap - n, "%s, no AVX-512", avx2 ? "AVX2" : "no AVX2");
        return;
    }
    n += (size_t)snprintf(out + n, cap - n, "AVX-512");
    for (size_t i = 0; i < sizeof ext / sizeof *ext && n < cap; i++)
        if (has[i]) n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "/" : " ", ext[i].name);
}
