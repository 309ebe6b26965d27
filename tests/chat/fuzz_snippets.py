#!/usr/bin/env python3
"""Random engine snippets for the chat-template fuzz (tools/fuzz/fuzz_chat.sh):
filters and tests over random JSON values (strings with quotes, escapes,
controls and template syntax; floats of every magnitude; 64-bit integers;
nested lists and dicts), over number-like text, and attribute paths over
nested values, rendered by Jinja2
configured as transformers configures it (gen_reference.py's jinja
renderer). Writes a reference.json holding only snippets.

  fuzz_snippets.py --seed N --count K --out FILE
"""
import argparse
import copy
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference  # noqa: E402

PIECES = ["", " ", "a", "é", "\"", "'", "\\", "\n", "\t", "\x01", "\x7f", "\u2028", "😀", "{{", "}}",
          "{%", "%}", "<|im_start|>", "中文", "a b", "'\"", "\r\n", "\u00a0", "\U0010fffd", "</s>",
          "null", "1.5", "True"]
NUMBER_TEXT = [" 42 ", "1e3", "0x10", "inf", "-inf", "nan", "1_000", "+5", "-0", "12.5e-3",
               "9999999999999999999", "1.5", "-2.5", "", "abc", "3.", ".5", "1e400", "  -7  ",
               "0X1p3", "Infinity", "\t8\n", "1e-400", "00012", "1__0", "_1", "1_0.5",
               "-9223372036854775808", "9223372036854775807", "9223372036854775808",
               " " * 150 + "7", "12\x00", "1.5\x003", "0." + "0" * 140 + "1", "1" + "0" * 130]
VALUE_TEMPLATES = [
    "{{ x }}", "{{ x|tojson }}", "{{ x|tojson(indent=2) }}", "{{ x|tojson(sort_keys=true) }}",
    "{{ x|string }}", "{{ [x] }}", "{{ x|tojson(separators=(',', ':')) }}", "{{ {'k': x} }}",
    "{{ x is string }}{{ x is number }}{{ x is mapping }}{{ x is sequence }}{{ x is iterable }}",
    "{{ x|length if x is sequence or x is mapping else 'n' }}", "{{ x == x }}",
    "{{ x|trim if x is string else x }}", "{{ x|tojson|length }}",
    "{{ x|items|list if x is mapping else '' }}",
    "{{ x|join('|') if x is sequence and x is not string else '' }}"]
NUMBER_TEMPLATES = ["{{ x|round(%d) }}", "{{ x|round(%d, 'floor') }}", "{{ x|round(%d, 'ceil') }}",
                    "{{ x|round }}", "{{ x|int }}", "{{ x|int(-1) }}", "{{ x|float }}",
                    "{{ x|float(-1.5) }}", "{{ x|abs }}", "{{ (x * 3) if x is number else '' }}"]
# Attribute paths (map/selectattr/rejectattr/join): parts drawn from keys the
# nested values below hold, digits (indices), empty parts, and Python attribute
# names: dict, str, list and number methods (mutating ones too) and parts.
PATH_PARTS = ["k", "a", "0", "1", "01", "", "items", "keys", "+1", "-1", "é", "99", "upper",
              "count", "pop", "append", "real", "imag", "hex"]
PATH_TEMPLATES = ["{{ x|map(attribute=%s, default='D')|list }}", "{{ x|selectattr(%s)|list|length }}",
                  "{{ x|rejectattr(%s)|list|length }}", "{{ x|map(attribute=%s)|list|length }}",
                  "{{ x|join(',', attribute=%s) }}"]


def nested(r, depth=0):
    k = r.randint(0, 5 if depth < 3 else 2)
    if k == 0:
        return r.choice(["", "ab", "é中", "x"])
    if k == 1:
        return r.choice([0, 1, 2.5, True, False, None])
    if k in (2, 3):
        return [nested(r, depth + 1) for _ in range(r.randint(0, 3))]
    return {r.choice(PATH_PARTS): nested(r, depth + 1) for _ in range(r.randint(0, 3))}


# The same names through x.name and x['name'] on one nested value.
NAMES = [p for p in PATH_PARTS if p.isidentifier()]
LOOKUP_TEMPLATES = ["{{ (x|first).%s }}", "{{ (x|first)[%s] }}", "{{ (x|first).%s is defined }}"]


def path_snippet(r):
    if r.random() < 0.25:
        t = r.choice(LOOKUP_TEMPLATES)
        name = r.choice(NAMES)
        src = t % (json.dumps(name) if "[" in t else name)
    else:
        path = ".".join(r.choice(PATH_PARTS) for _ in range(r.randint(1, 3)))
        src = r.choice(PATH_TEMPLATES) % json.dumps(path)
    return src, [nested(r, 1) for _ in range(r.randint(1, 4))]


def text(r):
    return "".join(r.choice(PIECES) for _ in range(r.randint(0, 5)))


def number(r):
    k = r.randint(0, 6)
    if k == 0:
        return r.randint(-10**6, 10**6)
    if k == 1:
        return r.randint(-2**63, 2**63 - 1)
    if k == 2:
        return round(r.uniform(-100, 100), r.randint(0, 4))
    if k == 3:
        return r.choice([0.1, 0.5, 1.5, 2.5, -0.5, 0.125, 2.675, 1.005, 1e-7, 1e16, 1e22, 5e-324,
                         -0.0, 2.0**53, 1 / 3, 1.5e300, 123456.5, True, False, 15, -35])
    if k == 4:
        return r.choice(NUMBER_TEXT)
    return r.uniform(-1, 1) * 10 ** r.randint(-30, 30)


def value(r, depth=0):
    k = r.randint(0, 8 if depth < 3 else 4)
    if k in (0, 4):
        return text(r)
    if k == 1:
        return number(r) if r.random() < 0.5 else r.randint(-10**6, 10**6)
    if k == 2:
        v = number(r)
        return v if not isinstance(v, str) else 0.25
    if k == 3:
        return r.choice([True, False, None])
    if k in (5, 6):
        return [value(r, depth + 1) for _ in range(r.randint(0, 4))]
    return {text(r) or "k": value(r, depth + 1) for _ in range(r.randint(0, 4))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    r = random.Random(a.seed)
    _, compile_fn, producer = gen_reference.jinja_renderer()
    snippets = []
    for _ in range(a.count):
        if r.random() < 0.2:
            src, x = path_snippet(r)
        elif r.random() < 0.5:
            src, x = r.choice(VALUE_TEMPLATES), value(r)
        else:
            src, x = r.choice(NUMBER_TEMPLATES), number(r)
            if "%d" in src:
                src %= r.randint(-4, 12)
            if isinstance(x, str) and ("floor" in src or "ceil" in src):
                src = "{{ x|int }}"  # Jinja would repeat the text 10**precision times
        v = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False,
             "x": x}
        s = {"template": src, "vars": {"x": x}}
        snippets.append(gen_reference.with_outcome(
            s, lambda: compile_fn(src).render(**copy.deepcopy(v))))
    doc = {"producer": producer, "now": gen_reference.NOW.strftime("%Y-%m-%dT%H:%M:%S"),
           "templates": [], "snippets": snippets}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
