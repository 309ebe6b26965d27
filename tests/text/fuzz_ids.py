#!/usr/bin/env python3
"""Random token id sequences for the decode fuzz (tools/fuzz/fuzz_tokenizer.sh
--ids) and the committed decode reference (decode_ids.json): the same for the
same seed and tokenizer files.

  fuzz_ids.py --seed N --count K --out FILE NAME=tokenizer.json ...

Writes {"NAME": [[id, ...], ...], ...}. Encoding never produces most of these
sequences, which is the point: generated text is any sequence of ids. Drawn
from: any id of the vocabulary or the added tokens, ids past the vocabulary
(tokenizers skips them), special and other added tokens, byte tokens that
split a character (ByteLevel's one-byte tokens, SentencePiece's <0xNN>),
tokens that start with the metaspace or a ByteLevel space, and runs of
neighbouring ids.
"""
import argparse
import json
import random


def byte_level_chars():
    """GPT-2's bytes_to_unicode: the character ByteLevel writes for each byte."""
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def pools(path):
    tok = json.load(open(path, encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    added = [a["id"] for a in tok.get("added_tokens", [])]
    special = [a["id"] for a in tok.get("added_tokens", []) if a.get("special")]
    size = max(list(vocab.values()) + added + [0]) + 1
    chars = byte_level_chars()
    one_byte = [i for t, i in vocab.items() if len(t) == 1 and t in chars and chars[t] >= 0x80]
    fallback = [i for t, i in vocab.items() if len(t) == 6 and t.startswith("<0x") and t.endswith(">")]
    spaced = [i for t, i in vocab.items() if t[:1] in ("\u2581", "\u0120")]
    return {"size": size, "added": added or [0], "special": special or [0],
            "bytes": (one_byte + fallback) or [0], "spaced": spaced or [0]}


def sequence(r, p):
    n = r.choice([1, 2, 3, 5, 8, 16, 40])
    out = []
    while len(out) < n:
        k = r.random()
        if k < 0.35:
            out.append(r.randrange(p["size"]))
        elif k < 0.55:
            out.extend(r.choice(p["bytes"]) for _ in range(r.randint(1, 4)))
        elif k < 0.68:
            out.append(r.choice(p["special"]))
        elif k < 0.75:
            out.append(r.choice(p["added"]))
        elif k < 0.88:
            out.append(r.choice(p["spaced"]))
        elif k < 0.96:
            start = r.randrange(p["size"])
            out.extend(min(start + j, p["size"] - 1) for j in range(r.randint(2, 5)))
        else:
            out.append(p["size"] + r.randrange(1000))
    return out[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+", help="NAME=tokenizer.json")
    a = ap.parse_args()
    out = {}
    for m in a.models:
        name, path = m.split("=", 1)
        r = random.Random(f"{a.seed}:{name}")
        p = pools(path)
        out[name] = [sequence(r, p) for _ in range(a.count)]
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
