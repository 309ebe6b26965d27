#!/usr/bin/env bash
# Many sequences on the GPU: the batch step's CUDA tests, then bench_batch
# on the random 1B and 8B shapes (tools/gpu/gpu_speed.py's, written by
# tools/gpu/gpu_profile_decode.py's checkpoint()).
#
# Here (Bazel, nvcc):
#   ATLAS_CUDA_ARCHS=90 tools/bazel build -c opt //tests/cuda:batch_cuda_test \
#     //tests/cuda:llama_cuda_test //tools/bench:bench_batch
#   tools/gpu/gpu_batch_run.sh --stage          # copies them into .gpu_batch/
# On the GPU machine (the folder carried):
#   bash tools/gpu/gpu_batch_run.sh [--shapes 1b,8b] [--seqs 1,8,32,64,128,256]
#        [--steps 32]
# Logs and RESULT lines go to $OUT (else /tmp/gpu_batch).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/.gpu_batch"
if [ "${1:-}" = "--stage" ]; then
  bin="$(cd "$root" && tools/bazel info -c opt bazel-bin 2>/dev/null)"
  rm -rf "$dir" && mkdir -p "$dir"
  for t in tests/cuda/batch_cuda_test tests/cuda/llama_cuda_test \
    tools/bench/bench_batch; do
    install -m 0755 "$bin/$t" "$dir/" || exit 1
  done
  git -C "$root" rev-parse --short HEAD >"$dir/COMMIT"
  echo "staged in $dir: $(ls "$dir" | tr '\n' ' ')"
  exit 0
fi
shapes=1b,8b seqs=1,8,32,64,128,256 steps=32
while [ $# -gt 0 ]; do
  case "$1" in
    --shapes) shapes="$2"; shift 2 ;;
    --seqs) seqs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    *) echo "gpu_batch_run: unknown argument $1" >&2; exit 2 ;;
  esac
done
out="${OUT:-/tmp/gpu_batch}"
mkdir -p "$out"
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
echo "commit $(cat "$dir/COMMIT" 2>/dev/null)" | tee -a "$out/gpu.txt"
export ATLAS_REQUIRE_GPU=1
for t in batch_cuda_test llama_cuda_test; do
  if timeout 240 "$dir/$t" >"$out/$t.log" 2>&1; then
    echo "$t: passed ($(grep -c '^\[       OK' "$out/$t.log") cases)"
  else
    echo "$t: FAILED"; grep -E 'Failure|FAILED|error' "$out/$t.log" | head -20
    status=1
  fi
done
IFS=, read -r -a shape_list <<<"$shapes"
for s in "${shape_list[@]}"; do
  ck="$(cd "$root/tools/gpu" && python3 -c "import gpu_profile_decode as g; print(g.checkpoint('$s'))" 2>"$out/ck_$s.err")" ||
    { echo "could not write the $s checkpoint"; tail -5 "$out/ck_$s.err"; status=1; continue; }
  echo "== $s ($ck)"
  timeout 300 "$dir/bench_batch" "$ck" --seqs "$seqs" --steps "$steps" \
    >"$out/bench_$s.log" 2>&1 || status=1
  cat "$out/bench_$s.log"
done
exit $status
