#!/usr/bin/env python3
"""Random texts for the tokenizer's differential fuzz (tools/fuzz/fuzz_tokenizer.sh):
a JSON list like corpus.json, the same for the same seed.

  fuzz_corpus.py --seed N --count K --kind mixed|unicode|long --out FILE

mixed:   words of many scripts, whitespace runs, punctuation, emoji sequences,
         special-token strings, combining marks, controls, digits, code, and
         random code points of the BMP and plane 1.
unicode: dense runs of code points assigned after Unicode 9.0
         (runtime/text/unicode_since9.inc), combining marks, Hangul,
         compatibility forms, ASCII and any plane.
long:    up to about 8,000 characters: runs of one character or cluster
         (whitespace, punctuation, digits, letters, marks, emoji, U+2581)
         hundreds to thousands long, words of hundreds of letters without a
         space, special-token strings cut short or run together, between
         pieces of mixed text; where a pre-tokenizer's, a BPE's or a cache's
         handling of long input would show.
"""
import argparse
import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = ["hello", "The", "world", "don't", "I'M", "we'll", "they've", "she'd", "it's", "you're",
         "x", "a" * 24, "café", "naïve", "Straße", "ﬁne", "İstanbul", "ǅ", "ΑΒΓ", "привет",
         "שלום", "مرحبا", "नमस्ते", "こんにちは", "你好世界", "안녕하세요", "ไทย",
         "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ω", "µ", "½", "²", "①", "٣٤٥", "१२३", "１２３", "ｶﾀｶﾅ"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00a0", "\u3000", "\u2028",
          "\u200b", "\u2003", "\x0b", "\x0c", "\r"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + \
    ["...", "--", "’", "“", "”", "«", "»", "—", "…", "¿", "¡", "、", "。", "！"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "✊🏿", "🤷‍♀️", "⭐", "🧑‍💻"]
SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
           "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "<think>",
           "<|reserved_special_token_5|>", "<|fim_prefix|>", "<mask>", "<sep>", "word"]
MARKS = ["e\u0301", "a\u0308\u0304", "\u0301", "n\u0303", "\u0915\u094d\u0937", "\u1100\u1161\u11a8"]
CONTROLS = ["\x00", "\x01", "\x1b", "\x7f", "\u0085", "\ufeff", "\ufffd", "\U0010fffd",
            "\U0001f9ff", "\ue000"]
CODE = ["def f(x):\n    return x**2\n", "int main(){return 0;}", "for (i=0;i<10;i++) {",
        "    if a == b:\n\t\tpass", "x->y = &z[3];", "#include <stdio.h>", "print('hi')  # c",
        "https://example.com/a?b=1&c=2"]


def mixed(r):
    cats = [(30, lambda: r.choice(WORDS)), (20, lambda: r.choice(SPACES)),
            (12, lambda: r.choice(PUNCT)), (4, lambda: r.choice(EMOJI)),
            (3, lambda: r.choice(SPECIAL)), (3, lambda: r.choice(MARKS)),
            (2, lambda: r.choice(CONTROLS)),
            (6, lambda: "".join(r.choice("0123456789") for _ in range(r.randint(1, 12)))),
            (3, lambda: r.choice(CODE)), (5, lambda: chr(r.randint(0x20, 0x2fff))),
            (2, lambda: chr(r.randint(0x10000, 0x1ffff))),
            (3, lambda: "".join(chr(r.randint(0x4e00, 0x9fff)) for _ in range(r.randint(1, 6))))]
    weights = [w for w, _ in cats]
    return "".join(r.choices(cats, weights)[0][1]() for _ in range(r.randint(1, 25)))


def long_runs(r):
    units = SPACES + PUNCT + EMOJI + MARKS + ["\u2581", "a", "Z", "9", "0", "é", "ж", "中", "ｱ",
                                              "\U0001d54f", "ab", "12", "'s", "<", "|>"]
    letters = ["abcdefghijklmnopqrstuvwxyz", "абвгдежзийклмнопрстуфхцчшщъыьэюя",
               "αβγδεζηθικλμνξοπρστυφχψω", "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
               "0123456789"]

    def piece():
        kind = r.randint(0, 5)
        if kind == 0:
            return r.choice(units) * r.randint(50, 1500)
        if kind == 1:
            alphabet = r.choice(letters)
            return "".join(r.choice(alphabet) for _ in range(r.randint(100, 1500)))
        if kind == 2:
            return "".join(r.choice(SPECIAL)[:r.randint(1, 30)] for _ in range(r.randint(2, 40)))
        if kind == 3:
            return (r.choice(WORDS) + r.choice(["", " ", "\n"])) * r.randint(20, 300)
        return mixed(r)
    text = ""
    for _ in range(r.randint(1, 6)):
        text += piece()
        if len(text) > 8000:
            break
    return text[:8000]


def since9_ranges():
    out = []
    for line in open(os.path.join(HERE, "..", "..", "runtime", "text", "unicode_since9.inc")):
        m = re.match(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)", line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16)))
    return out


def unicode_dense(r, since9):
    pools = [(30, since9),
             (20, [(0x300, 0x36f), (0x1ab0, 0x1aff), (0x1dc0, 0x1dff), (0x20d0, 0x20ff),
                   (0x591, 0x5c7), (0x64b, 0x65f)]),
             (5, [(0x1100, 0x11ff), (0xac00, 0xd7a3)]),
             (15, [(0xfb00, 0xfb4f), (0xff00, 0xffef), (0x3300, 0x33ff), (0x1f100, 0x1f2ff),
                   (0x2460, 0x24ff), (0x1d400, 0x1d7ff)]),
             (25, [(0x41, 0x5a), (0x61, 0x7a), (0x30, 0x39), (0x20, 0x20), (0x20, 0x20),
                   (0x2e, 0x2e)]),
             (8, [(0xc0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff)]),
             (3, [(0x10000, 0x10ffff)])]
    weights = [w for w, _ in pools]

    def pick():
        lo, hi = r.choice(r.choices(pools, weights)[0][1])
        c = r.randint(lo, hi)
        return "A" if 0xd800 <= c <= 0xdfff else chr(c)
    return "".join(pick() for _ in range(r.randint(1, 30)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--kind", choices=["mixed", "unicode", "long"], default="mixed")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    r = random.Random(a.seed)
    since9 = since9_ranges()
    make = {"mixed": lambda: mixed(r), "unicode": lambda: unicode_dense(r, since9),
            "long": lambda: long_runs(r)}[a.kind]
    texts = [make() for _ in range(a.count)]
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
