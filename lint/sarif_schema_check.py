#!/usr/bin/python3
"""Validates SARIF logs against the SARIF 2.1.0 JSON schema (third_party/sarif, vendored), with Debian's
python3-jsonschema. Exit 1 and one line per violation when a log does not conform.

Usage: sarif_schema_check.py SCHEMA LOG...
"""

import json
import sys

import jsonschema


def main(argv):
    if len(argv) < 2:
        print("usage: sarif_schema_check.py SCHEMA LOG...", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft4Validator(schema)
    bad = 0
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            log = json.load(f)
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
        for e in errors:
            print("%s: %s: %s" % (path, "/".join(str(p) for p in e.absolute_path) or "(root)", e.message))
        bad += 1 if errors else 0
        if not errors:
            print("%s: valid SARIF 2.1.0" % path)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
