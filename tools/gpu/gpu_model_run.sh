#!/usr/bin/env bash
# On a GPU machine, after tools/gpu/gpu_stage.sh staged .gpu/ (with
# GPU_STAGE_TARGETS=//tests/llama:cuda_model_test GPU_STAGE_BINS=//tools/atlas):
# every staged test and bench cuda, then the load benchmark on a >= 4 GiB
# checkpoint and a generation on it. Short tables last.
set -uo pipefail
# Every CUDA test must run for real here: a skip fails (tests/cuda/cuda_skip.h).
export ATLAS_REQUIRE_GPU=1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="${1:-$here/.gpu}"
logs="${OUT:-/tmp}"
big="${BIG_CHECKPOINT:-/tmp/atlas_big}"

bash "$stage/run_all.sh" >"$logs/run_all.log" 2>&1
run_all_rc=$?

python3 "$here/tools/gpu/gpu_big_checkpoint.py" "$big" >"$logs/big.log" 2>&1 || cat "$logs/big.log"
"$stage/bin/bench" load "$big" >"$logs/bench_load.log" 2>&1
load_rc=$?
start=$(date +%s.%N)
"$stage/bin/atlas" run --model "$big" --backend cuda --tokens 1,2,3 --steps 8 \
  >"$logs/atlas_run.log" 2>&1
run_rc=$?
run_s=$(awk "BEGIN {printf \"%.2f\", $(date +%s.%N) - $start}")

echo "== run_all (rc=$run_all_rc)"
sed -n '/^== tests/,$p' "$logs/run_all.log"
grep -hE "failed swaps on CUDA|soak:|create/destroy" "$logs"/*.log 2>/dev/null | sort -u
echo
cat "$logs/big.log"
echo "== bench load (rc=$load_rc)"
cat "$logs/bench_load.log"
echo "== atlas run on it (rc=$run_rc, ${run_s} s incl. load)"
cat "$logs/atlas_run.log"
