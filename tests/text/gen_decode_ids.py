#!/usr/bin/env python3
"""decode_ids.json for tests/text/decode_ids_test: the id sequences of
fuzz_ids.py decoded by Hugging Face tokenizers (Rust, Python bindings), with
and without special tokens, and streamed through its DecodeStream one id at
a time. Run where `tokenizers` is installed (tools/gpu/tokenizer_h200_stage.sh
stages it for the H200):

  python3 gen_decode_ids.py --ids ids.json --out decode_ids.json NAME=PATH ...

Each case: ids, decode, decode_skip, stream, stream_skip (one entry an id:
the new text, or null when step() gave None). When step() raises (its
InvalidPrefix), stream[_skip]_error_at holds that id's index and the stream
stops there.
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from tokenizers.decoders import DecodeStream  # noqa: E402


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def stream(tok, ids, skip):
    s = DecodeStream(skip_special_tokens=skip)
    pieces = []
    for i, id_ in enumerate(ids):
        try:
            pieces.append(s.step(tok, id_))
        except Exception:  # tokenizers raises its InvalidPrefix as Exception
            return pieces, i
    return pieces, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+", help="NAME=PATH")
    a = ap.parse_args()
    sequences = json.load(open(a.ids))
    out = {"oracle": f"tokenizers {tokenizers.__version__} (Python): decode, DecodeStream",
           "models": {}}
    errors = 0
    for m in a.models:
        name, path = m.split("=", 1)
        tok = Tokenizer.from_file(path)
        cases = []
        for ids in sequences[name]:
            c = {"ids": ids, "decode": tok.decode(ids, skip_special_tokens=False),
                 "decode_skip": tok.decode(ids, skip_special_tokens=True)}
            for skip, key in ((False, "stream"), (True, "stream_skip")):
                c[key], at = stream(tok, ids, skip)
                if at is not None:
                    c[key + "_error_at"] = at
                    errors += 1
            cases.append(c)
        out["models"][name] = {"tokenizer_sha256": sha256(path), "cases": cases}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")
    print(f"{a.out}: {sum(len(v) for v in sequences.values())} sequences, "
          f"{errors} streams raised")


if __name__ == "__main__":
    main()
