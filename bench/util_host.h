/*
 * bench/util_host.h — what every part of the benchmark shares: clocks (wall,
 * process CPU), the median, and the huge-page allocator every large buffer
 * comes from (KV caches, query, output, scratch, the bandwidth buffer), with
 * the kernel's report of whether huge pages were granted.
 */
#ifndef AG_BENCH_UTIL_HOST_H
#define AG_BENCH_UTIL_HOST_H

#include <stddef.h>

double bench_now(void);       /* monotonic wall seconds */
double bench_cpu_now(void);   /* this process's CPU seconds (every thread) */

/* Median of v[0..n) (n >= 1); sorts v. */
double bench_median(double *v, int n);

/* bytes rounded up to 2 MiB, 2 MiB aligned, advised MADV_HUGEPAGE; NULL
 * when out of memory.  Free with bench_big_free (or free()).  The signature
 * is session.h's allocator's (align <= 2 MiB is always met). */
void *bench_big_alloc(size_t bytes, size_t align);
void bench_big_free(void *p, size_t bytes);

/* The kernel's transparent-huge-page mode (the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled, "?" if unreadable) and this
 * process's anonymous huge pages in MiB (/proc/self/smaps_rollup, -1 if
 * unreadable).  With THP "never" madvise is ignored and every buffer
 * silently stays on 4 KiB pages, so the reports say which it was. */
void bench_thp_status(char *mode, size_t cap, long *anon_huge_mib);

/* The CPU this ran on, for the reports ("AMD EPYC, family 26, 2 CPUs,
 * AVX-512 F/BW/VL/BF16/VNNI"): /proc/cpuinfo's model name, family and
 * AVX-512 flags, so every figure is read beside the machine it came
 * from (the project's VMs come from a mixed pool). */
void bench_cpu_desc(char *out, size_t cap);

#endif /* AG_BENCH_UTIL_HOST_H */
