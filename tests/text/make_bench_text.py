#!/usr/bin/env python3
"""Writes a deterministic mixed-language text of at least --mb megabytes for
the tokenizer benchmark: corpus.json's texts in pseudo-random order, mixed
with pseudo-random words in Latin, Cyrillic, CJK, Arabic and Devanagari
script, numbers, code-like lines, whitespace runs and CRLF, so that a word
cache cannot hide the BPE merge loop.

python3 make_bench_text.py --mb 12 --out bench.txt
"""
import argparse
import json
import os

ap = argparse.ArgumentParser()
ap.add_argument("--mb", type=float, default=12)
ap.add_argument("--out", required=True)
args = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
corpus = [t for t in json.load(open(os.path.join(here, "corpus.json"), encoding="utf-8"))
          if "<" not in t and "\x00" not in t]

state = 2024


def rnd(n):
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (state >> 33) % n


scripts = [
    ("abcdefghijklmnopqrstuvwxyz", 12), ("абвгдежзийклмнопрстуфхцчшщыэюя", 3),
    ("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", 4),
    ("ابتثجحخدذرزسشصضطظعغفقكلمنهوي", 2), ("कखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह", 2),
]
total = sum(w for _, w in scripts)


def word():
    r = rnd(total)
    for alphabet, w in scripts:
        if r < w:
            return "".join(alphabet[rnd(len(alphabet))] for _ in range(1 + rnd(9)))
        r -= w
    return ""


target = int(args.mb * 1e6)
parts, size = [], 0
while size < target:
    k = rnd(10)
    if k < 4:
        s = corpus[rnd(len(corpus))]
    elif k < 8:
        s = " ".join(word() for _ in range(3 + rnd(12))) + [".", ",", "!", "?", ""][rnd(5)]
    elif k == 8:
        s = "x%d = f(%d, '%s')  # %d" % (rnd(1000), rnd(100000), word(), rnd(10 ** 9))
    else:
        s = [" " * (1 + rnd(8)), "\r\n", "\n\n", "\t", "  \n"][rnd(5)]
    s += ["\n", " ", "\r\n", "  ", ""][rnd(5)]
    parts.append(s)
    size += len(s.encode("utf-8"))
with open(args.out, "w", encoding="utf-8", newline="") as f:
    f.write("".join(parts))
print("%s: %d bytes" % (args.out, size))
