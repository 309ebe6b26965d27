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
mkdir -p "$tmp/runtime/formats" "$tmp/runtime/arch/decoder" "$tmp/kernels" "$tmp/runtime/cuda" \
  "$tmp/runtime/base" "$tmp/runtime/device"
printf '#include "atlas/runtime/arch/decoder/decoder.h"\n' > "$tmp/runtime/formats/up.c"
printf '#include "atlas/runtime/cuda/cuda_backend.h"\n' > "$tmp/kernels/sideways.c"
printf '#include "runtime/status.h"\n' > "$tmp/runtime/cuda/unprefixed.c"
# Within the core: base looks up at device; the device's backend reaches
# for teardown (a forbidden pair, though device sits above base); a file
# sits in runtime/ itself, outside every level.
printf '#include "atlas/runtime/device/backend.h"\n' > "$tmp/runtime/base/ledger.c"
printf '#include "atlas/runtime/base/teardown.h"\n' > "$tmp/runtime/device/backend.c"
: > "$tmp/runtime/loose.c"
# Within the device level: the op cache calls up into the front door (the
# circle backend -> lifecycle -> op cache -> backend); two concepts of one
# level include each other; a file no level lists.
printf '#include "atlas/runtime/device/backend.h"\n' > "$tmp/runtime/device/op_cache.c"
printf '#include "atlas/runtime/device/backend_modules.h"\n' > "$tmp/runtime/device/backend_memory.c"
: > "$tmp/runtime/device/backend.h"
: > "$tmp/runtime/device/backend_modules.h"
: > "$tmp/runtime/device/unlisted.c"
: > "$tmp/runtime/arch/decoder/decoder.h"
if out=$(python3 "$checker" "$tmp"); then
  echo "FAIL: planted upward includes passed:"; echo "$out"; exit 1
fi
for want in "runtime/formats/up.c (formats, layer 4) includes runtime/arch/decoder/decoder.h" \
            "kernels/sideways.c (kernels, layer 2) includes runtime/cuda/cuda_backend.h" \
            "runtime/cuda/unprefixed.c: includes runtime/status.h without the atlas/ prefix" \
            "runtime/base/ledger.c (base, layer 0) includes runtime/device/backend.h" \
            "runtime/device/backend.c includes runtime/base/teardown.h: runtime/device/backend and runtime/base/teardown never depend on each other" \
            "runtime/loose.c: its folder has no layer" \
            "runtime/device/op_cache.c (op_cache, core level 6) includes runtime/device/backend.h (backend, core level 8)" \
            "runtime/device/backend_memory.c (backend_memory, core level 5) includes runtime/device/backend_modules.h (backend_modules, core level 5)" \
            "runtime/device/unlisted.c: unlisted has no level in the core"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing: $want"; echo "$out"; exit 1; }
done
echo "layering: planted violations caught"
