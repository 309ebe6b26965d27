#!/usr/bin/env bash
# The speed work's GPU run: the CUDA tests it touches, then tools/gpu/gpu_speed.py
# (Atlas vs transformers, side by side). Stage first, here:
#   GPU_STAGE_TARGETS="//tests/cuda:prefill_kernels_cuda_test //tests/llama:cuda_model_test" \
#     GPU_STAGE_BINS=//tools/atlas BAZEL=tools/bazel tools/gpu/gpu_stage.sh DIR
#   cp tools/gpu/gpu_speed.py tools/gpu/gpu_speed.sh DIR/
# then on the GPU machine: bash DIR/gpu_speed.sh [1b] [8b]. Logs go to $OUT.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
logs="${OUT:-/tmp}"
summary=""
for t in fatbin_embed_test prefill_kernels_cuda_test llama_kernels_cuda_test \
         llama_cuda_test cuda_model_test; do
  [ -x "$here/tests/$t" ] || { summary+="$t: not staged"$'\n'; continue; }
  start=$(date +%s)
  "$here/tests/$t" >"$logs/$t.log" 2>&1
  rc=$?
  pass=$(grep -c '^\[       OK \]' "$logs/$t.log")
  fail=$(grep -c '^\[  FAILED  \].*(' "$logs/$t.log")
  skip=$(grep -c '^\[  SKIPPED \]' "$logs/$t.log")
  summary+="$t: rc=$rc passed=$pass failed=$fail skipped=$skip $(( $(date +%s) - start ))s"$'\n'
  [ $rc -ne 0 ] && grep -B5 -A20 "Failure\|FAILED" "$logs/$t.log" | head -60
done
grep -h "relative L2 error" "$logs/prefill_kernels_cuda_test.log" 2>/dev/null
PYTHONUNBUFFERED=1 python3 "$here/gpu_speed.py" "$here/bin/bench" "$here/bin/atlas" "$@" \
  2>&1 | tee "$logs/gpu_speed.log" | grep -v "^RESULT" | tail -n 200 >"$logs/gpu_speed_tail.log"
echo "== tests"
printf "%s" "$summary"
sed -n '/^== /,$p' "$logs/gpu_speed.log"
