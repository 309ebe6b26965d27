#!/usr/bin/python3
"""One lint action of //lint:defs.bzl: runs clang-tidy (or cppcheck) on one file and writes its reports.

Outputs, all with workspace-relative paths:
  --text   the tool's diagnostics in clang's `file:line:col: level: message [check]` form
  --fixes  clang-tidy's --export-fixes YAML (an empty document when there is nothing to fix)
  --sarif  SARIF 2.1.0 built from the text report

The action never fails on findings (the test rules judge them); when the tool itself fails without saying
why in a diagnostic, the text report gets an `error:` line, so the gate fails and shows the tool's output.
Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>warning|error|note|style|performance|"
    r"portability|information|fatal error): (?P<msg>.*?)(?: \[(?P<check>[^\]\s]+)\])?$"
)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


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


def to_sarif(diags, tool_name, tool_version, info_uri):
    rules, rule_index, results = [], {}, []
    for file, line, col, level, msg, check in diags:
        location = {
            "physicalLocation": {
                "artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": max(line, 1), "startColumn": max(col, 1)},
            },
            "message": {"text": msg},
        }
        if level == "note":
            if results:
                results[-1].setdefault("relatedLocations", []).append(
                    dict(location, id=len(results[-1].get("relatedLocations", []))))
            continue
        rule_id = check or "clang-diagnostic"
        if rule_id not in rule_index:
            rule_index[rule_id] = len(rules)
            rules.append({"id": rule_id, "shortDescription": {"text": rule_id}})
        sarif_level = "error" if level in ("error", "fatal error") else "warning"
        results.append({
            "ruleId": rule_id,
            "ruleIndex": rule_index[rule_id],
            "level": sarif_level,
            "message": {"text": msg},
            "locations": [{"physicalLocation": location["physicalLocation"]}],
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": tool_name,
                "version": tool_version,
                "informationUri": info_uri,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the workspace root"}}},
            "results": results,
        }],
    }


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
    if a.mode == "cppcheck":
        cmd = [a.tool, "--enable=warning,style,performance,portability", "--error-exitcode=1",
               "--inline-suppr", "--quiet",
               # constParameter: our handles are pointer typedefs (atlas_status, CUstream) that cannot be
               # spelled pointer-to-const, and vtable callbacks must match their function pointer type;
               # cppcheck 2.10 asks for const on both.
               "--suppress=constParameter",
               "--template={file}:{line}:{column}: {severity}: {message} [cppcheck-{id}]"]
        cmd += compile_args + [a.src]
        tool_name, info_uri = "cppcheck", "https://cppcheck.sourceforge.io/"
    else:
        fixes_tmp = a.fixes + ".raw"
        cmd = [a.tool, "--quiet", "--config-file=" + a.config, "--export-fixes=" + fixes_tmp]
        if a.plugin:
            cmd.append("--load=" + a.plugin)
        cmd += [a.src, "--"] + compile_args
        tool_name, info_uri = "clang-tidy", "https://clang.llvm.org/extra/clang-tidy/"
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    out = relativize(proc.stdout.decode("utf-8", "replace"), roots)
    err = relativize(proc.stderr.decode("utf-8", "replace"), roots)
    text = out + err if a.mode == "cppcheck" else out
    diags = parse_diagnostics(text)
    if a.mode == "cppcheck":
        # Severities become clang levels so every report reads (and parses) the same way.
        lines = []
        for file, line, col, level, msg, check in diags:
            lvl = "error" if level == "error" else "warning"
            lines.append("%s:%d:%d: %s: %s [%s]" % (file, line, col, lvl, msg, check))
        text = "\n".join(lines) + ("\n" if lines else "")
        diags = parse_diagnostics(text)
    failed = proc.returncode != 0 and not any(d[3] in ("error", "fatal error") for d in diags)
    if a.mode == "cppcheck" and proc.returncode == 1 and diags:
        failed = False
    if failed:
        detail = " | ".join(l for l in err.splitlines() if l.strip())[:2000]
        text += "%s:1:1: error: %s exited with status %d: %s [atlas-lint-tool-failure]\n" % (
            a.src, tool_name, proc.returncode, detail)
        diags = parse_diagnostics(text)
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
        else:
            yaml_text = "---\nMainSourceFile:  '%s'\nDiagnostics:     []\n...\n" % a.src
        with open(a.fixes, "w", encoding="utf-8") as f:
            f.write(yaml_text)

    version = ""
    if a.mode != "cppcheck":
        m = re.search(r"version (\d+\.\d+\.\d+)", subprocess.run(
            [a.tool, "--version"], stdout=subprocess.PIPE, env=env, check=False).stdout.decode())
        version = m.group(1) if m else ""
    with open(a.sarif, "w", encoding="utf-8") as f:
        json.dump(to_sarif(diags, tool_name, version, info_uri), f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
