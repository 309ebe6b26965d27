#!/bin/bash
# The consumer's merged SARIF log: valid against the SARIF 2.1.0 schema (vendored), the tool's version
# filled in, each baselined finding suppressed with status "accepted" and a justification.
# Usage: sarif_schema_test.sh SCHEMA_CHECK SCHEMA LOG
set -u
/usr/bin/python3 -I "$1" "$2" "$3" || exit 1
# The validator itself rejects what the schema forbids (a wrong suppression status).
bad=${TEST_TMPDIR:-$(mktemp -d)}/bad.sarif
sed 's/"status": "accepted"/"status": "maybe"/' "$3" > "$bad"
if /usr/bin/python3 -I "$1" "$2" "$bad" > /dev/null; then echo "FAIL: the schema check accepts a bad status"; exit 1; fi
/usr/bin/python3 -I - "$3" <<'PY' || exit 1
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
version = run["tool"]["driver"].get("version", "")
assert version and version[0].isdigit(), run["tool"]["driver"]
results = run["results"]
uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results)
assert uris == ["gpu/launch.cu", "legacy/cache.cc", "legacy/legacy.c"], uris
for r in results:
    assert r["suppressions"] == [{"kind": "external", "status": "accepted",
                                  "justification": "listed in the gate's baseline"}], r
print("PASS: SARIF 2.1.0, driver version %s, %d findings suppressed as accepted" % (version, len(results)))
PY
