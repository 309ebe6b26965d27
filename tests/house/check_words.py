#!/usr/bin/env python3
"""Fails when a tracked file speaks of a work session by number.

The project speaks of itself: a measurement carries a date, a commit and a
machine (docs/PERFORMANCE.md), never the work session it came from. This
finds the word followed by a number, in any case and with or without an
s, a space, "#", "_" or "-" between (words_test.sh plants each spelling), in
every tracked text file. A session not followed by a number
(an HTTP session, a tokenizer session) does not match.

Usage: check_words.py ROOT; exit 1 listing every FILE:LINE: TEXT.
Files come from `git ls-files` when ROOT is a git checkout, else from a walk
that skips bazel-* output links and .git.
"""
import os
import re
import subprocess
import sys

# "session" or "sessions", then at most one separator, then a digit.
WORD = re.compile(r"\bsessions?[ \t]*[#_-]?[ \t]*\d", re.IGNORECASE)
# Nothing is allowed today. An entry here would be a path relative to the
# root, with a comment saying why that file must say it.
ALLOW = set()


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("bazel-")]
        for n in names:
            files.append(os.path.relpath(os.path.join(dirpath, n), root))
    return files


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    found = []
    checked = 0
    for rel in sorted(tracked(root)):
        if rel in ALLOW:
            continue
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary
        checked += 1
        text = data.decode("utf-8", "replace")
        for no, line in enumerate(text.split("\n"), 1):
            if WORD.search(line):
                found.append(f"{rel}:{no}: {line.strip()[:160]}")
    if found:
        print("A work session is named where a date, a commit or a machine belongs:")
        print("\n".join(found))
        return 1
    print(f"words: {checked} tracked text files, no work session named")
    return 0


if __name__ == "__main__":
    sys.exit(main())
