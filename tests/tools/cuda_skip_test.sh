#!/usr/bin/env bash
# ATLAS_REQUIRE_GPU turns a CUDA skip into a failure (tests/cuda/cuda_skip.h),
# and tools/gpu/cuda_skip_summary.sh counts skips by reason.
#   cuda_skip_test.sh PROBE SUMMARY
set -uo pipefail
probe="$1"
summary="$2"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/cuda_skip.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

# Outputs stay in files: this test's own log must not look like a CUDA skip.
env -u ATLAS_REQUIRE_GPU "$probe" >"$tmp/skip.log" 2>&1; rc=$?
check "unset: exits 0" [ "$rc" -eq 0 ]
check "unset: the case skips" grep -q '^\[  SKIPPED \] CudaSkipProbe.CannotRunHere' "$tmp/skip.log"
check "unset: the reason is logged for the summary" grep -qx 'CUDA skip: CUDA unavailable: probe reason 42' "$tmp/skip.log"
check "unset: the skip returns from the test" bash -c "! grep -q 'the skip must return' '$tmp/skip.log'"
check "unset: other cases run" grep -q '^\[       OK \] CudaSkipProbe.OtherCasesStillRun' "$tmp/skip.log"
ATLAS_REQUIRE_GPU=0 "$probe" >"$tmp/zero.log" 2>&1; rc=$?
check "=0: exits 0" [ "$rc" -eq 0 ]
check "=0: still a skip" grep -q "^\[  SKIPPED \]" "$tmp/zero.log"
ATLAS_REQUIRE_GPU=1 "$probe" >"$tmp/fail.log" 2>&1; rc=$?
check "=1: exits non-zero" [ "$rc" -ne 0 ]
check "=1: the case fails" grep -q '^\[  FAILED  \] CudaSkipProbe.CannotRunHere' "$tmp/fail.log"
check "=1: the failure says why" grep -q 'ATLAS_REQUIRE_GPU is set, so this CUDA test may not skip: CUDA unavailable: probe reason 42' "$tmp/fail.log"
check "=1: nothing skipped" bash -c "! grep -q 'SKIPPED' '$tmp/fail.log'"

# The summary: one count, grouped by reason (the "CUDA unavailable:" prefix
# and its case do not split a reason), nothing when nothing skipped.
"$summary" "$tmp/skip.log" "$tmp/zero.log" >"$tmp/one" 2>&1
check "summary: one line for one reason" [ "$(wc -l <"$tmp/one")" -eq 1 ]
check "summary: counts both logs" grep -q '^CUDA: 2 test cases SKIPPED on this machine, not run: probe reason 42 (ATLAS_REQUIRE_GPU=1 makes a skip fail)$' "$tmp/one"
printf 'x\nCUDA skip: cuda unavailable: no driver\nCUDA skip: CUDA unavailable: no driver\nCUDA skip: built without nvcc\n' >"$tmp/mixed.log"
"$summary" "$tmp/mixed.log" >"$tmp/two" 2>&1
check "summary: total over reasons" grep -q '^CUDA: 3 test cases SKIPPED on this machine, not run (ATLAS_REQUIRE_GPU=1 makes a skip fail):$' "$tmp/two"
check "summary: biggest reason first" [ "$(sed -n 2p "$tmp/two")" = "  2 x no driver" ]
check "summary: then the next" [ "$(sed -n 3p "$tmp/two")" = "  1 x built without nvcc" ]
"$summary" "$tmp/fail.log" >"$tmp/none" 2>&1; rc=$?
check "summary: silent when nothing skipped" [ "$rc" -eq 0 -a ! -s "$tmp/none" ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
