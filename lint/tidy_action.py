#!/usr/bin/python3
"""One lint action of //lint:defs.bzl: runs clang-tidy (or cppcheck) on one file and writes its reports.

Outputs, all with workspace-relative paths:
  --text   the tool's diagnostics in clang's `file:line:col: level: message [check]` form
  --fixes  clang-tidy's --export-fixes YAML (an empty document when there is nothing to fix)
  --sarif  SARIF 2.1.0 built from the text report (lint/sarif.py; the gate merges them into one log)

The action never fails on findings (the test rules judge them). What the runner adds:
  * atlas-stray-statics reports at error level, which clang-tidy never lets a NOLINT comment suppress;
    the text report turns them back into warnings (a finding, judged against the baseline).
  * Findings in files outside the workspace (system headers, external repositories, generated files)
    are dropped; findings in headers and textual includes of the workspace are kept (the gate merges
    the same finding reported from several files into one).
  * Compiler flags the clang frontend does not know (a gcc-only copt) are dropped and the file is
    checked again; each dropped flag becomes a `# note:` line that the gate prints in its summary.
  * When the tool fails without saying why in a diagnostic, the text report gets an `error:` line that
    quotes its first error lines, so the gate fails and the test log shows the cause.
Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sarif  # noqa: E402  (lint/sarif.py, next to this file)

DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>warning|error|note|style|performance|"
    r"portability|information|fatal error): (?P<msg>.*?)(?: \[(?P<check>[^\]\s]+)\])?$"
)
UNKNOWN_ARG = re.compile(r"unknown argument:? '([^']+)'")
OUR_CHECK = "atlas-stray-statics"


def relativize(text, roots):
    for root in roots:
        text = text.replace(root + "/", "")
    # Headers found through `-iquote .` are spelled ./runtime/x.h; one file, one spelling.
    return re.sub(r"(^|[\s'\"])\./(?=[\w])", r"\1", text, flags=re.M)


def parse_diagnostics(text):
    """[(file, line, col, level, message, check)] in order."""
    out = []
    for raw in text.splitlines():
        m = DIAG.match(raw)
        if m:
            out.append((m["file"], int(m["line"]), int(m["col"]), m["level"], m["msg"], m["check"] or ""))
    return out


def in_workspace(path):
    return not (path.startswith("/") or path.startswith("external/") or path.startswith("bazel-out/")
                or path.startswith("<"))


def statics_report(text):
    """Keeps the diagnostic lines: our findings as warnings (dropping those outside the workspace, with
    their notes), clang's own errors as they are."""
    lines, keep_notes = [], False
    for raw in text.splitlines():
        m = DIAG.match(raw)
        if not m:
            continue
        # One file, one spelling: `#include "./x.c"` and `a/../b.h` name files too.
        # Resolved before the workspace test: bazel-out/../x.inc is x.inc, in the workspace.
        path = m["file"] if m["file"].startswith("<") else os.path.normpath(m["file"])
        msg = re.sub(r"'([^'\s]*/\.{1,2}/[^'\s]*)'", lambda q: "'%s'" % os.path.normpath(q.group(1)), m["msg"])
        raw = "%s:%s:%s: %s: %s%s" % (path, m["line"], m["col"], m["level"], msg,
                                       " [%s]" % m["check"] if m["check"] else "")
        m = DIAG.match(raw)
        if m["level"] == "note":
            if keep_notes:
                lines.append(raw)
            continue
        keep_notes = False
        if m["check"] == OUR_CHECK:
            if not in_workspace(m["file"]):
                continue
            raw = "%s:%s:%s: warning: %s [%s]" % (m["file"], m["line"], m["col"], m["msg"], OUR_CHECK)
        lines.append(raw)
        keep_notes = True
    return lines


def first_errors(err, limit=8):
    picked = [l for l in err.splitlines() if "error" in l.lower() and l.strip()]
    return " | ".join(picked[:limit])[:1500]


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        argv, compile_args = argv[:split], argv[split + 1:]
    else:
        compile_args = []
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["statics", "tidy", "cppcheck"], required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--text", required=True)
    p.add_argument("--sarif", required=True)
    p.add_argument("--fixes")
    p.add_argument("--config")
    p.add_argument("--plugin")
    a = p.parse_args(argv)

    roots = sorted({os.getcwd(), os.path.realpath(os.getcwd())}, key=len, reverse=True)
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    notes = []
    fixes_tmp = (a.fixes or a.text) + ".raw"

    def command(args):
        if a.mode == "cppcheck":
            cmd = [a.tool, "--enable=warning,style,performance,portability", "--error-exitcode=1",
                   "--inline-suppr", "--quiet",
                   # constParameter: our handles are pointer typedefs (atlas_status, CUstream) that cannot be
                   # spelled pointer-to-const, and vtable callbacks must match their function pointer type;
                   # cppcheck 2.10 asks for const on both.
                   "--suppress=constParameter",
                   "--template={file}:{line}:{column}: {severity}: {message} [cppcheck-{id}]"]
            return cmd + args + [a.src]
        cmd = [a.tool, "--quiet", "--config-file=" + a.config, "--export-fixes=" + fixes_tmp]
        if a.mode == "statics":
            # Our check decides what to report in headers and textual includes; the runner keeps the
            # workspace's files.
            cmd.append("--header-filter=.*")
        if a.plugin:
            cmd.append("--load=" + a.plugin)
        return cmd + [a.src, "--"] + args

    args = list(compile_args)
    for _ in range(8):
        proc = subprocess.run(command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              check=False)
        out = relativize(proc.stdout.decode("utf-8", "replace"), roots)
        err = relativize(proc.stderr.decode("utf-8", "replace"), roots)
        if a.mode == "cppcheck":
            break
        unknown = [u for u in UNKNOWN_ARG.findall(out + err) if u in args]
        if not unknown:
            break
        for flag in unknown:
            args = [x for x in args if x != flag]
            notes.append("# note: %s: dropped compiler flag '%s': the clang frontend does not know it"
                         % (a.src, flag))

    if (a.mode != "cppcheck" and a.src.endswith(".h") and "-x" in args and args[args.index("-x") + 1] == "c"
            and re.search(r": (fatal )?error: .*\[clang-diagnostic-error\]", out)):
        # A header of a target without C++ sources that does not compile as C: often a C++ header of a
        # header-only library. Check it as C++ and say so.
        cxx = ["-x", "c++", "-std=c++17"] + [x for x in args[args.index("-x") + 2:] if not x.startswith("-std=")]
        retry = subprocess.run(command(cxx), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
        rout = relativize(retry.stdout.decode("utf-8", "replace"), roots)
        if not re.search(r": (fatal )?error: .*\[clang-diagnostic-error\]", rout):
            proc, out, err = retry, rout, relativize(retry.stderr.decode("utf-8", "replace"), roots)
            notes.append("# note: %s: checked as C++: it does not compile as C" % a.src)

    if a.mode == "cppcheck":
        diags = parse_diagnostics(out + err)
        # Severities become clang levels so every report reads (and parses) the same way.
        lines = ["%s:%d:%d: %s: %s [%s]" % (f, l, c, "error" if lvl == "error" else "warning", msg, chk)
                 for f, l, c, lvl, msg, chk in diags]
        failed = proc.returncode not in (0, 1) or (proc.returncode == 1 and not diags)
        tool_name, info_uri = "cppcheck", "https://cppcheck.sourceforge.io/"
    else:
        lines = statics_report(out) if a.mode == "statics" else \
            [l for l in out.splitlines() if DIAG.match(l)]
        clang_errors = [l for l in lines if DIAG.match(l)["level"] in ("error", "fatal error")]
        failed = proc.returncode != 0 and not clang_errors and not any(
            DIAG.match(l)["check"] == OUR_CHECK for l in lines)
        tool_name, info_uri = "clang-tidy", "https://clang.llvm.org/extra/clang-tidy/"
    if failed:
        lines.append("%s:1:1: error: %s exited with status %d: %s [atlas-lint-tool-failure]" % (
            a.src, tool_name, proc.returncode, first_errors(out + "\n" + err) or "no output"))
    text = "\n".join(notes + lines) + ("\n" if notes or lines else "")
    with open(a.text, "w", encoding="utf-8") as f:
        f.write(text)

    if a.fixes:
        if os.path.exists(fixes_tmp):
            with open(fixes_tmp, encoding="utf-8") as f:
                yaml_text = f.read()
            os.remove(fixes_tmp)
            yaml_text = relativize(yaml_text, roots)
            for root in roots:
                yaml_text = yaml_text.replace("'" + root + "'", "'.'")
            if a.mode == "statics":
                yaml_text = yaml_text.replace("    Level:           Error", "    Level:           Warning")
        else:
            yaml_text = "---\nMainSourceFile:  '%s'\nDiagnostics:     []\n...\n" % a.src
        with open(a.fixes, "w", encoding="utf-8") as f:
            f.write(yaml_text)
    elif os.path.exists(fixes_tmp):
        os.remove(fixes_tmp)

    version = ""
    if a.mode != "cppcheck":
        m = re.search(r"version (\d+\.\d+\.\d+)", subprocess.run(
            [a.tool, "--version"], stdout=subprocess.PIPE, env=env, check=False).stdout.decode())
        version = m.group(1) if m else ""
    with open(a.sarif, "w", encoding="utf-8") as f:
        json.dump(sarif.log(parse_diagnostics(text), tool_name, version, info_uri), f, indent=1,
                  sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
