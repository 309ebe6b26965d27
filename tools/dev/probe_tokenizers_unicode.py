#!/usr/bin/env python3
"""Which Unicode version each part of Hugging Face tokenizers classifies by:
the versions runtime/text/unicode.h follows. Probes the installed
`tokenizers` with characters first assigned in each version; run it again
when tokenizers is upgraded, and regenerate the tables
(tools/dev/gen_unicode_added.sh) if a version moved.

  python3 probe_tokenizers_unicode.py LLAMA3_TOKENIZER_JSON SYNTHETIC_DIR
"""
import os
import sys
import unicodedata

import tokenizers
from tokenizers import Tokenizer

llama3 = Tokenizer.from_file(sys.argv[1])
syn = sys.argv[2]
digits = Tokenizer.from_file(os.path.join(syn, "digits_plain.json"))
gpt2 = Tokenizer.from_file(os.path.join(syn, "gpt2_style.json"))
nfkc = Tokenizer.from_file(os.path.join(syn, "sp_metaspace.json"))


def ids(t, s):
    return t.encode(s, add_special_tokens=False).ids


def onig_letter(cp):
    # Llama 3's pattern: with X a letter, "=Straße" is a piece of its own.
    tail = ids(llama3, "=Straße")
    return ids(llama3, chr(cp) + "=Straße")[-len(tail):] == tail


def rust_numeric(cp):
    # Digits splits X off "The" only when char::is_numeric(X).
    return ids(digits, chr(cp) + "The")[-2:] == ids(digits, "1The")[-2:]


def regex_word(cp):
    # <|im_start|> is single_word there: not matched after a \w character.
    return gpt2.token_to_id("<|im_start|>") not in ids(gpt2, chr(cp) + "<|im_start|>")


def normalizes(text):
    return ids(nfkc, text) == ids(nfkc, unicodedata.normalize("NFKC", text))


probes = {
    "Oniguruma \\p{L}": (onig_letter, [("14.0", 0x1E290), ("15.0", 0x11F04), ("15.1", 0x2EBF0),
                                       ("16.0", 0x10D4A), ("17.0", 0x10940)]),
    "regex crate \\w": (regex_word, [("14.0", 0x1E290), ("15.0", 0x11F04), ("16.0", 0x10D4A),
                                    ("17.0", 0x10940)]),
    "Rust char::is_numeric": (rust_numeric, [("14.0", 0x16AC1), ("15.0", 0x11F51),
                                             ("16.0", 0x10D41), ("17.0", 0x11DE1)]),
    # A compatibility form, or a mark whose combining class reorders it
    # after U+0323, first assigned in each version.
    "normalizers (NFKC)": (normalizes, [
        ("9.0", "a\u08d4\u0323"), ("10.0", "a\u1df6\u0323"), ("11.0", "a\u09fe\u0323"),
        ("12.0", "\U0001f16c"), ("12.1", "\u32ff"), ("13.0", "\U0001fbf0"),
        ("14.0", "\U00010781")]),
}
print(f"tokenizers {tokenizers.__version__}; Python's unicodedata {unicodedata.unidata_version}")
for name, (test, cases) in probes.items():
    known = [v for v, c in cases if test(c)]
    cells = " ".join(f"{v}:{'yes' if v in known else 'no'}" for v, _ in cases)
    newest = known[-1] if known and known == [v for v, _ in cases][:len(known)] else "?"
    print(f"{name:24} {cells}  -> Unicode {newest}")
