#!/usr/bin/python3
"""The gate behind atlas_statics_test, atlas_tidy_test and atlas_cppcheck_test.

Reads the text reports the aspects wrote and fails on every finding that the baseline does not list.

With --check atlas-stray-statics, findings are keyed by (file, enclosing function, variable name), which
stays stable when lines move, and compared with the baseline, one entry a line, fields separated by
blanks and quoted like a POSIX shell word when they hold blanks or quotes (C++ names do:
`'(anonymous namespace)::g_x'`, `'lambda (compound literal)'`):

    # file                 function   variable
    src/legacy.c           -          g_request_count
    src/legacy.cc          'app::(anonymous namespace)::Next'   id

(`-` for file scope). The gate fails on any straggler not in the baseline and on any baseline entry that
no longer exists, so a baseline can only shrink. Errors (a file clang could not compile, a tool that
failed) always fail the gate, and their first lines are printed. Without --check, every warning and error
in the reports fails the gate.

Also: one merged SARIF 2.1.0 log for the whole run (--sarif, or $TEST_UNDECLARED_OUTPUTS_DIR), where
baselined findings carry `suppressions` of kind `external`; a summary of what was not checked (targets
tagged no-atlas-statics, headers checked only through their includers, dropped compiler flags); and
--update-baseline FILE, which rewrites a baseline to list exactly the current stragglers.
Standard library only.
"""

import argparse
import json
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sarif  # noqa: E402

DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>warning|error|fatal error|note): "
    r"(?P<msg>.*?)(?: \[(?P<check>[^\]\s]+)\])?$"
)
SUBJECT = re.compile(r"'(?P<name>[^']+)'(?: in function '(?P<function>[^']+)')?")
BASELINE_HEADER = (
    "# Stragglers kept passing until they are fixed: `file function variable` (`-` for file scope),\n"
    "# quoted like shell words when a field holds blanks. Rewritten by an atlas_statics_baseline_update\n"
    "# target (bazel run); the gate fails on a listed straggler that no longer exists.\n")


def quote(field):
    return shlex.quote(field) if field else "''"


def entry_text(key):
    return " ".join(quote(k) for k in key)


def read_baseline(path):
    entries = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            try:
                parts = shlex.split(raw, comments=True)
            except ValueError as e:
                sys.exit("%s:%d: cannot read the baseline entry (%s): %r" % (path, number, e, raw.rstrip()))
            if not parts:
                continue
            if len(parts) != 3:
                sys.exit("%s:%d: a baseline entry is `file function variable` (`-` for file scope; quote a "
                         "field that holds blanks), got %r" % (path, number, raw.rstrip()))
            entries[tuple(parts)] = number
    return entries


def read_reports(manifest):
    """(paths, findings, notes): findings are dicts with their notes; one finding however many reports
    (a header checked alone and through its includers) hold it."""
    findings, seen, notes = [], set(), []
    with open(manifest, encoding="utf-8") as f:
        paths = [p.strip() for p in f if p.strip()]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            current = None
            for raw in f:
                raw = raw.rstrip("\n")
                if raw.startswith("# note: "):
                    if raw[8:] not in notes:
                        notes.append(raw[8:])
                    continue
                m = DIAG.match(raw)
                if not m:
                    continue
                if m["level"] == "note":
                    if current is not None:
                        current["notes"].append(m)
                    continue
                key = (m["file"], m["line"], m["col"], m["msg"])
                if key in seen:
                    current = None
                    continue
                seen.add(key)
                current = {"m": m, "notes": []}
                findings.append(current)
    return paths, findings, notes


def read_lines(path):
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip()]


def tool_version(path):
    """The version number in a tool's --version output (clang-tidy: "LLVM version 14.0.6"), or ""."""
    if not path or not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        m = re.search(r"version (\d+\.\d+\.\d+)", f.read())
    return m.group(1) if m else ""


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--manifest", required=True, help="file listing the text reports, one a line")
    p.add_argument("--check", help="gate only this check's warnings, with baseline semantics")
    p.add_argument("--baseline", help="legacy stragglers the gate lets pass (with --check)")
    p.add_argument("--skipped", help="file listing targets tagged no-atlas-statics")
    p.add_argument("--via-includers", help="file listing targets whose headers are checked via includers")
    p.add_argument("--excluded", help="file listing compiled files that are not parsed (assembly)")
    p.add_argument("--no-stale", action="store_true", help="do not judge baseline entries (one target's run)")
    p.add_argument("--stamp", help="on success, write this file (a build action's output)")
    p.add_argument("--report-only", action="store_true", help="write the SARIF log, never fail")
    p.add_argument("--sarif", help="write the merged SARIF log here")
    p.add_argument("--name", default="gate", help="name of the merged SARIF file in test outputs")
    p.add_argument("--tool-version-file", help="the tool's --version output (the SARIF log's driver.version)")
    p.add_argument("--update-baseline", metavar="FILE", help="rewrite FILE to list the current stragglers")
    a = p.parse_args(argv)

    paths, findings, notes = read_reports(a.manifest)
    baseline = read_baseline(a.baseline) if a.baseline and os.path.exists(a.baseline) else {}
    failures, used, baselined, suppressed = [], set(), 0, set()
    keys, new_entries = [], []
    for index, fd in enumerate(findings):
        d = fd["m"]
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
                keys.append(key)
                if key in baseline:
                    used.add(key)
                    baselined += 1
                    suppressed.add(index)
                    continue
                entry = entry_text(key)
                if entry not in new_entries:
                    new_entries.append(entry)
        failures.append(text)
        for n in fd["notes"]:
            failures.append("    %s:%s:%s: note: %s" % (n["file"], n["line"], n["col"], n["msg"]))

    if a.update_baseline:
        unique = sorted(set(keys))
        header = ""
        if os.path.exists(a.update_baseline):  # keep the file's own leading comment
            with open(a.update_baseline, encoding="utf-8") as f:
                for line in f:
                    if not line.startswith("#"):
                        break
                    header += line
        with open(a.update_baseline, "w", encoding="utf-8") as f:
            f.write(header or BASELINE_HEADER)
            for key in unique:
                f.write(entry_text(key) + "\n")
        print("%s: %d entr%s" % (a.update_baseline, len(unique), "y" if len(unique) == 1 else "ies"))
        return 0

    stale = [] if a.no_stale or a.report_only else sorted(set(baseline) - used, key=lambda k: baseline[k])
    for key in stale:
        failures.append("%s:%d: stale baseline entry `%s`: no such straggler any more; delete the line "
                        "(a baseline only shrinks)" % (a.baseline, baseline[key], entry_text(key)))

    # One merged SARIF log for the run.
    sarif_path = a.sarif
    if not sarif_path and os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"):
        sarif_path = os.path.join(os.environ["TEST_UNDECLARED_OUTPUTS_DIR"], a.name + ".sarif")
    if sarif_path:
        diags, kept = [], set()
        for index, fd in enumerate(findings):
            d = fd["m"]
            if a.check and d["level"] == "warning" and d["check"] != a.check:
                continue
            if index in suppressed:
                kept.add(sum(1 for x in diags if x[3] != "note"))
            diags.append((d["file"], int(d["line"]), int(d["col"]), d["level"], d["msg"], d["check"] or ""))
            for n in fd["notes"]:
                diags.append((n["file"], int(n["line"]), int(n["col"]), "note", n["msg"], n["check"] or ""))
        tool = "clang-tidy" if a.check or not any("cppcheck" in (f["m"]["check"] or "") for f in findings) \
            else "cppcheck"
        with open(sarif_path, "w", encoding="utf-8") as f:
            json.dump(sarif.log(diags, tool, tool_version(a.tool_version_file),
                                "https://clang.llvm.org/extra/clang-tidy/", suppressed=kept),
                      f, indent=1, sort_keys=True)
            f.write("\n")

    if a.stamp and not failures:
        with open(a.stamp, "w", encoding="utf-8") as f:
            f.write("PASS\n")
        return 0  # a build action: quiet on success
    if a.report_only:
        return 0  # a build action writing the merged SARIF: quiet
    what = a.check or "lint"
    print("%s gate: %d report(s), %d finding(s), %d baselined, %d stale baseline entr%s" % (
        what, len(paths), len(findings), baselined, len(stale), "y" if len(stale) == 1 else "ies"))
    skipped = read_lines(a.skipped)
    via = read_lines(a.via_includers)
    excluded = read_lines(a.excluded)
    if skipped:
        print("not checked (tagged no-atlas-statics): %s" % ", ".join(sorted(set(skipped))))
    if via:
        print("headers checked only through their includers: %s" % ", ".join(sorted(set(via))))
    if excluded:
        print("not checked (assembly files, not parsed; a straggler there is not seen): %s"
              % ", ".join(sorted(set(excluded))))
    for n in notes:
        print("note: " + n)
    if sarif_path:
        shown = sarif_path
        target = os.environ.get("TEST_TARGET", "")
        if not a.sarif and target.startswith("//") and ":" in target:
            pkg, name = target[2:].split(":", 1)
            shown = "bazel-testlogs/%s/test.outputs/%s.sarif" % ("/".join(x for x in (pkg, name) if x), a.name)
        print("merged SARIF: %s" % shown)
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
