#!/bin/bash
# Benchmark of the atlas-stray-statics gate (a program, not a timed test).
#   tools/bazel run //lint:bench_lint                # both parts
#   tools/bazel run //lint:bench_lint -- --no-bazel  # only the clang-tidy part
#   tools/bazel run //lint:bench_lint -- --no-bazel --instructions
#                                                    # also count instructions (valgrind): noise-free
# 1. clang-tidy with only atlas-stray-statics against clang-tidy parse-only over runtime/**/*.c, the same
#    files and flags, interleaved, best of N runs each (BENCH_RUNS, default 10); prints wall and CPU
#    time and their ratios (goal <= 1.1x). CPU time is the steadier number on a shared machine.
#    clang-tidy refuses to run with no checks at all, so parse-only enables one C++-only check
#    (modernize-use-override), which clang-tidy drops for C: no matcher runs, the AST is only built.
# 2. The wall time of a second `tools/bazel test //lint:self_gate_test` with nothing changed (goal < 2 s):
#    every action is cached.
set -euo pipefail
RUNS=${BENCH_RUNS:-10}
here=$PWD
plugin=$(readlink -f "$here/lint/atlas_statics_plugin.so")
ws=${BUILD_WORKSPACE_DIRECTORY:?run me with bazel run //lint:bench_lint}
cd "$ws"
mapfile -t files < <(find runtime -name '*.c' | sort)
flags=(-x c -std=c11 -D_GNU_SOURCE -I. -iquote .)
tidy=/usr/lib/llvm-14/bin/clang-tidy

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
run_once() {  # clang-tidy args -> "wall cpu" seconds (cpu = user + sys of clang-tidy)
  local TIMEFORMAT='%3R %3U %3S' out
  out=$( { time "$tidy" --quiet "$@" "${files[@]}" -- "${flags[@]}" >/dev/null 2>&1; } 2>&1 ) || true
  set -- $out
  echo "$1 $(calc "$2 + $3")"
}
min() { calc "($1 < $2) ? $1 : $2"; }
# Check that both configurations really run (a plugin that fails to load would make "ours" look free).
"$tidy" --load="$plugin" -checks=-*,atlas-stray-statics --list-checks | grep -q atlas-stray-statics \
  || { echo "bench_lint: the plugin does not load into $tidy" >&2; exit 1; }
bp_w=999; bp_c=999; bo_w=999; bo_c=999
for ((i = 0; i < RUNS; i++)); do
  read -r w c < <(run_once -checks=-*,modernize-use-override)
  bp_w=$(min "$w" "$bp_w"); bp_c=$(min "$c" "$bp_c")
  read -r w c < <(run_once --load="$plugin" -checks=-*,atlas-stray-statics)
  bo_w=$(min "$w" "$bo_w"); bo_c=$(min "$c" "$bo_c")
done
printf 'clang-tidy over runtime/ (%d files, one process, best of %d interleaved runs)\n' "${#files[@]}" "$RUNS"
printf '                              wall       cpu (user+sys)\n'
printf '  parse-only:                 %6.3f s   %6.3f s\n' "$bp_w" "$bp_c"
printf '  only atlas-stray-statics:   %6.3f s   %6.3f s\n' "$bo_w" "$bo_c"
printf '  ratio:                      %6.3fx    %6.3fx   (goal <= 1.1x)\n' "$(calc "$bo_w / $bp_w")" "$(calc "$bo_c / $bp_c")"

if [ "${1:-}" = "--instructions" ] || [ "${2:-}" = "--instructions" ]; then
  # Instructions executed (valgrind's lackey): the same on a busy machine as on an idle one.
  command -v valgrind >/dev/null || { echo "--instructions needs valgrind (apt-get install valgrind)"; exit 1; }
  count() {
    valgrind --tool=lackey --basic-counts=yes "$tidy" --quiet "$@" "${files[@]}" -- "${flags[@]}" 2>&1 >/dev/null \
      | sed -n 's/.*guest instrs: *\([0-9,]*\)$/\1/p' | tr -d , | head -1
  }
  ip=$(count -checks=-*,modernize-use-override)
  io=$(count --load="$plugin" -checks=-*,atlas-stray-statics)
  echo
  printf 'instructions executed (valgrind lackey), same files and flags\n'
  printf '  parse-only:                 %14d\n' "$ip"
  printf '  only atlas-stray-statics:   %14d\n' "$io"
  printf '  ratio:                      %6.3fx   (goal <= 1.1x)\n' "$(calc "$io / $ip")"
fi

if [ "${1:-}" != "--no-bazel" ] && [ "${2:-}" != "--no-bazel" ]; then
  echo
  echo "self-gate: tools/bazel test //lint:self_gate_test, twice (the first may build; the second is timed)"
  tools/bazel test //lint:self_gate_test >/dev/null 2>&1 || echo "  (the self-gate fails: see tools/bazel test //lint:self_gate_test)"
  t0=$(now)
  tools/bazel test //lint:self_gate_test >/dev/null 2>&1 || true
  t1=$(now)
  printf '  second run, nothing changed: %6.3f s wall   (goal < 2 s)\n' "$(calc "$t1 - $t0")"
fi
