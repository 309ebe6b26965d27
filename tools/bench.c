// Benchmarks, one subcommand each: `bench cuda`, `bench ledger`,
// `bench load FILE|DIR`.
#include <stdio.h>
#include <string.h>

#include "atlas/tools/bench_cuda.h"
#include "atlas/tools/bench_ledger.h"
#include "atlas/tools/bench_load.h"

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "cuda") == 0) {
    return atlas_bench_cuda(argc - 2, argv + 2);
  }
  if (argc >= 2 && strcmp(argv[1], "ledger") == 0) {
    return atlas_bench_ledger(argc - 2, argv + 2);
  }
  if (argc >= 2 && strcmp(argv[1], "load") == 0) {
    return atlas_bench_load(argc - 2, argv + 2);
  }
  fprintf(stderr, "usage: bench cuda|ledger|load [options]\n");
  return 2;
}
