#!/usr/bin/python3
"""Fails when a cc target declared in the source tree escapes the self-gate.

Reads every BUILD file under --root (skipping nested workspaces, bazel-* links and tests/, whose
private packages the CI's pattern run gates), finds the cc_library / cc_binary / cc_test / atlas_cuda_fatbin calls and
their names, and checks that each one is among the targets //lint:self_gate_test visited (--visited, written
by the test rule) or is tagged no-atlas-statics. The aspect follows deps, srcs and hdrs, so a target
reached through another counts. Standard library only.
"""

import argparse
import os
import re
import sys

KINDS = ("cc_library", "cc_binary", "cc_test", "atlas_cuda_fatbin")
CALL = re.compile(r"^(%s)\(" % "|".join(KINDS), re.M)
NAME = re.compile(r"\bname\s*=\s*\"([^\"]+)\"")
# tests/: GoogleTest suites (private packages; GoogleTest's TEST_P registers tests through mutable statics),
# and the lint fixtures, which hold stragglers on purpose. The product (everything else) is also gated by
# the CI's pattern run: tools/bazel build --config=atlas_statics -- //... -//tests/...
EXCLUDED_DIRS = ("tests",)


def call_body(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:]


def declared_targets(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and not d.startswith("bazel-")
            and not os.path.exists(os.path.join(dirpath, d, "WORKSPACE"))
            and not any(("%s/%s" % (rel, d)).lstrip("/").startswith(x) for x in EXCLUDED_DIRS))
        for build in ("BUILD", "BUILD.bazel"):
            if build not in filenames:
                continue
            with open(os.path.join(dirpath, build), encoding="utf-8") as f:
                text = f.read()
            for m in CALL.finditer(text):
                body = call_body(text, m.end() - 1)
                n = NAME.search(body)
                if not n:
                    continue
                tagged = "no-atlas-statics" in body
                out.append(("//%s:%s" % (rel, n.group(1)), tagged))
    return out


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--visited", required=True)
    a = p.parse_args(argv)
    with open(a.visited, encoding="utf-8") as f:
        visited = {l.strip().lstrip("@") for l in f if l.strip()}
    declared = declared_targets(a.root)
    escaped = [label for label, tagged in declared if not tagged and label not in visited]
    skipped = [label for label, tagged in declared if tagged]
    print("self-gate coverage: %d cc target(s) declared, %d visited by the gate, %d tagged no-atlas-statics"
          % (len(declared), len(visited), len(skipped)))
    if escaped:
        print("\nFAIL: %d cc target(s) escape //lint:self_gate_test:" % len(escaped))
        for label in escaped:
            print("    " + label)
        print("\nRun lint/update_self_gate_targets.sh (or add them to lint/self_gate_targets.bzl), or tag a "
              "target no-atlas-statics to exclude it on purpose (the gate's summary lists it).")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
