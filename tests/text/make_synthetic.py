#!/usr/bin/env python3
"""Writes synthetic/*.json: small tokenizer.json files of our own that use
the options the real files (Llama 3, Qwen3, Llama 2) do not: lstrip, rstrip,
single_word and normalized added tokens, every Split behaviour and invert,
Digits, Metaspace (first / always, split), unk and fuse_unk without byte
fallback, NFKC/NFD/NFKD/Strip/Replace normalizers, Bert-style
post-processing, and \p{..} spelled every way Oniguruma takes it.

Vocabularies are trained here with a tiny deterministic BPE on corpus.json,
so the files are reproducible: python3 make_synthetic.py
"""
import json
import os
import re
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
corpus = json.load(open(os.path.join(HERE, "corpus.json"), encoding="utf-8"))


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train(words, alphabet, n_merges):
    """Classic BPE: repeatedly merge the most frequent pair (ties by text)."""
    vocab = {s: i for i, s in enumerate(alphabet)}
    seqs = Counter(tuple(w) for w in words if w)
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for seq, c in seqs.items():
            for a, b in zip(seq, seq[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append([a, b])
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
        new = Counter()
        for seq, c in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            new[tuple(out)] += c
        seqs = new
    return vocab, merges


def added(id_, content, special=True, lstrip=False, rstrip=False, normalized=False,
          single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def write(name, doc):
    with open(os.path.join(HERE, "synthetic", name + ".json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


# 1. GPT-2 style byte-level BPE with added-token options.
b2u = bytes_to_unicode()
gpt2_re = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+""")
words = []
for t in corpus:
    for w in gpt2_re.findall(" " + t):
        words.append([b2u[b] for b in w.encode("utf-8")])
alphabet = [b2u[b] for b in range(256)]
vocab, merges = train(words, alphabet, 400)
n = len(vocab)
write("gpt2_style", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [
        added(n, "<|bos|>"), added(n + 1, "<|eos|>"),
        added(n + 2, "<mask>", lstrip=True), added(n + 3, "<sep>", rstrip=True),
        added(n + 4, "<both>", lstrip=True, rstrip=True),
        added(n + 5, "word", special=False, single_word=True, normalized=True),
        added(n + 6, "world", special=False, normalized=True),
        added(n + 7, "<s>", special=False),
        added(n + 8, "<|im_start|>", special=True, lstrip=True, single_word=True),
    ],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                      "use_regex": True},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}},
                                  {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "<|eos|>", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [n], "tokens": ["<|bos|>"]},
                                          "<|eos|>": {"id": "<|eos|>", "ids": [n + 1], "tokens": ["<|eos|>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": False, "vocab": vocab, "merges": merges},
})

# 2. SentencePiece style with the Metaspace pre-tokenizer (prepend "first",
#    no split), byte fallback, NFKC, and a Metaspace decoder.
sp_words = []
for t in corpus:
    s = "▁" + t.replace(" ", "▁")
    sp_words.append(list(s))
chars = sorted({c for t in corpus for c in t if c.isascii() and c.isprintable() and c != " "})
alphabet = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁"] + chars + \
    ["é", "中", "😀"]
vocab, merges = train([[c for c in w if c in set(alphabet)] for w in sp_words], alphabet, 300)
write("sp_metaspace", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>"),
                     added(len(vocab), "<tool>", special=False, lstrip=True, rstrip=True)],
    "normalizer": {"type": "NFKC"},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                      "split": False},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                  {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
        {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
              "ignore_merges": False, "vocab": vocab, "merges": merges},
})

# 3. Metaspace "always" with split, unk without byte fallback and without
#    fuse_unk, NFD + Strip + Replace normalizers, a Bert-style post-processor.
write("sp_unk_split", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}]},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                      "split": True},
    "post_processor": {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "vocab": vocab, "merges": [" ".join(m) for m in merges]},
})

# 4. Every Split behaviour, invert, Digits, a String pattern, and decoders
#    Replace / Strip over byte-level tokens.
vocab_b, merges_b = train(words, [b2u[b] for b in range(256)], 200)
write("split_behaviors", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [added(len(vocab_b), "<|endoftext|>")],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "\r\n"}, "content": "\n"},
        {"type": "Prepend", "prepend": "^"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "MergedWithPrevious", "invert": False},
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"Regex": "[aeiou]+"}, "behavior": "Contiguous", "invert": True},
        {"type": "Split", "pattern": {"String": "x"}, "behavior": "Removed", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\p{P}"}, "behavior": "Isolated", "invert": False},
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
    "post_processor": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        {"type": "TemplateProcessing",
         "single": [{"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [len(vocab_b)],
                                              "tokens": ["<|endoftext|>"]}}}]},
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        {"type": "Replace", "pattern": {"String": "^"}, "content": ""},
        {"type": "Strip", "content": "\n", "start": 2, "stop": 0}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": True, "vocab": vocab_b, "merges": merges_b},
})

# 5. Digits grouped (Contiguous) with NFKC and no decoder (tokens joined
#    with spaces), no post-processor.
write("digits_plain", {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": {"type": "NFKC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}]},
    "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "vocab": vocab_b, "merges": merges_b},
})

# 6. Unicode general categories spelled every way (\p{Lo}, \pN, \p{^L},
#    \P{Ll}) with NFKD: what runtime/text/unicode.h widens to Unicode 16.0.
write("unicode_classes", {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": {"type": "NFKD"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{Lo}+|\\pN+|\\p{^L}+"}, "behavior": "Isolated",
         "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\P{Ll}"}, "behavior": "MergedWithNext",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                "use_regex": False},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "vocab": vocab_b, "merges": merges_b},
})
