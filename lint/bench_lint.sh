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
# 2. The gate's own runner (lint/tidy_action.py, one batch as the aspect runs one per target: one Python
#    start, one clang-tidy process per file, the version read from a file) against a plain parse of the
#    same files (clang-tidy parse-only, one process per file), best of N interleaved; goal <= 1.2x.
# 3. The wall time of a second `tools/bazel test //lint:self_gate_test` with nothing changed (goal < 2 s):
#    every action is cached.
set -euo pipefail
RUNS=${BENCH_RUNS:-10}
here=$PWD
plugin=$(readlink -f "$here/lint/atlas_statics_plugin.so")
ws=${BUILD_WORKSPACE_DIRECTORY:?run me with bazel run //lint:bench_lint}
cd "$ws"
mapfile -t files < <(find runtime -name '*.c' | sort)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Headers are included as "atlas/runtime/x.h" and "atlas/atlas.h" (include_prefix): links stand for them.
# Files that still do not parse this way (a generated header) are left out of both sides.
mkdir -p "$work/inc/atlas"
for d in runtime kernels tools lint; do ln -s "$ws/$d" "$work/inc/atlas/$d"; done
for h in "$ws"/runtime/api/*.h; do ln -s "$h" "$work/inc/atlas/$(basename "$h")"; done
flags=(-x c -std=c11 -D_GNU_SOURCE -I. -iquote . -I "$work/inc")
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
# The files must parse, or both sides would only measure clang giving up.
parsed=()
for f in "${files[@]}"; do
  out=$("$tidy" --quiet -checks=-*,modernize-use-override "$f" -- "${flags[@]}" 2>&1 || true)
  [[ "$out" == *"error:"* ]] || parsed+=("$f")
done
echo "bench_lint: ${#parsed[@]} of ${#files[@]} files under runtime/ parse with the bench's flags; timing those"
files=("${parsed[@]}")
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

# 2. The gate's runner against a plain parse of the same files, one process per file each.
"$tidy" --version > "$work/version.txt"
python3 - "$work" "${files[@]}" -- "${flags[@]}" > "$work/batch.json" <<'PY'
import json, sys
work, rest = sys.argv[1], sys.argv[2:]
split = rest.index("--")
files, flags = rest[:split], rest[split + 1:]
units = [{"src": f, "text": "%s/%d.txt" % (work, i), "sarif": "%s/%d.sarif" % (work, i),
          "fixes": "%s/%d.yaml" % (work, i), "args": flags} for i, f in enumerate(files)]
print(json.dumps({"units": units}))
PY
gate_once() {
  local TIMEFORMAT='%3R %3U %3S' out
  out=$( { time /usr/bin/python3 -I "$here/lint/tidy_action.py" --mode statics --batch "$work/batch.json" \
    --tool "$tidy" --config "$here/lint/atlas_statics.clang-tidy" --version-file "$work/version.txt" \
    --plugin "$plugin" >/dev/null 2>&1; } 2>&1 ) || true
  set -- $out
  echo "$1 $(calc "$2 + $3")"
}
parse_once() {
  local TIMEFORMAT='%3R %3U %3S' out
  out=$( { time for f in "${files[@]}"; do
    "$tidy" --quiet -checks=-*,modernize-use-override "$f" -- "${flags[@]}" >/dev/null 2>&1; done; } 2>&1 ) || true
  set -- $out
  echo "$1 $(calc "$2 + $3")"
}
gp_w=999; gp_c=999; gg_w=999; gg_c=999
for ((i = 0; i < RUNS; i++)); do
  read -r w c < <(parse_once)
  gp_w=$(min "$w" "$gp_w"); gp_c=$(min "$c" "$gp_c")
  read -r w c < <(gate_once)
  gg_w=$(min "$w" "$gg_w"); gg_c=$(min "$c" "$gg_c")
done
[ -e "$work/0.txt" ] || { echo "bench_lint: the runner wrote no report" >&2; exit 1; }
if grep -h ': error: ' "$work"/*.txt | head -3 | grep .; then
  echo "bench_lint: the runner's reports hold errors (above): the comparison would not be fair" >&2; exit 1
fi
echo
printf 'the gate runner vs a plain parse over runtime/ (%d files, one process per file, best of %d)\n' "${#files[@]}" "$RUNS"
printf '                              wall       cpu (user+sys)\n'
printf '  plain parse:                %6.3f s   %6.3f s\n' "$gp_w" "$gp_c"
printf '  gate runner (one batch):    %6.3f s   %6.3f s\n' "$gg_w" "$gg_c"
printf '  gate cost ratio:            %6.3fx    %6.3fx   (goal <= 1.2x)\n' "$(calc "$gg_w / $gp_w")" "$(calc "$gg_c / $gp_c")"

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
