#!/usr/bin/env bash
# The tree's includes look down the layers, and the checker catches one that
# looks up (a planted upward include in a scratch copy must fail it).
set -euo pipefail
checker="tests/layering/check_layers.py"
# README.md is a runfile linked to the source tree: its target names the root.
root="$(dirname "$(readlink -f README.md)")"
python3 "$checker" "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runtime/formats" "$tmp/runtime/arch/llama" "$tmp/kernels" "$tmp/runtime/cuda"
printf '#include "atlas/runtime/arch/llama/llama.h"\n' > "$tmp/runtime/formats/up.c"
printf '#include "atlas/runtime/cuda/cuda_backend.h"\n' > "$tmp/kernels/sideways.c"
printf '#include "runtime/status.h"\n' > "$tmp/runtime/cuda/unprefixed.c"
: > "$tmp/runtime/arch/llama/llama.h"
if out=$(python3 "$checker" "$tmp"); then
  echo "FAIL: planted upward includes passed:"; echo "$out"; exit 1
fi
for want in "runtime/formats/up.c (formats, layer 3) includes runtime/arch/llama/llama.h" \
            "kernels/sideways.c (kernels, layer 1) includes runtime/cuda/cuda_backend.h" \
            "runtime/cuda/unprefixed.c: includes runtime/status.h without the atlas/ prefix"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing: $want"; echo "$out"; exit 1; }
done
echo "layering: planted violations caught"
