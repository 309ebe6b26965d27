#!/usr/bin/env python3
"""Files and functions a reader can hold: production C, C++ and CUDA under
runtime/, kernels/, tools/ and lint/ (not tests/, not experiments/) stay
under MAX_FILE_LINES lines per file and MAX_FUNCTION_LINES lines per
function (from the line of its name to its closing brace).

What is over a limit today and is being split, or is a generated table, is
listed in ALLOWED with the reason; remove an entry as its file shrinks (the
check fails on an entry that no longer needs to be there, so the list only
shrinks).
Usage: check_sizes.py [ROOT]; exit 1 listing every file or function over.
"""
import fnmatch
import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
TOPS = ("runtime", "kernels", "tools", "lint")
SOURCES = (".c", ".h", ".cc", ".cu", ".cuh", ".cpp")
# Folders that hold inputs to checks rather than production code.
SKIP = ("lint/testdata/", "tools/lab/")

# (path pattern, function name or "*" for the whole file, why). A file
# pattern with "*" as the function allows the file's length and every
# function in it.
ALLOWED = [
]


def allowed(path, func):
    return any(fnmatch.fnmatch(path, pat) and (name == "*" or name == func)
               for pat, name, _ in ALLOWED)


def strip(text):
    """Comments and string/char literals blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c)
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # Preprocessor lines (and their continuations) are no code.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


CONTAINER = re.compile(r"\b(namespace|extern|class|struct|union|enum)\b")
NAME = re.compile(r"([A-Za-z_~][A-Za-z_0-9:~]*)\s*\($")


def functions(text):
    """(name, first line, last line) of every function body in `text`."""
    code = strip(text)
    found = []
    stack = []  # (kind, name, start line)
    header_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            if not stack or stack[-1][0] == "container":
                header_start = i + 1
        elif c == "{":
            enclosing = stack[-1][0] if stack else "container"
            header = code[header_start:i]
            kind, name, start = "inner", None, line
            if enclosing == "container":
                paren = header.find("(")
                if paren >= 0 and "=" not in header[:paren] and \
                        not CONTAINER.search(header[:paren]):
                    m = NAME.search(header[:paren + 1].rstrip())
                    if m:
                        kind, name = "function", m.group(1)
                        start = line - header[header.rfind(m.group(1)):].count("\n")
                elif CONTAINER.search(header) and "=" not in header:
                    kind = "container"
                else:
                    kind = "data"
            stack.append((kind, name, start))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    found.append((name, start, line))
            if not stack or stack[-1][0] == "container":
                header_start = i + 1
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems, used = [], set()
    files = 0
    for top in TOPS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if not name.endswith(SOURCES) or path.startswith(SKIP):
                    continue
                files += 1
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                lines = text.count("\n")
                if lines > MAX_FILE_LINES:
                    if allowed(path, "*"):
                        used.add(path)
                    else:
                        problems.append(f"{path}: {lines} lines (limit {MAX_FILE_LINES}); "
                                        "split it by concept")
                for func, first, last in functions(text):
                    length = last - first + 1
                    if length <= MAX_FUNCTION_LINES:
                        continue
                    if allowed(path, func):
                        used.add(path)
                        continue
                    problems.append(f"{path}:{first}: {func} is {length} lines "
                                    f"(limit {MAX_FUNCTION_LINES})")
    for pat, func, why in ALLOWED:
        if not any(fnmatch.fnmatch(p, pat) for p in used) and \
                any(fnmatch.fnmatch(p, pat) for p in _all(root)):
            problems.append(f"allowlist: {pat} ({why}) is within the limits now; "
                            "remove it from ALLOWED in tests/size/check_sizes.py")
    for p in problems:
        print("sizes:", p)
    print(f"sizes: {files} files checked, {len(problems)} problems")
    return 1 if problems or files == 0 else 0


def _all(root):
    for top in TOPS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


if __name__ == "__main__":
    sys.exit(main())
