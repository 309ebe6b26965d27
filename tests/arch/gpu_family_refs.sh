#!/usr/bin/env bash
# The descriptor families' reference cases, made on the GPU machine (the only
# place with torch and transformers) and checked there at once: from the
# repository root, with parity_test built here (tools/bazel build
# //tests/arch:parity_test) and staged as STAGE/parity_test.xz (xz keeps it
# under the carried tree's limit):
#   1. gen_reference.py writes the gemma2_*, gemma3_text_* and phi3_* small
#      cases and the three long ones (CPU, float64), in parallel;
#   2. parity_test runs the committed cases on CUDA (a regression check),
#      then the new ones on host and CUDA.
# $OUT gets src.tgz (transformers' modeling and rope code, to read against),
# refs.tgz (the cases and the generator's logs: untar into tests/arch/data
# and data_long, then add the three rows to runtime/arch/registry.c) and the
# parity logs.
set -uo pipefail
stage="${STAGE:-.gpu_families}"
T=/tmp/family_refs
mkdir -p "$T/logs"
xz -dc "$stage/parity_test.xz" >/tmp/pt && chmod +x /tmp/pt
S=$(python3 -c 'import transformers,os;print(os.path.dirname(transformers.__file__))')
(cd "$S" && tar czf "$OUT/src.tgz" modeling_rope_utils.py masking_utils.py \
  configuration_utils.py activations.py models/gemma2 models/gemma3 models/phi3 2>/dev/null)
python3 -c 'import transformers,torch;print(transformers.__version__, torch.__version__)' >"$OUT/env.log" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$OUT/env.log" 2>&1
g() {
  timeout 130 python3 tests/arch/gen_reference.py --set "$1" --out "$T/$1_$2" \
    --only "$3" >"$T/logs/gen_$2.log" 2>&1
}
g small g2 gemma2_f32,gemma2_bf16,gemma2_published_caps_f32 &
g small g3 gemma3_text_f32,gemma3_text_bf16,gemma3_text_saved_f32 &
g small p3 phi3_f32,phi3_bf16,phi3_long_prompt_f32,phi3_window_full_rot_f32 &
for c in long_gemma2_f32 long_gemma3_text_bf16 long_phi3_f32; do g long "$c" "$c" & done
ATLAS_ARCH_REF_DIR=tests/arch/data ATLAS_ARCH_BACKENDS=cuda timeout 60 /tmp/pt \
  >"$OUT/parity_old_cuda.log" 2>&1
wait
mkdir -p "$T/small" "$T/long"
mv "$T"/small_*/* "$T/small/" 2>/dev/null
mv "$T"/long_*/* "$T/long/" 2>/dev/null
tar czf "$OUT/refs.tgz" -C "$T" small long logs
for d in small long; do
  ATLAS_ARCH_REF_DIR="$T/$d" ATLAS_ARCH_BACKENDS=host,cuda timeout 60 /tmp/pt \
    >"$OUT/parity_$d.log" 2>&1
done
ls -la "$OUT"
tail -n 2 "$T"/logs/*.log
