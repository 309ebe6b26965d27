#!/usr/bin/env python3
"""Lists the functions the public headers declare, one per line, or writes the
linker version script that exports exactly them from libatlas.so.

    public_symbols.py [--version-script | --undefined] HEADER...

--undefined writes ld options (-u for each) that pull every public function,
and what it needs, out of the static archives into libatlas.so.

A declaration is a top-level statement that is not a typedef and has no body:
macros, `static inline` helpers and function-pointer typedefs are not symbols.
"""
import re
import sys


def declared(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # extern "C" { ... } guards live in #ifdef __cplusplus blocks.
    text = re.sub(r"#ifdef __cplusplus.*?#endif", " ", text, flags=re.S)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    names, chunk, depth = [], [], 0
    for ch in text:
        chunk.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if depth == 0 and ch in ";}":
            stmt = "".join(chunk).strip()
            chunk = []
            if ch == "}" or "{" in stmt or stmt.startswith("typedef"):
                continue  # a definition or a type, not a symbol
            m = re.search(r"\b(atlas_\w+)\s*\(", stmt)
            if m:
                names.append(m.group(1))
    return names


def main(argv):
    script = "--version-script" in argv
    undefined = "--undefined" in argv
    names = []
    for path in [a for a in argv if not a.startswith("--")]:
        with open(path, encoding="utf-8") as f:
            names += declared(f.read())
    names = sorted(set(names))
    if not names:
        sys.exit("public_symbols.py: no declarations found in " + " ".join(argv))
    if script:
        print("/* Generated from the public headers by public_symbols.py. */")
        print("{\n  global:")
        for n in names:
            print("    %s;" % n)
        print("  local: *;\n};")
    elif undefined:
        print("\n".join("--undefined=" + n for n in names))
    else:
        print("\n".join(names))


if __name__ == "__main__":
    main(sys.argv[1:])
