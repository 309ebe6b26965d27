#!/bin/bash
# A consumer gate run with a straggler the baseline does not list must fail, name the finding in its log,
# and still write a merged SARIF log that is valid SARIF 2.1.0 and holds the finding unsuppressed.
# Usage: straggler_gate_test.sh GATE SCHEMA_CHECK SCHEMA
set -u
out=${TEST_TMPDIR:-$(mktemp -d)}/gate
mkdir -p "$out"
if TEST_UNDECLARED_OUTPUTS_DIR="$out" "$1" > "$out/log.txt" 2>&1; then
  echo "FAIL: the gate passed with a straggler it must refuse"; cat "$out/log.txt"; exit 1
fi
want="other/life/lifecycle.c:6:36: warning: static 'g_lookalike_stop' is marked LIFECYCLE outside the lifecycle files (files matching LifecycleFiles '^life/lifecycle\\.c\$')"
if ! grep -qF "$want" "$out/log.txt"; then
  echo "FAIL: the log does not name the straggler:"; cat "$out/log.txt"; exit 1
fi
grep -qF "    other/life/lifecycle.c - g_lookalike_stop" "$out/log.txt" \
  || { echo "FAIL: the log does not give the baseline line"; cat "$out/log.txt"; exit 1; }
/usr/bin/python3 -I "$2" "$3" "$out/straggler_gate.sarif" || exit 1
/usr/bin/python3 -I - "$out/straggler_gate.sarif" <<'PY' || exit 1
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
open_results = [r for r in run["results"] if not r.get("suppressions")]
assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in open_results] == \
    ["other/life/lifecycle.c"], open_results
PY
echo "PASS: the straggler fails the gate, named in its log and in a valid SARIF log"
