#!/usr/bin/env bash
# Says once, after a `bazel test`, how many CUDA test cases skipped and why,
# so that a machine without a GPU cannot pass for one that ran them.
#
#   tools/gpu/cuda_skip_summary.sh --bep FILE   # a --build_event_json_file
#   tools/gpu/cuda_skip_summary.sh TEST.LOG...  # test logs directly
#
# Counts the lines that tests/cuda/cuda_skip.h puts in the logs ("CUDA skip:
# REASON", under gtest's "Skipped" line), by reason, then names each test
# target that skipped cases, with how many of its cases ran: a target whose
# every case skipped ran nothing, whatever Bazel's PASSED says. Prints nothing
# when no case skipped. tools/bazel runs it after every `test` command.
set -uo pipefail

logs=()
if [ "${1:-}" = "--bep" ]; then
  [ -r "${2:-}" ] || { echo "cuda_skip_summary: cannot read ${2:-(no file)}" >&2; exit 1; }
  # Every test attempt's test.log, cached ones included, as file:// URIs.
  while IFS= read -r uri; do
    path="${uri#file://}"
    path="$(printf '%b' "${path//%/\\x}")"  # undo %XX escapes
    logs+=("$path")
  done < <(grep -o '"name":"test.log","uri":"file://[^"]*"' "$2" |
             sed 's/.*"uri":"//; s/"$//' | sort -u)
else
  logs=("$@")
fi
[ "${#logs[@]}" -gt 0 ] || exit 0

# "CUDA unavailable: X" and "cuda unavailable: X" are one reason, X.
reasons=$(cat -- "${logs[@]}" 2>/dev/null | sed -n 's/^CUDA skip: //p' |
            sed 's/^[Cc][Uu][Dd][Aa] unavailable: //' | sort | uniq -c | sort -rn)
[ -n "$reasons" ] || exit 0
total=$(awk '{n += $1} END {print n}' <<<"$reasons")
if [ "$(wc -l <<<"$reasons")" -eq 1 ]; then
  why=$(sed 's/^ *[0-9]* //' <<<"$reasons")
  echo "CUDA: $total test cases SKIPPED on this machine, not run: $why" \
    "(ATLAS_REQUIRE_GPU=1 makes a skip fail)"
else
  echo "CUDA: $total test cases SKIPPED on this machine, not run" \
    "(ATLAS_REQUIRE_GPU=1 makes a skip fail):"
  sed 's/^ *\([0-9]*\) /  \1 x /' <<<"$reasons"
fi
# One line a target: .../testlogs/PKG/NAME/test.log is //PKG:NAME.
for log in "${logs[@]}"; do
  n=$(grep -c '^CUDA skip: ' -- "$log" 2>/dev/null) || continue
  [ "$n" -gt 0 ] || continue
  label="$log"
  if [[ "$log" =~ /testlogs/(.+)/([^/]+)/test\.log$ ]]; then
    label="//${BASH_REMATCH[1]}:${BASH_REMATCH[2]}"
  fi
  total=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' -- "$log" | tail -1)
  if [ -n "$total" ] && [ "$n" -ge "$total" ]; then
    echo "  $label: all $total cases SKIPPED, none ran"
  elif [ -n "$total" ]; then
    echo "  $label: $n of $total cases SKIPPED"
  else
    echo "  $label: $n cases SKIPPED"
  fi
done | sort
