#ifndef ATLAS_TOOLS_BENCH_LEDGER_H_
#define ATLAS_TOOLS_BENCH_LEDGER_H_

#include <stddef.h>

// `bench ledger`: alloc+free through the ledgered host backend against plain
// malloc+free at 1k and 100k live allocations, and alloc_report over 100k.
typedef struct atlas_bench_ledger_options {
  size_t iters;  // alloc+free pairs per timed round
  int rounds;    // timed rounds (1..15); the median is printed
} atlas_bench_ledger_options;

int atlas_bench_ledger(const atlas_bench_ledger_options *options);

#endif  // ATLAS_TOOLS_BENCH_LEDGER_H_
