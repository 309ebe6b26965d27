#!/usr/bin/env bash
# The H200 run for the architecture proof (no Bazel there): from a folder
# holding gen_reference.py, parity_test and atlas (built here with Bazel and
# copied, see tests/arch/README.md):
#   1. transformers writes the small and long reference cases (CPU, float64)
#      while random bf16 checkpoints of the published shapes are built on
#      the GPU;
#   2. parity_test runs every case on the host and CUDA backends;
#   3. `atlas run` decodes on each published-shape checkpoint (timed).
# Logs and a tarball of the cases land in $OUT.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp/arch_out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
refs=/tmp/arch_refs
smoke=/dev/shm/arch_smoke
rm -rf "$refs" "$smoke"
mkdir -p "$refs" "$smoke"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/env.log" 2>&1
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' >>"$out/env.log" 2>&1

# GPU and disk: the published-shape checkpoints, beside the CPU work below.
timeout "${SMOKE_BUILD_S:-150}" python3 "$here/gen_reference.py" --set smoke --out "$smoke" \
  ${SMOKE_ONLY:+--only "$SMOKE_ONLY"} >"$out/smoke_build.log" 2>&1 &
smoke_pid=$!

for set in small long; do
  timeout "${REFS_S:-100}" python3 "$here/gen_reference.py" --set "$set" \
    --out "$refs/$set" >"$out/gen_$set.log" 2>&1
  echo "== $set" >>"$out/parity.log"
  ATLAS_ARCH_REF_DIR="$refs/$set" ATLAS_ARCH_BACKENDS=host,cuda \
    timeout 60 "$here/parity_test" >>"$out/parity.log" 2>&1
done
wait "$smoke_pid"

for d in "$smoke"/*/; do
  name=$(basename "$d")
  [ -f "$d/config.json" ] || continue
  echo "== $name ($(du -sh "$d" | cut -f1))"
  start=$(date +%s.%N)
  timeout 60 "$here/atlas" run --model "$d" --backend cuda --tokens 1,2,3,4,5,6,7,8 \
    --steps 128 --ignore-eos --logits /tmp/smoke_logits.bin 2>&1 | tail -c 300
  rc=${PIPESTATUS[0]}
  end=$(date +%s.%N)
  echo "rc $rc wall $(python3 -c "print(round($end - $start, 2))") s logits $(stat -c %s /tmp/smoke_logits.bin 2>/dev/null) bytes"
  timeout 30 "$here/atlas" run --model "$d" --backend cuda --tokens 1,2,3,4,5,6,7,8 --steps 8 2>&1 | tail -c 200
  echo "(8 steps, stopping at EOS: wall $(python3 -c "import time; print(round(time.time() - $end, 2))") s)"
done >"$out/smoke_run.log" 2>&1

tar czf "$out/refs.tgz" -C "$refs" small long 2>/dev/null
ls -la "$out"
