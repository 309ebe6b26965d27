#!/usr/bin/env bash
# H200 load-speed measurement for issue 16 (pread instead of mmap, NaN/Inf +
# digest scan during the upload copy). Run here first:
#   GPU_STAGE_BINS="//tools/atlas //tools/checkpoint:make_checkpoint" tools/gpu/gpu_stage.sh
# then on the GPU machine (carry .gpu/):
#   bash tools/gpu/gpu_load_pread.sh [.gpu]
# It writes into $OUT (default /tmp): big.log, bench_load.log, sweep.log and
# summary.txt. Commit summary.txt and bench_load.log to
# tools/gpu/gpu_results/issue16/ and quote the figures in docs/PERFORMANCE.md.
#
# bench load prints, in one run on the same page-cached 4.78 GB checkpoint:
#   - "mmap + memcpy, no scan (before)"  the load path before this change
#   - "pread, no scan"                   the switch to pread alone
#   - "pread + NaN/Inf + digest scan (now)" the default path now
#   - "scan cost ... % of load time"     must be <= 5 %
#   - the threads x chunk sweep with fresh and kept staging (default path)
#   - the swap time with a kept uploader (the >= 45 GB/s goal)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="${1:-$here/.gpu}"
logs="${OUT:-/tmp}"
big="${BIG_CHECKPOINT:-/tmp/atlas_big}"
mkdir -p "$logs"
python3 "$here/tools/gpu/gpu_big_checkpoint.py" "$big" >"$logs/big.log" 2>&1 ||
  cat "$logs/big.log"
"$stage/bin/bench" load "$big" >"$logs/bench_load.log" 2>&1
rc=$?
# The fault sweep on CUDA, short form (the full form: drop --short).
sweep_rc=-1
if [ -x "$stage/bin/atlas" ] && [ -x "$stage/bin/make_checkpoint" ]; then
  bash "$here/tools/fuzz/fault_sweep.sh" --short --backend cuda "$stage/bin/atlas" \
    "$stage/bin/make_checkpoint" >"$logs/sweep.log" 2>&1
  sweep_rc=$?
fi
{
  echo "bench load rc=$rc, fault sweep (cuda, short) rc=$sweep_rc"
  grep -E "before|pread|scan cost|best staged|swap \(kept" "$logs/bench_load.log"
  tail -n 8 "$logs/sweep.log" 2>/dev/null
} >"$logs/summary.txt"
cat "$logs/summary.txt"
exit $rc
