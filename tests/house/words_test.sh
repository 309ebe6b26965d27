#!/usr/bin/env bash
# No tracked file names a work session by number, and the checker catches
# one planted in a scratch tree (each spelling it must see).
set -euo pipefail
checker="tests/house/check_words.py"
# README.md is a runfile linked to the source tree: its target names the root.
root="$(dirname "$(readlink -f README.md)")"
python3 "$checker" "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
word="Ses""sion"  # spelled in two pieces so that this file passes itself
printf 'measured in %s 3\n' "$word" >"$tmp/a.md"
printf '// (%s 30)\n' "${word,,}" >"$tmp/b.c"
printf 'see %ss 9-15\n' "${word^^}" >"$tmp/c.txt"
printf 'an HTTP %s, a %s id, %sless\n' "${word,,}" "${word,,}" "${word,,}" >"$tmp/ok.txt"
if out=$(python3 "$checker" "$tmp"); then
  echo "FAIL: planted session numbers passed:"; echo "$out"; exit 1
fi
for want in "a.md:1:" "b.c:1:" "c.txt:1:"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing $want"; echo "$out"; exit 1; }
done
if grep -qF "ok.txt" <<<"$out"; then
  echo "FAIL: a session without a number was reported:"; echo "$out"; exit 1
fi
echo "words: planted session numbers caught"
