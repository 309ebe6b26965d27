#ifndef ATLAS_TOOLS_BENCH_LEDGER_H_
#define ATLAS_TOOLS_BENCH_LEDGER_H_

// `bench ledger`: alloc+free through the ledgered host backend against plain
// malloc+free at 1k and 100k live allocations, and alloc_report over 100k.
int atlas_bench_ledger(int argc, char **argv);

#endif  // ATLAS_TOOLS_BENCH_LEDGER_H_
