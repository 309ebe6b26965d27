#!/bin/bash
# The gate over real code no one here wrote: fetches the npm packages of projects.txt (test-setup step:
# pinned version and sha256, cached), runs the same per-file runner the Bazel aspect runs over each
# project's C sources, merges the reports with the gate, and compares the counts with
# expected_counts.txt. Prints a sample of the findings for a reader.
# Usage (Bazel runs it from the runfiles root): run_realcode.sh CLANG_TIDY PLUGIN
set -euo pipefail
CLANG_TIDY=$(readlink -f "$1")
PLUGIN=$(readlink -f "$2")
here=$PWD
RC=$here/tests/lint/realcode
WORK=${TEST_TMPDIR:-$(mktemp -d)}
cache=$("$RC/fetch.sh" "$RC/projects.txt" "${ATLAS_NPM_CACHE:-/tmp/atlas-npm-cache}")
failures=0
while read -r name spec sha globs; do
  case "$name" in ''|'#'*) continue ;; esac
  root="$cache/$name/package"
  : > "$WORK/$name.manifest"
  n=0
  pushd "$root" >/dev/null
  for src in $globs; do
    n=$((n + 1))
    out="$WORK/$name.$(echo "$src" | tr / _)"
    incs=()
    for d in $(dirname "$src") $(dirname "$src")/../include; do incs+=(-I "$d"); done
    /usr/bin/python3 -I "$here/lint/tidy_action.py" --mode statics --tool "$CLANG_TIDY" --plugin "$PLUGIN" \
      --config "$here/lint/atlas_statics.clang-tidy" --src "$src" --text "$out.txt" --fixes "$out.yaml" \
      --sarif "$out.sarif" -- -x c -std=c11 -D_GNU_SOURCE "${incs[@]}" < /dev/null
    echo "$out.txt" >> "$WORK/$name.manifest"
  done
  /usr/bin/python3 -I "$here/lint/statics_gate.py" --manifest "$WORK/$name.manifest" \
    --check atlas-stray-statics --sarif "$WORK/$name.sarif" > "$WORK/$name.gate" || true
  popd >/dev/null
  findings=$(sed -n 's/.* report(s), \([0-9]*\) finding(s).*/\1/p' "$WORK/$name.gate")
  errors=$(grep -c ': error: ' "$WORK/$name.gate" || true)
  fixits=$(cat "$WORK/$name".*.yaml | grep -c 'ReplacementText' || true)
  # Statics in preprocessor branches the parse skipped are findings too, counted apart: "not checked".
  inactive=$(grep -c 'is not checked: it is in a preprocessor branch' "$WORK/$name.gate" || true)
  checked=$((findings - inactive))
  echo "== $spec ($name): $n file(s), $checked finding(s), $inactive not checked (inactive branches)," \
    "$errors clang error(s), $fixits fix-it(s)"
  { grep ': warning: ' "$WORK/$name.gate" | grep -v 'is not checked' || true; } \
    | sed 's/ is in none of the allowed categories.*//' | awk 'NR <= 8 { print "   " $0 }'
  { grep 'is not checked: it is in a preprocessor branch' "$WORK/$name.gate" || true; } \
    | sed 's/ is not checked: it is in a preprocessor branch this parse skipped (\(.*\) at line.*/ (\1)/' \
    | awk 'NR <= 6 { print "   " $0 }'
  /usr/bin/python3 -I "$here/lint/sarif_check.py" "$WORK/$name.sarif" || { echo "FAIL: $name SARIF"; failures=$((failures + 1)); }
  /usr/bin/python3 -I "$here/lint/sarif_schema_check.py" "$here/third_party/sarif/sarif-schema-2.1.0.json" \
    "$WORK/$name.sarif" > /dev/null || { echo "FAIL: $name SARIF schema"; failures=$((failures + 1)); }
  want=$(awk -v n="$name" '$1 == n { print $2, $3, $4, $5 }' "$RC/expected_counts.txt")
  if [ "$want" != "$n $checked $inactive $errors" ]; then
    echo "FAIL: $name: got files/findings/not-checked/errors '$n $checked $inactive $errors', expected '$want'" \
      "(expected_counts.txt)"
    failures=$((failures + 1))
  fi
done < "$RC/projects.txt"
if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "real-code counts match"
