#!/usr/bin/env bash
# The embedding example, as CI runs it: its test (model A, generate, swap to
# B, generate, report, close with 0 leaked bytes), then proof that Atlas's
# internals are out of reach: depending on @atlas//runtime/device:backend must fail
# with "is not visible".
set -uo pipefail
cd "$(dirname "$0")"
bazel=../../tools/bazel
# SASS for one architecture: the root workspace's build already compiles
# (and tests) every one; this build proves the kernels compile from an
# external repository and keeps CI's second nvcc pass at ~2 minutes, not 12.
export ATLAS_CUDA_ARCHS="${ATLAS_CUDA_ARCHS:-90}"
"$bazel" test //:embed || { echo "embed: FAILED"; exit 1; }
out=$("$bazel" build //visibility:reaches_into_atlas 2>&1)
if [ $? -eq 0 ]; then
  echo "embed: FAILED: //visibility:reaches_into_atlas built; Atlas's backend is visible"
  exit 1
fi
if ! grep -q "is not visible" <<<"$out"; then
  echo "$out" | tail -20
  echo "embed: FAILED: the build failed, but not for visibility"
  exit 1
fi
echo "embed: PASSED (the test; @atlas//runtime/device:backend is not visible)"
