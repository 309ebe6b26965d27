#!/usr/bin/env bash
# tools/gpu/gpu_run_all.sh (the staged runner) with fake test binaries: it
# makes ATLAS_REQUIRE_GPU=1 the tests' default, lets the caller set 0, and a
# binary whose every case skipped is marked so in its row and fails the run.
#   gpu_run_all_test.sh RUN_ALL
set -uo pipefail
runner="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpu_run_all.XXXXXX")"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

stage() {  # stage DIR: a staged folder with one passing and one skipping test
  mkdir -p "$1/tests" "$1/bin"
  cp "$runner" "$1/run_all.sh"
  cat >"$1/tests/ok_test" <<'T'
#!/usr/bin/env bash
echo "$ATLAS_REQUIRE_GPU" >"$(dirname "$0")/../require_gpu_seen"
printf '[==========] 3 tests from 1 test suite ran. (1 ms total)\n[  PASSED  ] 3 tests.\n'
T
  cat >"$1/tests/skip_test" <<'T'
#!/usr/bin/env bash
printf '[==========] 2 tests from 1 test suite ran. (0 ms total)\n[  PASSED  ] 0 tests.\n'
printf '[  SKIPPED ] 2 tests, listed below:\n[  SKIPPED ] Cuda.A\n[  SKIPPED ] Cuda.B\n'
T
  printf '#!/usr/bin/env bash\necho "bench table"\n' >"$1/bin/bench"
  chmod +x "$1/tests/"* "$1/bin/bench"
}

stage "$tmp/s"
env -u ATLAS_REQUIRE_GPU OUT="$tmp/out1" bash "$tmp/s/run_all.sh" >"$tmp/run1" 2>&1; rc=$?
check "default: the tests see ATLAS_REQUIRE_GPU=1" [ "$(cat "$tmp/s/require_gpu_seen")" = 1 ]
check "default: a skip fails the run" [ "$rc" -eq 1 ]
check "default: the all-skipped binary is marked" grep -qE '^skip_test +SKIPPED \(all\) +rc=0 +passed=0 +failed=0 +skipped=2 ' "$tmp/run1"
check "default: the passing binary is marked" grep -qE '^ok_test +PASSED +rc=0 +passed=3 ' "$tmp/run1"
check "default: the bench runs last" grep -q '^bench table$' "$tmp/run1"

ATLAS_REQUIRE_GPU=0 OUT="$tmp/out2" bash "$tmp/s/run_all.sh" >"$tmp/run2" 2>&1
check "=0: passed on to the tests" [ "$(cat "$tmp/s/require_gpu_seen")" = 0 ]

rm "$tmp/s/tests/skip_test"
OUT="$tmp/out3" bash "$tmp/s/run_all.sh" >"$tmp/run3" 2>&1; rc=$?
check "no skips: exits 0" [ "$rc" -eq 0 ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
