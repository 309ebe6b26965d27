#!/usr/bin/env bash
# Formats every tracked C, C++ and CUDA file with Debian's clang-format 14 and
# the repository's .clang-format; --check changes nothing and exits 1 listing
# the files that differ (CI runs it that way).
#   tools/dev/format.sh            rewrite in place
#   tools/dev/format.sh --check    report only
# tests/lint/ carries its own .clang-format (DisableFormat): its fixtures are
# inputs to the statics gate, whose expected findings name their lines.
set -euo pipefail
cd "$(dirname "$0")/../.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: tools/dev/format.sh [--check]" >&2; exit 2 ;;
esac

command -v clang-format >/dev/null 2>&1 ||
  { echo "tools/dev/format.sh: clang-format not found (Debian package clang-format)" >&2; exit 1; }

mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cc' '*.cpp' '*.cu' '*.cuh')
if [ "$check" -eq 0 ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'tools/dev/format.sh: not formatted (run tools/dev/format.sh): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "tools/dev/format.sh: ${#files[@]} files formatted"
