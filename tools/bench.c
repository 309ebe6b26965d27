// Benchmarks, one subcommand each: `bench cuda`, `bench ledger`,
// `bench load FILE|DIR`, `bench prefill DIR`, `bench decode DIR`.
#include <stdio.h>
#include <string.h>

#include "atlas/tools/bench_cuda.h"
#include "atlas/tools/bench_ledger.h"
#include "atlas/tools/bench_llama.h"
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
  if (argc >= 2 && strcmp(argv[1], "prefill") == 0) {
    return atlas_bench_prefill(argc - 2, argv + 2);
  }
  if (argc >= 2 && strcmp(argv[1], "decode") == 0) {
    return atlas_bench_decode(argc - 2, argv + 2);
  }
  fprintf(stderr, "usage: bench cuda|ledger|load|prefill|decode [options]\n");
  return 2;
}
