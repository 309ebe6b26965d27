#!/usr/bin/env bash
# The mixture-of-experts families' reference cases (qwen3_moe, mixtral,
# qwen2_moe; f32 and bf16), made on the GPU machine (the only place with
# torch and transformers) and checked there at once. From the repository
# root, with moe_reference_test built here statically (tools/bazel build -c
# opt //tests/arch:moe_reference_test; ATLAS_CUDA_ARCHS=90 keeps the fatbins
# small) and staged as STAGE/moe_reference_test.xz (xz -c):
#   1. gen_reference.py writes the eight small cases (CPU, float64), a
#      family per process; each ref.json records the routing the case covers
#      (an expert no token picks, two experts tied at every token) and
#      whether save_pretrained wrote fused 3-D experts (split into the Hub's
#      one tensor per expert before transformers reloads them, except in the
#      *_saved_f32 cases, which keep what transformers wrote);
#   2. moe_reference_test runs the committed plain-Python cases
#      (tests/arch/data_moe) on CUDA, then transformers' cases on host and
#      CUDA: every row within 1e-5 relative L2 with an f32 KV cache, ids
#      equal in both modes. It loads each family's descriptor directly, so
#      the registry rows are not needed for this run.
# $OUT gets src.tgz (transformers' modeling of the three families, to read
# against), refs.tgz (the cases and the generator's logs: untar into
# tests/arch/data, then add the rows to runtime/arch/registry.c, see
# docs/ARCHITECTURE.md) and the logs.
set -uo pipefail
stage="${STAGE:-.gpu_moe}"
T=/tmp/moe_refs
mkdir -p "$T/logs"
xz -dc "$stage/moe_reference_test.xz" >/tmp/moe_ref_test && chmod +x /tmp/moe_ref_test
S=$(python3 -c 'import transformers,os;print(os.path.dirname(transformers.__file__))')
(cd "$S" && tar czf "$OUT/src.tgz" conversion_mapping.py core_model_loading.py \
  models/qwen3_moe models/mixtral models/qwen2_moe 2>/dev/null)
python3 -c 'import transformers,torch;print(transformers.__version__, torch.__version__)' >"$OUT/env.log" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$OUT/env.log" 2>&1
g() {
  timeout 240 python3 tests/arch/gen_reference.py --set small --out "$T/small_$1" \
    --only "$1_f32,$1_bf16,$1_saved_f32" >"$T/logs/gen_$1.log" 2>&1
}
g qwen3_moe &
g mixtral &
g qwen2_moe &
ATLAS_ARCH_BACKENDS=cuda timeout 120 /tmp/moe_ref_test \
  >"$OUT/moe_python_cuda.log" 2>&1
wait
mkdir -p "$T/small"
mv "$T"/small_*/*_f32 "$T"/small_*/*_bf16 "$T/small/" 2>/dev/null
tar czf "$OUT/refs.tgz" -C "$T" small logs
ATLAS_MOE_REF_DIR="$T/small" ATLAS_ARCH_BACKENDS=host,cuda timeout 240 /tmp/moe_ref_test \
  >"$OUT/moe_transformers.log" 2>&1
ls -la "$OUT"
tail -n 3 "$T"/logs/*.log
grep -E "worst row|FAILED|PASSED" "$OUT"/moe_*.log | tail -n 40
