#!/usr/bin/python3
"""The gate behind atlas_statics_test, atlas_tidy_test and atlas_cppcheck_test.

Reads the text reports the aspects wrote and fails on every finding that the baseline does not list.

With --check atlas-stray-statics, findings are keyed by (file, enclosing function, variable name), which
stays stable when lines move, and compared with the baseline, one entry a line:

    # file                 function   variable
    src/legacy.c           -          g_request_count
    src/legacy.c           next_id    id

(`-` for file scope). The gate fails on any straggler not in the baseline and on any baseline entry that
no longer exists, so a baseline can only shrink. Errors (a file clang-tidy could not parse, a tool that
failed) always fail the gate. Without --check, every warning and error in the reports fails the gate.
Standard library only.
"""

import argparse
import os
import re
import sys

DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>warning|error|fatal error): "
    r"(?P<msg>.*?)(?: \[(?P<check>[^\]\s]+)\])?$"
)
SUBJECT = re.compile(r"'(?P<name>[^']+)'(?: in function '(?P<function>[^']+)')?")


def read_baseline(path):
    entries = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3:
                sys.exit("%s:%d: a baseline entry is `file function variable` (`-` for file scope), "
                         "got %r" % (path, number, raw.rstrip()))
            entries[tuple(parts)] = number
    return entries


def read_reports(manifest):
    diags, seen = [], set()
    with open(manifest, encoding="utf-8") as f:
        paths = [p.strip() for p in f if p.strip()]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                m = DIAG.match(raw.rstrip("\n"))
                if not m:
                    continue
                # A header checked in two targets, or reported from two files: one finding.
                key = (m["file"], m["line"], m["col"], m["msg"])
                if key in seen:
                    continue
                seen.add(key)
                diags.append(m)
    return paths, diags


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--manifest", required=True, help="file listing the text reports, one a line")
    p.add_argument("--check", help="gate only this check's warnings, with baseline semantics")
    p.add_argument("--baseline", help="legacy stragglers the gate lets pass (with --check)")
    a = p.parse_args(argv)

    paths, diags = read_reports(a.manifest)
    baseline = read_baseline(a.baseline) if a.baseline else {}
    failures, used, baselined = [], set(), 0
    new_entries = []
    for d in diags:
        text = "%s:%s:%s: %s: %s [%s]" % (d["file"], d["line"], d["col"], d["level"], d["msg"], d["check"] or "")
        if d["level"] != "warning":
            failures.append(text)
            continue
        if a.check and d["check"] != a.check:
            continue
        if a.check:
            s = SUBJECT.search(d["msg"])
            if s:
                key = (d["file"], s["function"] or "-", s["name"])
                if key in baseline:
                    used.add(key)
                    baselined += 1
                    continue
                entry = " ".join(key)
                if entry not in new_entries:
                    new_entries.append(entry)
        failures.append(text)

    stale = sorted(set(baseline) - used, key=lambda k: baseline[k])
    for key in stale:
        failures.append("%s:%d: stale baseline entry `%s`: no such straggler any more; delete the line "
                        "(a baseline only shrinks)" % (a.baseline, baseline[key], " ".join(key)))

    what = a.check or "lint"
    print("%s gate: %d report(s), %d finding(s), %d baselined, %d stale baseline entr%s" % (
        what, len(paths), len(diags), baselined, len(stale), "y" if len(stale) == 1 else "ies"))
    if failures:
        print("\nFAIL: %d problem(s):" % len(failures))
        for line in failures:
            print(line)
        if new_entries:
            print("\nFix each one (the message says how). Only for legacy code being adopted, a baseline "
                  "entry keeps a straggler passing until it is fixed:")
            for entry in new_entries:
                print("    " + entry)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
