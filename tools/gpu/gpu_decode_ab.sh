#!/usr/bin/env bash
# Decode speed of two or more `bench` binaries side by side, on the GPU
# machine: each round runs every binary on each shape in turn (so drift in
# clocks or temperature lands on all of them), then one table gives every
# round's ms a token and each binary's best against the first one's.
#
#   bash tools/gpu/gpu_decode_ab.sh [--rounds=N] [--steps=N] [--shapes=1b,8b]
#        [--contexts-1b=LIST] [--contexts-8b=LIST] NAME=BENCH NAME=BENCH ...
#
# e.g. `bash tools/gpu/gpu_decode_ab.sh main=.gpu_a/bin/bench new=.gpu_z/bin/bench`
# with both binaries built here (`tools/gpu/gpu_stage.sh`, or `bazel build -c opt
# //tools/bench:bench` at each tree) and carried. The checkpoints are
# tools/gpu/gpu_profile_decode.py's random BF16 Llama-3.2-1B / 3.1-8B shapes (made
# once, under /tmp; needs torch and safetensors). Only the bench's default mode
# (captured step, device a step ahead) goes in the table; each run's whole
# output is kept in $OUT (or /tmp/decode_ab). Run nothing else on the GPU
# meanwhile. Exit status 1 when a run fails.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds=2 steps=64 shapes=1b,8b ctx_1b=32,128,200,1024,8192 ctx_8b=64,128,1024,8192
names=() bins=()
usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
for arg in "$@"; do
  case "$arg" in
    --rounds=*) rounds="${arg#*=}" ;;
    --steps=*) steps="${arg#*=}" ;;
    --shapes=*) shapes="${arg#*=}" ;;
    --contexts-1b=*) ctx_1b="${arg#*=}" ;;
    --contexts-8b=*) ctx_8b="${arg#*=}" ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu_decode_ab: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
    *=*)
      names+=("${arg%%=*}")
      bins+=("${arg#*=}")
      [ -x "${arg#*=}" ] || { echo "gpu_decode_ab: '${arg#*=}' is not an executable" >&2; exit 2; }
      ;;
    *) echo "gpu_decode_ab: expected NAME=BENCH, got '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done
[ "${#names[@]}" -ge 1 ] || { usage >&2; exit 2; }
case "$rounds$steps" in *[!0-9]*) echo "gpu_decode_ab: --rounds and --steps take numbers" >&2; exit 2 ;; esac

logs="${OUT:-/tmp/decode_ab}"
mkdir -p "$logs"
results="$logs/decode_ab.txt"
: >"$results"
status=0
IFS=, read -r -a shape_list <<<"$shapes"
for s in "${shape_list[@]}"; do
  case "$s" in 1b | 8b) ;; *) echo "gpu_decode_ab: unknown shape '$s' (1b, 8b)" >&2; exit 2 ;; esac
done
for s in "${shape_list[@]}"; do
  dir="$(cd "$here" && python3 -c "import gpu_profile_decode as g; print(g.checkpoint('$s'))")" ||
    { echo "gpu_decode_ab: could not make the $s checkpoint" >&2; exit 1; }
  ctx="$ctx_1b"; [ "$s" = 8b ] && ctx="$ctx_8b"
  for ((r = 1; r <= rounds; ++r)); do
    for i in "${!names[@]}"; do
      log="$logs/${names[$i]}_${s}_$r.log"
      if ! "${bins[$i]}" decode "$dir" --context="$ctx" --steps "$steps" >"$log" 2>&1; then
        echo "gpu_decode_ab: ${names[$i]} failed on $s (round $r); tail of $log:" >&2
        tail -5 "$log" >&2
        status=1
      fi
      # RESULT decode_<context>_ms <ms>: the default mode only.
      sed -n 's/^RESULT decode_\([0-9]*\)_ms \([0-9.]*\)$/\1 \2/p' "$log" |
        while read -r c ms; do echo "$s $c $i ${names[$i]} $r $ms"; done >>"$results"
    done
  done
done

echo "== decode, ms a token (default mode; rounds in order, then the best and best / ${names[0]}'s)"
sort -k1,1 -k2,2n -k3,3n -k5,5n "$results" | awk '
  function flush() {
    if (key == "") return
    printf "%-3s %6s  %-14s %s  best %.4f", shape, ctx, name, list, best
    if (idx == 0) first = best
    if (idx > 0 && first > 0) printf "  %.3fx", best / first
    printf "\n"
  }
  {
    k = $1 " " $2 " " $3
    if (k != key) {
      flush()
      if ($1 " " $2 != sc) { first = 0; sc = $1 " " $2 }
      key = k; shape = $1; ctx = $2; idx = $3; name = $4; list = ""; best = 0
    }
    list = list sprintf("%.4f ", $6)
    if (best == 0 || $6 < best) best = $6
  }
  END { flush() }'
exit $status
