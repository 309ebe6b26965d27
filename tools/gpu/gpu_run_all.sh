#!/usr/bin/env bash
# Runs the staged GPU tests and benchmark (see tools/gpu/gpu_stage.sh) on a
# machine with a GPU and prints a short table last. Logs go to $OUT (when set)
# or to the staging folder. Exit status: 0 when every test passed and none
# skipped, 1 otherwise. ATLAS_GPU_SANITIZE=1 also runs each test binary under
# compute-sanitizer's memcheck (death tests excluded: they fault on purpose).
set -uo pipefail
# A CUDA test that would skip here fails instead (tests/cuda/cuda_skip.h):
# this machine is supposed to have a GPU. ATLAS_REQUIRE_GPU=0 lets them skip
# (then each binary's row says how many of its cases skipped).
export ATLAS_REQUIRE_GPU="${ATLAS_REQUIRE_GPU:-1}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
logs="${OUT:-$here/logs}"
mkdir -p "$logs"
echo "== $(hostname) commit $(cat "$here/COMMIT" 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm \
  --format=csv,noheader 2>/dev/null || echo "(nvidia-smi not available)"

summary=()
status=0
for t in "$here"/tests/*; do
  name="$(basename "$t")"
  log="$logs/$name.log"
  start=$(date +%s.%N)
  timeout 540 "$t" --gtest_color=no >"$log" 2>&1
  rc=$?
  secs=$(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $start}")
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  grep -E '^\[  (FAILED  |SKIPPED )\] [A-Za-z]' "$log" | grep -v ' ms)$' | sort -u |
    sed "s/^/  $name: /"
  grep -E '^[0-9]+ create/destroy cycles' "$log" | sed "s/^/  $name: /"
  # A binary whose cases all skipped ran nothing: it must not read as passed.
  if [ "$rc" -ne 0 ] || [ -n "$failed" ]; then verdict=FAILED
  elif [ -n "$skipped" ] && [ "${passed:-0}" -eq 0 ]; then verdict="SKIPPED (all)"
  elif [ -n "$skipped" ]; then verdict="SKIPPED (some)"
  else verdict=PASSED
  fi
  summary+=("$(printf '%-28s %-14s rc=%-3s passed=%-4s failed=%-4s skipped=%-4s %6ss' \
    "$name" "$verdict" "$rc" "${passed:-0}" "${failed:-0}" "${skipped:-0}" "$secs")")
  if [ "$rc" -ne 0 ] || [ -n "$skipped" ]; then status=1; fi
done

if [ "${ATLAS_GPU_SANITIZE:-0}" = "1" ]; then
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  for t in "$here"/tests/*; do
    name="memcheck:$(basename "$t")"
    log="$logs/$(basename "$t").memcheck.log"
    timeout 300 "$sanitizer" --tool memcheck --leak-check full --report-api-errors no \
      --error-exitcode 9 \
      "$t" --gtest_color=no --gtest_filter='-*DeathTest*' >"$log" 2>&1
    rc=$?
    errors=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
    summary+=("$(printf '%-28s rc=%-3s sanitizer errors=%s' "$name" "$rc" "${errors:-?}")")
    [ "$rc" -ne 0 ] && status=1
  done
fi

bench_log="$logs/bench_cuda.log"
timeout 300 "$here/bin/bench" cuda "$@" >"$bench_log" 2>&1
bench_rc=$?
[ "$bench_rc" -ne 0 ] && status=1

echo
echo "== tests"
printf '%s\n' "${summary[@]}"
echo
echo "== bench cuda (rc=$bench_rc)"
cat "$bench_log"
exit $status
