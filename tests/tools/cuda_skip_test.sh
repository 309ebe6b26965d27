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
check "summary: one line for one reason, then one a log" [ "$(wc -l <"$tmp/one")" -eq 3 ]
check "summary: counts both logs" grep -q '^CUDA: 2 test cases SKIPPED on this machine, not run: probe reason 42 (ATLAS_REQUIRE_GPU=1 makes a skip fail)$' "$tmp/one"
check "summary: each log's share of its cases" grep -qx "  $tmp/skip.log: 1 of 2 cases SKIPPED" "$tmp/one"
# A target whose every case skipped is named as such, by its label (Bazel's
# testlogs/PKG/NAME/test.log), beside one that ran some of its cases.
mkdir -p "$tmp/testlogs/tests/cuda/all_skip_test" "$tmp/testlogs/tests/cuda/some_skip_test"
printf '[==========] Running 3 tests from 1 test suite.\nCUDA skip: CUDA unavailable: no driver\nCUDA skip: CUDA unavailable: no driver\nCUDA skip: CUDA unavailable: no driver\n[==========] 3 tests from 1 test suite ran. (0 ms total)\n[  PASSED  ] 0 tests.\n' \
  >"$tmp/testlogs/tests/cuda/all_skip_test/test.log"
printf 'CUDA skip: CUDA unavailable: no driver\n[==========] 4 tests from 2 test suites ran. (1 ms total)\n[  PASSED  ] 3 tests.\n' \
  >"$tmp/testlogs/tests/cuda/some_skip_test/test.log"
"$summary" "$tmp/testlogs/tests/cuda/some_skip_test/test.log" "$tmp/testlogs/tests/cuda/all_skip_test/test.log" >"$tmp/targets" 2>&1
check "summary: all skipped, by label" grep -qx '  //tests/cuda:all_skip_test: all 3 cases SKIPPED, none ran' "$tmp/targets"
check "summary: some skipped, by label" grep -qx '  //tests/cuda:some_skip_test: 1 of 4 cases SKIPPED' "$tmp/targets"
check "summary: the total over targets" grep -q '^CUDA: 4 test cases SKIPPED on this machine, not run: no driver ' "$tmp/targets"
printf 'x\nCUDA skip: cuda unavailable: no driver\nCUDA skip: CUDA unavailable: no driver\nCUDA skip: built without nvcc\n' >"$tmp/mixed.log"
"$summary" "$tmp/mixed.log" >"$tmp/two" 2>&1
check "summary: total over reasons" grep -q '^CUDA: 3 test cases SKIPPED on this machine, not run (ATLAS_REQUIRE_GPU=1 makes a skip fail):$' "$tmp/two"
check "summary: biggest reason first" [ "$(sed -n 2p "$tmp/two")" = "  2 x no driver" ]
check "summary: then the next" [ "$(sed -n 3p "$tmp/two")" = "  1 x built without nvcc" ]
check "summary: then the log, with no case count it can read" [ "$(sed -n 4p "$tmp/two")" = "  $tmp/mixed.log: 3 cases SKIPPED" ]
"$summary" "$tmp/fail.log" >"$tmp/none" 2>&1; rc=$?
check "summary: silent when nothing skipped" [ "$rc" -eq 0 -a ! -s "$tmp/none" ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
