// What the benchmarks share: a monotonic clock and the median of a sample.
#ifndef ATLAS_TOOLS_BENCH_BENCH_STATS_H_
#define ATLAS_TOOLS_BENCH_BENCH_STATS_H_

#include <stddef.h>

// Milliseconds on CLOCK_MONOTONIC.
double atlas_bench_now_ms(void);

// The median of v[0..n) (n > 0); sorts v in place.
double atlas_bench_median(double *v, size_t n);

#endif  // ATLAS_TOOLS_BENCH_BENCH_STATS_H_
