#!/usr/bin/env python3
"""Writes python_repr_ranges.txt: Python's repr() of every code point
U+0000..U+10FFFF, as runs of code points that share a general category and
a repr form. jinja_repr_test reads it and builds Python's repr of each code
point from it.

Run: python3 tests/chat/gen_printable.py > tests/chat/python_repr_ranges.txt

Each run is "FIRST LAST CATEGORY FORM" (hex code points, inclusive), FORM one
of: raw (repr writes the character itself), x (\\xNN), u (\\uNNNN),
U (\\UNNNNNNNN), short (\\n, \\r, \\t, \\\\), quote (' or ", escaped only when
it is the quote). The script checks every code point's repr against that
form, so the file is Python's output, not a restatement of its rule.
"""
import sys
import unicodedata

SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def form(cp):
    c = chr(cp)
    r = repr(c)
    if c in "'\"":
        return "quote"
    if c in SHORT:
        assert r == "'" + SHORT[c] + "'", (hex(cp), r)
        return "short"
    body = r[1:-1]
    if body == c:
        return "raw"
    for kind, digits in (("x", 2), ("u", 4), ("U", 8)):
        if body == "\\" + kind + format(cp, "0%dx" % digits):
            return kind
    raise AssertionError("unexpected repr of U+%04X: %s" % (cp, r))


def main():
    print("# Python %s, unicodedata %s: repr() of each code point"
          % (sys.version.split()[0], unicodedata.unidata_version))
    print("# written by tests/chat/gen_printable.py; FIRST LAST CATEGORY FORM")
    run = None
    for cp in range(0x110000):
        key = (unicodedata.category(chr(cp)), form(cp))
        if run and run[2] == key and run[1] == cp - 1:
            run[1] = cp
            continue
        if run:
            print("%x %x %s %s" % (run[0], run[1], run[2][0], run[2][1]))
        run = [cp, cp, key]
    print("%x %x %s %s" % (run[0], run[1], run[2][0], run[2][1]))


if __name__ == "__main__":
    main()
